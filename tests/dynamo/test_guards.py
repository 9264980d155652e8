"""Unit tests of helpers/dynamo/guards.py."""
import pytest
import torch

from helpers.core.private import private
from helpers.dynamo.config import dynamo_config
from helpers.dynamo.guards import (
    GuardCensus,
    RecompileLog,
    ambient_guards,
    check_entries,
    entry_ids,
    frame_locals,
    gap_words,
    guard_census,
    guard_builder_source,
    guard_check_time,
    guard_checker,
    guard_latency_log,
    guard_leaves,
    guard_subject,
    guard_tree,
    id_matched_locals,
    key_phrase,
    noop_guard_kinds,
    overhead_split,
    recompile_log,
    show_tree,
    tensor_layout,
)
from helpers.dynamo.state import cache_entries, clear_compile_state

SCALE = 1.0


def make(k):
    def f(x, n):
        return x * n * k + SCALE
    return f


@pytest.fixture
def f():
    clear_compile_state()
    fn = make(2)
    torch.compile(fn, backend="eager")(torch.randn(4, 4), 3)
    return fn


def test_noop_guard_kinds_are_the_ones_whose_builder_is_pass():
    kinds = ["TENSOR_MATCH", "GRAD_MODE", "GLOBAL_STATE", "DETERMINISTIC_ALGORITHMS", "GRAD_MODE", "NO_SUCH_KIND"]
    assert noop_guard_kinds(kinds) == ["GRAD_MODE", "DETERMINISTIC_ALGORITHMS"]


def test_cache_entries_tree_and_leaves(f):
    assert entry_ids(f) == ["0/0"] or len(entry_ids(f)) == 1
    assert len(entry_ids(f)) == len(cache_entries(f))
    tree = guard_tree(f)
    assert "RootGuardManager" in tree and "TENSOR_MATCH" in tree
    leaves = dict((check, kind) for kind, check in guard_leaves(f))
    assert leaves["L['n'] == 3"] == "EQUALS_MATCH"
    assert leaves["L['k'] == 2"] == "EQUALS_MATCH"
    assert leaves["G['SCALE'] == 1.0"] == "EQUALS_MATCH"
    kinds = [kind for kind, _ in guard_leaves(f, drop=("DIMENSION_DYNAMIC_MARKING_GUARD",))]
    assert "DIMENSION_DYNAMIC_MARKING_GUARD" not in kinds and "TENSOR_MATCH" in kinds


def test_guard_tree_needs_a_compiled_call():
    clear_compile_state()
    with pytest.raises(ValueError, match="no cache entry"):
        guard_tree(make(5))


