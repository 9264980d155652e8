"""Unit tests of helpers/runtime/recap.py: the map's declarations against the chapters, and its machinery."""
import json
import math
import re

import pytest
import torch

from helpers.runtime import recap
from helpers.runtime.recap import MAP, Gathered, Live

PUBLISHED = {item.chapter for item in MAP if recap.canonical_record(item.chapter) is not None}


def _declared_in_source(text: str, name: str) -> bool:
    """A figure is declared where its chapter records it (figure/replay) or cites its glue in prose."""
    q = re.escape(name)
    return bool(re.search(rf'helpers\.(figure|replay)\(\s*"{q}"', text) or re.search(rf"\{{glue:text\}}`{q}[:`]", text))


@pytest.mark.parametrize("item", MAP, ids=lambda i: f"{i.chapter}-{i.figure}")
def test_every_declared_figure_exists_in_its_chapter_source(item):
    text = recap.source_text(item.chapter)
    assert text is not None, f"no sources/{item.chapter}_*.md"
    assert _declared_in_source(text, item.figure), f"{item.chapter} records no figure {item.figure!r}: renamed?"
    if item.series:
        assert re.search(rf'"{re.escape(item.series)}"', text) and "helpers.reference(" in text, \
            f"{item.chapter} glues no series value {item.series!r}"


@pytest.mark.parametrize("item", [i for i in MAP if i.chapter in PUBLISHED], ids=lambda i: f"{i.chapter}-{i.figure}")
def test_a_published_chapter_has_every_declared_figure_in_its_record_and_its_series_value(item):
    record = recap.canonical_record(item.chapter)
    assert item.figure in record["figures"], f"{item.chapter}'s record has no {item.figure!r}"
    if item.series:
        assert recap.series_value(item.chapter, item.series) is not None


def test_declarations_are_unique_and_well_formed():
    names = [i.glue_name for i in MAP]
    assert len(names) == len(set(names))
    labels = [i.label for i in MAP]
    assert len(labels) == len(set(labels)), "exercise 30.1 looks figures up by label"
    assert {i.role for i in MAP} == set(recap.ROLES)
    with pytest.raises(ValueError):
        Gathered("ch02", "speedup", "quick", None, "x")
    with pytest.raises(ValueError):
        Gathered("2", "speedup", "fast", None, "x")


def test_reference_calls_reads_literal_calls_and_leaves_computed_ones_out():
    src = ('```{code-cell} ipython3\n:tags: [hide-input]\n\n%pip install x\n'
           'helpers.reference("series_a", 6.12, "×", source="Day 2", on="l40s")\n'
           'helpers.reference("series_b", True, source="Day 2")\n'
           'helpers.reference(name, 3, "ms", source="loop")\n'
           'helpers.reference("series_c", A * 2, "ms", source="computed")\n```\n')
    assert recap.reference_calls(src) == {"series_a": (6.12, "×", "l40s", True), "series_b": (True, "", None, True),
                                          "series_c": (None, "ms", None, False)}


def test_series_values_come_from_the_published_notebook_or_the_source():
    # ch02 is published: its series_first_call_s is computed in the source, glued in the notebook
    assert recap.series_value("ch02", "series_first_call_s")[0] == pytest.approx(1.5929)
    assert recap.series_value("ch02", "series_speedup") == (6.12, "×", "l40s")  # its machine, from the source
    assert recap.series_value("ch24", "series_cold_s")[2] == "laptop"
    assert recap.series_value("ch02", "no_such_reference") is None
    assert recap.series_value("ch02", None) is None


