"""Unit tests of helpers/dynamo/state.py."""
import dis
import random

import pytest
import torch

from helpers.dynamo.frames import watch_frames
from helpers.dynamo.output_graph import compiled_fn_names, draw_graph, graph_layers
from helpers.dynamo.side_effects import show_instructions
from helpers.dynamo.state import (
    GraphRecorder,
    cache_entries,
    capture_graphs,
    clear_compile_state,
    code_of,
    explain,
    transformed_code,
)
from helpers.dynamo.variables import input_kinds


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


def helper(t):
    return t.cos()


def uses_helper(x):
    return helper(x) + 1


def make_adder(k):
    def add(x):
        return x + k
    return add


def _roll():
    return random.randint(1, 6)


def test_input_kinds_names_tensors_symints_and_promoted_floats():
    def mul(x, s):
        return x * s

    x = torch.randn(8)
    kinds = []
    for values in ([0.5, 1.5], [3, 4]):
        clear_compile_state()
        rec = GraphRecorder()
        compiled = torch.compile(mul, backend=rec)
        for v in values:
            compiled(x, v)
        kinds.append(input_kinds(rec.graphs[-1]))
    assert kinds[0] == {"L_x_": "Tensor float32 [8]", "L_s_": "Tensor float64 []"}  # a float becomes a 0-d tensor
    assert kinds[1] == {"L_x_": "Tensor float32 [8]", "L_s_": "SymInt"}


def test_watch_frames_records_callers_and_strategies():
    roll = torch.compiler.disable(_roll, recursive=False)

    def step(x):
        y = x.cos()
        roll()
        return y + 1

    clear_compile_state()
    with watch_frames() as log:
        torch.compile(step, backend="eager")(torch.randn(4))
    by_name = {fr.name: fr for fr in log.frames}
    assert by_name["randint"].decision == "skipped: skipfiles" and by_name["randint"].caller == "_roll"
    assert by_name["randrange"].within("_roll") and not by_name["_roll"].within("randint")
    assert {fr.strategy for fr in log.frames if fr.decision == "compiled"} == {"DEFAULT/DEFAULT"}
    assert {fr.strategy for fr in log.frames if fr.decision != "compiled"} == {"SKIP/DEFAULT"}


def test_show_instructions_hides_compiled_fn_names():
    def k(x):
        return x * 5
    clear_compile_state()
    torch.compile(k, backend="eager")(torch.randn(2))
    text = show_instructions(dis.get_instructions(transformed_code(k)))
    assert "'__compiled_fn_…'" in text and "__compiled_fn_1" not in text


def test_compiled_fn_names_filters_and_sorts_by_compile_number():
    ns = {"__compiled_fn_3_x": 1, "__compiled_fn_1_y": 2, "other": 3}
    assert compiled_fn_names(ns) == ["__compiled_fn_1_y", "__compiled_fn_3_x"]
    ns = {"__compiled_fn_10_ab": 1, "__compiled_fn_2_cd": 2, "__compiled_fn": 3}
    assert compiled_fn_names(ns) == ["__compiled_fn", "__compiled_fn_2_cd", "__compiled_fn_10_ab"]
    before = set(compiled_fn_names(globals()))

    def fresh(x):
        return x - 3
    clear_compile_state()
    torch.compile(fresh, backend="eager")(torch.randn(2))
    assert len(set(compiled_fn_names(globals())) - before) == 1


def test_graph_layers_and_draw_graph():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def f(a, b):
        return torch.relu(a @ b) + a

    clear_compile_state()
    rec = GraphRecorder()
    torch.compile(f, backend=rec)(torch.randn(2, 2), torch.randn(2, 2))
    depth = graph_layers(rec.graphs[0])
    assert depth["l_a_"] == 0 and depth["l_b_"] == 0
    assert depth["matmul"] == 1 and depth["relu"] == 2 and depth["add"] == 3 and depth["output"] == 4
    fig, ax = plt.subplots()
    draw_graph(rec.graphs[0], ax)
    labels = [t.get_text() for t in ax.texts]
    assert "L_a_" in labels and "output" in labels and "matmul" in labels
    assert len([t for t in labels if t]) == len(depth)        # one box per node
    edges = sum(len(n.all_input_nodes) for n in rec.graphs[0].graph.nodes)
    assert len([t for t in labels if not t]) == edges == 6    # one arrow per edge
    plt.close(fig)


