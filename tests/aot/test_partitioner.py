"""helpers.aot.partitioner (chapter 15): partitions, saved bytes, budgets, the hand-built min cut."""
from __future__ import annotations

import math

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from helpers.aot import partitioner as P


def f(x, w):
    return torch.tanh(x @ w).sum()


@pytest.fixture(scope="module")
def xw():
    torch.manual_seed(0)
    return torch.randn(8, 8), torch.randn(8, 8, requires_grad=True)


@pytest.fixture(scope="module")
def min_cut(xw):
    return P.partition(f, *xw)


def test_min_cut_saves_mm_and_recomputes_tanh(min_cut):
    assert min_cut.saved_names == ["mm", "permute"]
    assert min_cut.recomputed == ["tanh"]
    assert min_cut.outputs("forward") == ["sum_1", "mm", "permute"]
    assert min_cut.outputs("joint") == ["sum_1", "None", "mm_1"]
    assert [n for n in min_cut.placeholders("backward") if not n.startswith("tangents")] == ["mm", "permute"]


def test_saved_bytes_count_new_storage_only(min_cut):
    by_name = {s.name: s for s in min_cut.saved}
    assert by_name["mm"].nbytes == 8 * 8 * 4 and by_name["mm"].new_storage
    assert not by_name["permute"].new_storage  # a view of the input x
    assert min_cut.saved_bytes == 256
    assert min_cut.saved_bytes_all == 512
    assert min_cut.input_bytes == 512  # x and w


def test_default_partition_saves_what_eager_keeps(xw):
    d = P.partition(f, *xw, partitioner="default")
    assert d.saved_names == ["primals_1", "alias"]
    assert d.recomputed == []
    with pytest.raises(ValueError):
        P.partitioner_fn("nope")


def test_checkpoint_saves_inputs_only(xw):
    def g(x, w):
        return checkpoint(lambda a: torch.tanh(a @ w).sum(), x, use_reentrant=False)

    c = P.partition(g, *xw)
    assert c.saved_bytes == 0
    assert c.recomputed == ["mm", "tanh"]


def test_partition_without_call_has_no_graphs(xw):
    assert P.partition(f, *xw, call=False).forward is None


def test_memory_budget_is_scoped():
    before = P.budget_setting()
    with P.memory_budget(0.25):
        assert P.budget_setting() == 0.25
    assert P.budget_setting() == before
    with P.memory_budget(None):
        assert P.budget_setting() == before


@pytest.fixture(scope="module")
def mlp_parts():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.Linear(16, 16), torch.nn.GELU())
    x = torch.randn(64, 16)  # activations larger than the weights, so min cut saves more than the inputs
    loss = lambda x: mlp(x).sum()  # noqa: E731
    return mlp, x, {b: P.partition(loss, x, budget=b) for b in (0.0, 1.0)}


def test_budget_zero_saves_nothing_new_and_ratio_bounds(mlp_parts):
    mlp, x, parts = mlp_parts
    assert parts[0.0].saved_bytes == 0
    assert parts[1.0].saved_bytes > 0
    assert P.budget_ratio(parts[1.0], parts[1.0]) == pytest.approx(1.0)
    assert P.budget_ratio(parts[0.0], parts[1.0]) <= 0.0 + 1e-9
    assert len(parts[0.0].recomputed) > len(parts[1.0].recomputed)


def test_held_bytes_match_the_graphs(mlp_parts):
    mlp, x, parts = mlp_parts
    for part in parts.values():
        out = part.compiled(x)
        assert P.held_bytes(out, [x, *mlp.parameters()]) == part.saved_bytes
    with pytest.raises(ValueError):
        P.held_bytes((x * 2).requires_grad_().sum() * 1, [])


def test_live_bytes_counts_outputs_until_last_use(mlp_parts):
    _, _, parts = mlp_parts
    peak, trace = P.live_bytes(parts[1.0].forward)
    assert peak == max(trace) > 0
    assert trace[-1] <= peak
    # the forward at budget 1 ends holding at least what it saves
    assert peak >= parts[1.0].saved_bytes


def test_live_bytes_frees_saved_tensors_after_last_use(mlp_parts):
    _, _, parts = mlp_parts
    part = parts[1.0]
    plain_peak, plain = P.live_bytes(part.backward)
    peak, trace = P.live_bytes(part.backward, saved=part.saved)
    # alive when the backward starts, never more than "kept to the end", and all freed by the end
    assert part.saved_bytes <= peak <= part.saved_bytes + plain_peak
    assert trace[-1] == plain[-1]
    assert P.live_bytes(parts[0.0].backward, saved=parts[0.0].saved) == P.live_bytes(parts[0.0].backward)


def test_hand_min_cut_follows_capacities():
    network = dict(edges=[("x", "mm"), ("mm", "tanh")], sources=["x", "mm"], sinks=["tanh"])
    value, saved = P.hand_min_cut({"x": math.inf, "mm": 10, "tanh": 20}, **network)
    assert (value, saved) == (10, ["mm"])
    value, saved = P.hand_min_cut({"x": math.inf, "mm": 30, "tanh": 20}, **network)
    assert (value, saved) == (20, ["tanh"])
    g = P.flow_network({"a": 1}, [], ["a"], ["a"])
    assert g["a_in"]["a_out"]["capacity"] == 1 and g["source"]["a_in"]["capacity"] == math.inf


def test_text_helpers(min_cut):
    text = P.side_by_side("a\nb", "c", width=5)
    assert text.splitlines()[2].startswith("a") and "│ c" in text.splitlines()[2]
    assert "…" in P.side_by_side("abcdefgh", "", width=5)
    lines = P.node_lines(min_cut.forward)
    assert lines[0].startswith("mm = mm.default(primals_1, primals_2)") and "float32[8, 8]" in lines[0]
    assert "more lines cut" in P.trimmed_code(min_cut.joint, keep=3)


def test_exercise_runners(min_cut, xw):
    assert P.run_saved_bytes(lambda fw, bw: 7, min_cut) == 7
    x, w = xw
    w2 = torch.randn(8, 8, requires_grad=True)

    def two(x, w1, w2):
        return torch.tanh(torch.tanh(x @ w1) @ w2).sum()

    def half(x, w1, w2):
        h = torch.tanh(x @ w1)
        return checkpoint(lambda a: torch.tanh(a @ w2).sum(), h, use_reentrant=False)

    assert P.run_checkpointed(two, (x, w, w2), two)[:2] == (512, True)
    assert P.run_checkpointed(half, (x, w, w2), two)[:2] == (256, True)
    assert P.run_checkpointed(lambda *a: 1 / 0, (x, w, w2), two)[0].startswith("raised ZeroDivisionError")


def test_dropout_mask_is_kept_at_budget_one_and_drawn_again_at_zero():
    # pytorch/pytorch#190758: at budget 0 choose_saved_values_set returns the inputs before solve_min_cut's
    # "random op" ban runs, so the backward recomputes rand with fresh numbers.
    torch.manual_seed(0)
    x, w = torch.randn(16, 16), torch.randn(16, 16, requires_grad=True)
    assert P.dropout_mask_consistent(x, w, 1.0)
    assert not P.dropout_mask_consistent(x, w, 0.0)