def test_gather_marks_chapters_without_a_record_as_awaiting(tmp_path):
    (tmp_path / "ch02.json").write_text(json.dumps({
        "chapter": "ch02", "verified": "2026-01-01", "env": {"device_name": "GPU X", "torch": "2.11"},
        "figures": {"speedup": {"value": 3.5, "unit": "×", "status": "pass", "rule": "sm90: 3..4.3"}}}))
    items = [Gathered("ch02", "speedup", "fast", "series_speedup", "fused speedup"),
             Gathered("ch99", "anything", "slow", None, "a chapter not published")]
    rows = recap.gather(items, glue=False, canonical_dir=tmp_path)
    assert rows[0].value == 3.5 and not rows[0].awaiting and rows[0].run["device"] == "GPU X"
    assert rows[0].book_over_series == pytest.approx(3.5 / 6.12)
    assert rows[1].awaiting and rows[1].value is None and rows[1].book_over_series is None
    text = recap.map_markdown(rows)
    assert "{doc}`2 <ch02_four_stations>`" in text and recap.AWAITING in text and "GPU X" in text
    assert recap.summary(rows)["awaiting_chapters"] == ["ch99"]


def test_gather_refuses_a_published_record_that_lost_a_declared_figure(tmp_path):
    (tmp_path / "ch02.json").write_text(json.dumps({"chapter": "ch02", "env": {}, "figures": {}}))
    with pytest.raises(KeyError, match="renamed"):
        recap.gather([Gathered("ch02", "speedup", "fast", None, "x")], glue=False, canonical_dir=tmp_path)


def test_dashboard_compares_counts_exactly_and_ratios_by_direction(tmp_path):
    (tmp_path / "ch10.json").write_text(json.dumps({"chapter": "ch10", "env": {}, "figures": {
        "big_graphs": {"value": 3, "unit": "graphs", "status": "pass", "rule": "== 3"},
        "ratio": {"value": 4.0, "unit": "×", "status": "pass", "rule": "band"}}}))
    lives = [Live("graphs", "slow", "ch10", "big_graphs", 3, "graphs"),
             Live("graphs, wrong", "slow", "ch10", "big_graphs", 2, "graphs"),
             Live("ratio", "fast", "ch10", "ratio", 1.5, "×", kind="direction"),
             Live("ratio, other side", "fast", "ch10", "ratio", 0.8, "×", kind="direction"),
             Live("pending", "fix", "ch98", "x", 1)]
    got = recap.dashboard(lives, canonical_dir=tmp_path)
    assert [live.agrees(book) for live, book, _ in got] == [True, False, True, False, None]
    assert got[-1][2] == recap.AWAITING
    assert "direction only" in recap.dashboard_markdown(got)


def test_drill_counts_see_the_break_the_recompiles_and_the_mutation():
    state = {"step": 0}

    def helper(t):
        print("planted")
        return t * 2

    def model(x):
        x.add_(1)
        return helper(x) + state["step"]

    compiled = torch.compile(model, backend="eager")

    def run(x, i):
        state["step"] = i
        return compiled(x)

    c = recap.drill_counts(run, lambda: torch.randn(4, 4), lambda x, i: (x + 1) * 2 + i, steps=3)
    assert c.breaks == 2 and c.graphs_first_call == 3
    assert not c.input_unchanged and c.right
    fixed = torch.compile(lambda x, s: (x + 1) * 2 + s, backend="eager")
    f = recap.drill_counts(lambda x, i: fixed(x, torch.tensor(float(i))), lambda: torch.randn(4, 4),
                           lambda x, i: (x + 1) * 2 + i, steps=3)
    assert (f.breaks, f.graphs_over_steps, f.recompiles, f.input_unchanged, f.right) == (0, 1, 0, True, True)
    assert recap.drill_counts(None, None, None) is None