def test_explain_counts():
    e = explain(f, torch.randn(64))
    assert (e.graph_count, e.graph_break_count, e.op_count) == (1, 0, 5)
    assert "TENSOR_MATCH" in e.guard_kinds


def test_explain_sees_a_graph_break():
    def broken(x):
        y = x + 1
        print("side effect")
        return y * 2

    e = explain(broken, torch.randn(4))
    assert e.graph_count == 2 and e.graph_break_count == 1 and e.break_reasons


def test_capture_graphs_records_one_graph_and_its_run():
    _, cap = capture_graphs(f, torch.randn(8))
    assert isinstance(cap, GraphRecorder) and cap.runs == 1
    assert cap.count == cap.compiles == 1 and cap.op_nodes() == ["sin", "cos", "mul", "tanh", "add"]


def test_graph_recorder_counts_graphs_and_runs():
    clear_compile_state()
    rec = GraphRecorder()
    cf = torch.compile(uses_helper, backend=rec)
    x = torch.randn(3)
    for _ in range(3):
        assert torch.allclose(cf(x), uses_helper(x))
    assert rec.compiles == rec.count == 1 and rec.runs == 3
    assert rec.placeholders() == ["L_x_"]
    assert rec.op_nodes() == ["cos", "add"]
    assert [t for t, _ in rec.call_targets()][1].__name__ == "add"
    assert rec.source_functions() == ["helper", "uses_helper"]
    assert "cos" in rec.code() and "def forward" in rec.code()
    short, full = rec.readable(), rec.readable(short_paths=False)
    assert "# File: test_state.py:" in short and "/tests/dynamo/test_state.py" in full
    rec.reset()
    assert rec.compiles == 0 and rec.runs == 0


def test_graph_recorder_index_defaults_to_the_newest_graph():
    def g(x, n):
        return x * n

    clear_compile_state()
    rec = GraphRecorder()
    cg = torch.compile(g, backend=rec, dynamic=False)
    cg(torch.randn(2), 2)
    cg(torch.randn(2, 2), 2)
    assert rec.compiles == 2 and rec.placeholders() == rec.placeholders(1) == ["L_x_"]
    assert "f32[2, 2]" in rec.readable() and "f32[2, 2]" not in rec.readable(0)


def test_code_of_unwraps_compiled_functions_modules_and_code():
    fn = make_adder(2)
    assert code_of(fn) is fn.__code__ and code_of(fn.__code__) is fn.__code__
    assert code_of(torch.compile(fn, backend="eager")) is fn.__code__
    lin = torch.nn.Linear(2, 2)
    assert code_of(lin) is type(lin).forward.__code__
    assert code_of(torch.compile(lin, backend="eager")) is type(lin).forward.__code__
    with pytest.raises(TypeError):
        code_of(42)


def test_cache_entries_and_transformed_code_newest_first():
    clear_compile_state()
    fn = make_adder(1)
    with pytest.raises(ValueError, match="no cache entry"):
        transformed_code(fn)
    assert cache_entries(fn) == []
    before = fn.__code__
    cf = torch.compile(fn, backend="eager", dynamic=False)
    cf(torch.randn(3))
    first = transformed_code(fn)
    cf(torch.randn(3).double())  # a dtype guard fails: a second entry, checked first
    entries = cache_entries(fn)
    assert fn.__code__ is before and len(entries) == 2
    assert transformed_code(fn, 1) is first and transformed_code(fn) is entries[0].code is not first
    assert any(name.startswith("__compiled_fn") for name in first.co_names)