def test_show_tree_trims_and_notes_what_it_cut(f):
    text = show_tree(f, width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    marked = "DIMENSION_DYNAMIC_MARKING_GUARD" in guard_tree(f)  # torch 2.13 prints them, 2.11 does not
    assert ("DIMENSION_DYNAMIC_MARKING_GUARD lines left out" in text) == marked
    assert "tag_safe" not in text and "# " not in text


def test_frame_locals_binds_arguments_defaults_and_closure():
    fn = make(7)
    assert frame_locals(fn, "x", 3) == {"x": "x", "n": 3, "k": 7}

    def g(a, b=4, *rest):
        return a
    assert frame_locals(g, 1) == {"a": 1, "b": 4, "rest": ()}

    class M:
        def m(self, v):
            return v
    obj = M()
    assert frame_locals(obj.m, 5) == {"self": obj, "v": 5}


def test_check_entries_names_the_failing_guard(f):
    x = torch.randn(4, 4)
    assert [v.passed for v in check_entries(f, x, 3)] == [True]
    (bad,) = check_entries(f, x.double(), 3)
    assert not bad.passed and "dtype mismatch" in bad.reason and "expected Float, actual Double" in bad.reason
    assert "L[" not in bad.reason  # cleaned
    (bad_n,) = check_entries(f, x, 4)
    assert not bad_n.passed and bad_n.reason.startswith("n == 3")
    with torch.no_grad():
        (bad_grad,) = check_entries(f, x, 3)
    assert "grad_mode" in bad_grad.reason


def test_guard_check_time_is_positive_and_rejects_wrong_args(f):
    t = guard_check_time(f, torch.randn(4, 4), 3, repeats=3)
    assert 0 < t.median < 1e-3
    with pytest.raises(ValueError, match="reject"):
        guard_check_time(f, torch.randn(4, 4), 9, repeats=3)


def test_recompile_log_counts_and_reasons_without_touching_stderr(capsys):
    clear_compile_state()
    fn = make(2)
    cf = torch.compile(fn, backend="eager")
    x = torch.randn(4, 4)
    cf(x, 3)
    with recompile_log() as log:
        cf(x, 3)                  # reused
        cf(x.double(), 3)         # dtype
        cf(x, 4)                  # n, tried against two entries
    assert log.count == 2
    assert "dtype mismatch" in log.first_reason(0)
    assert len(log.reasons(1)) == 2 and all(r.endswith("n == 3") for r in log.reasons(1))
    assert log.reasons(1)[0].startswith("0/1: ")
    assert not log.limit_hit
    assert "Recompiling" not in capsys.readouterr().err
    # the artifact is switched off again afterwards
    log_state = private("torch._logging._internal.log_state")
    assert not log_state.is_artifact_enabled("recompiles")


def test_recompile_log_empty_and_limit_warning():
    assert RecompileLog().reasons() == [] and RecompileLog().first_reason() == ""

    def h(x, n):
        return x * n
    clear_compile_state()
    with dynamo_config(recompile_limit=2), recompile_log() as log:
        ch = torch.compile(h, backend="eager", dynamic=False)
        for n in range(4):
            ch(torch.ones(2), n)
    # n=1 recompiles; n=2 is logged as a recompilation, then refused by the limit; n=3 is not logged
    assert log.count == 2 and log.limit_hit


def test_guard_latency_log_collects_one_value_per_compile():
    clear_compile_state()
    with guard_latency_log() as values:
        torch.compile(make(3), backend="eager")(torch.randn(2), 1)
    assert len(values) == 1 and values[0] > 0


def test_key_phrase_keeps_the_phrase_and_reports_a_rewording_in_full():
    reason = "tensor 'x' size mismatch at index 0. expected 4, actual 8"
    assert key_phrase(reason, "size mismatch at index 0. expected 4, actual 8") == \
        "size mismatch at index 0. expected 4, actual 8"
    assert key_phrase("tensor 'x' has another shape", "size mismatch") == "tensor 'x' has another shape"


def test_guard_subject_and_tensor_layout_read_leaf_checks(f):
    leaves = guard_leaves(f)
    tensor = next(check for kind, check in leaves if kind == "TENSOR_MATCH")
    assert guard_subject(tensor) == "L['x']"
    assert tensor_layout(tensor) == "size=[4, 4], stride=[4, 1]"
    assert guard_subject("___check_type_id(L['items'], 140), type=<class 'list'>") == "L['items']"
    assert guard_subject("___check_obj_id(G['helper'].__code__, 1405)") == "G['helper'].__code__"
    assert guard_subject("L['n'] == 3") == "L['n'] == 3" and tensor_layout("L['n'] == 3") == ""


def test_guard_checker_accepts_the_traced_call_and_rejects_others(f):
    check = guard_checker(f)
    x = torch.randn(4, 4)
    assert check(frame_locals(f, x, 3)) and not check(frame_locals(f, x, 4))
    clear_compile_state()
    with pytest.raises(ValueError, match="no cache entry"):
        guard_checker(make(9))


def test_overhead_split_times_guard_eager_and_compiled_side_by_side():
    clear_compile_state()
    fn = make(2)
    compiled = torch.compile(fn, backend="eager")
    x = torch.randn(4, 4)
    compiled(x, 3)
    split = overhead_split(fn, compiled, x, 3, rounds=4, target=0.001)
    assert 0 < split.guard_us < 1e3 and 0 < split.eager_us < 1e4 and split.compiled_us > 0
    assert split.overhead_us == pytest.approx(split.compiled_us - split.eager_us)
    assert split.rounds <= 4 and (split.share > 0 or split.rounds == 0)
    with pytest.raises(ValueError, match="reject"):
        overhead_split(fn, compiled, x, 4, rounds=1)


def test_ambient_guards_reads_the_declarations_and_the_no_ops():
    amb = ambient_guards()
    assert {"GRAD_MODE", "GLOBAL_STATE", "DEFAULT_DEVICE"} <= set(amb.declared)
    assert "GRAD_MODE" in amb.no_ops and "GLOBAL_STATE" not in amb.no_ops
    assert "grad_mode" in amb.global_state_fields
    assert "pass" in guard_builder_source("GRAD_MODE")
    assert "def GLOBAL_STATE" in guard_builder_source("GLOBAL_STATE")


def g_branch(x):
    if x.sum() > 0:
        return x * 2
    return x + 1


def f_print(x):
    x = x * 2
    print("mid")
    return x + 1


def test_guard_census_adds_up_declared_guards_and_runtime_leaves():
    c = guard_census(g_branch, torch.ones(4))
    assert c.graphs == 2 and c.total == sum(c.declared.values())
    assert "TENSOR_MATCH" in c.per_graph and "GLOBAL_STATE" in c.per_graph and c.extras == {}
    assert c.total == c.graphs * len(c.per_graph)            # every kind once per graph, nothing else
    assert set(c.ambient) <= set(c.per_graph) and "TENSOR_MATCH" not in c.ambient
    assert c.without("GLOBAL_STATE") == c.total - c.graphs
    assert [name for name, _ in c.leaves][0] == "g_branch" and len(c.leaves) == 2
    assert c.total_leaves == sum(n for _, n in c.leaves) and all(n > 0 for _, n in c.leaves)


def test_guard_census_names_the_guard_on_a_global_and_swallows_prints(capsys):
    c = guard_census(f_print, torch.ones(4))
    assert c.extras == {"BUILTIN_MATCH": 1} and c.total == c.graphs * len(c.per_graph) + 1
    assert "mid" not in capsys.readouterr().out


def test_guard_census_dataclass_properties():
    c = GuardCensus(2, {"A": 2, "B": 2, "C": 1}, ["A"], [("f", 3), ("r", 4)])
    assert (c.total, c.per_graph, c.extras, c.without("A", "C"), c.total_leaves) == (5, ["A", "B"], {"C": 1}, 2, 7)


def test_id_matched_locals_of_a_plain_function_is_empty(f):
    assert len(cache_entries(f)) == 1 and id_matched_locals(f) == []


def test_id_matched_locals_reads_the_entries_id_matched_objs(monkeypatch):
    import types

    import helpers.dynamo.guards as guards

    entries = [types.SimpleNamespace(guard_manager=types.SimpleNamespace(id_matched_objs={"self": 1})),
               types.SimpleNamespace(guard_manager=types.SimpleNamespace(id_matched_objs={"mod": 2, "self": 1})),
               types.SimpleNamespace(guard_manager=types.SimpleNamespace())]
    monkeypatch.setattr(guards, "cache_entries", lambda fn: entries)
    assert id_matched_locals(None) == ["mod", "self"]


def test_gap_words():
    assert gap_words(15, 15) == "exactly the series' count"
    assert gap_words(14, 15) == "one fewer than the series' count"
    assert gap_words(17, 15, "the book's") == "2 more than the book's count"