def test_the_break_even_check_runs_the_readers_function():
    def right(compile_s, eager_s, compiled_s, recompiles):
        saving = eager_s - compiled_s
        return math.ceil((1 + recompiles) * compile_s / saving) if saving > 0 else math.inf

    def forgets_recompiles(compile_s, eager_s, compiled_s, recompiles):
        return right(compile_s, eager_s, compiled_s, 0)

    def raises(*args):
        raise ZeroDivisionError("no")

    assert recap.break_even_right(recap.break_even_check(right)) is True
    assert recap.break_even_right(recap.break_even_check(forgets_recompiles)) is False
    assert recap.break_even_right(recap.break_even_check(raises)) is False
    assert recap.break_even_right(recap.break_even_check(None)) is None

    class AlwaysEqual(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    assert recap.break_even_right(recap.break_even_check(lambda *args: AlwaysEqual(0))) is False


def test_the_series_values_come_from_the_records_where_only_they_ship(monkeypatch):
    """A pip-installed course (Colab) has helpers/canonical/*.json but no notebooks or text sources."""
    from helpers.runtime import recap

    monkeypatch.setattr(recap, "notebook_references", lambda chapter: {})
    monkeypatch.setattr(recap, "source_text", lambda chapter: None)
    assert recap.series_value("ch25", "series_ro_vs_eager_b8")[0] == 9.45
    assert recap.series_value("ch25", "no_such_reference") is None


def test_a_laptop_cpu_time_beside_a_gpu_time_is_marked_and_left_out_of_the_picture():
    from helpers.runtime.recap import Row, map_markdown, ratio_points

    run = {"device": "NVIDIA H200", "torch": "2.11", "verified": "2026-01-01", "kind": "cuda"}
    cold = Row(Gathered("ch24", "cold_first_s", "slow", "series_cold_s", "cold first call", ".2f"),
               value=2.5, unit="s", status="record", rule="record only", series=(3.75, "s", "laptop"), run=run)
    count = Row(Gathered("ch10", "f_graphs", "slow", "series_f_graphs", "graphs", "d"),
                value=2, unit="graphs", status="pass", rule="== 2", series=(2, "graphs", "l40s"), run=run)
    host = Row(Gathered("ch16", "fake_big_ms", "slow", "series_fake_big_ms", "fake matmul", ".3f"), value=0.14,
               unit="ms", status="record", rule="record only", series=(0.48, "ms", "laptop"), run=run, on="cpu")
    assert not cold.like_for_like and count.like_for_like and not host.like_for_like
    text = map_markdown([cold, count, host])
    assert "3.75 s (macOS laptop CPU) †" in text and "2 graphs (NVIDIA L40S) |" in text and "† Not a like-for-like" in text
    assert "awaiting" not in text   # nothing awaits: no sentence about rows that fill in
    assert {p.figures[0] for p in ratio_points([cold, count, host])} == {"f_graphs"}


@pytest.mark.parametrize("item", recap.QUOTED, ids=lambda i: f"quoted-{i.chapter}-{i.figure}")
def test_every_quoted_figure_exists_in_its_chapter_source(item):
    text = recap.source_text(item.chapter)
    assert text is not None and _declared_in_source(text, item.figure), f"{item.chapter} records no {item.figure!r}"


def test_quoted_figures_a_published_record_lacks_come_back_as_none(tmp_path):
    (tmp_path / "ch25.json").write_text(json.dumps({"figures": {}, "env": {}, "verified": "x"}))
    rows = recap.gather(recap.QUOTED, glue=False, canonical_dir=tmp_path, optional=True)
    assert all(r.awaiting for r in rows) and recap.value(rows, "ch25", "keep_eager_kernel") is None
    with pytest.raises(KeyError):
        recap.gather(recap.QUOTED, glue=False, canonical_dir=tmp_path)


def test_the_fix_table_holds_chapter_25s_measured_cures_not_its_diagnosis():
    fix25 = {i.figure for i in MAP if i.chapter == "ch25" and i.role == "fix"}
    assert {"ro_keep_vs_ro", "cublaslt_ro_vs_ro"} <= fix25          # each cure against reduce-overhead with cuBLAS
    assert not fix25 & {"keep_same_kernel", "keep_eager_kernel", "cublaslt_ro_vs_eager"}   # no flags, no eager-based ratio
    assert not {i.figure for i in recap.QUOTED} & fix25               # one glue name each
