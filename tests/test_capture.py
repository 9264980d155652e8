"""Unit tests of helpers/capture.py (chapters 7 and 8)."""
import dis

import torch

from helpers import capture as hc
from helpers.inspect import GraphRecorder, clear_compile_state, private, transformed_code


class Box:
    pass


def test_transformed_code_and_replay_of_an_attribute_write():
    clear_compile_state()

    def g(x, obj):
        obj.k = 1
        obj.k = 2
        return x + obj.k

    box = Box()
    torch.compile(g, backend="eager")(torch.randn(2), box)
    assert box.k == 2
    code = transformed_code(g)
    assert code is not g.__code__ and code.co_name == g.__code__.co_name
    replay = hc.replay_instructions(code)
    assert replay and len(replay) < len(list(dis.get_instructions(code)))
    assert hc.attribute_writes(code, "k") == 1
    assert hc.attribute_writes(code, "nope") == 0
    assert hc.mentions(code, "k") and not hc.mentions(code, "append")
    assert hc.attribute_setter(code, "k") in ("object_setattr_ignore_descriptor", "object.__setattr__", "STORE_ATTR")
    assert hc.attribute_setter(code, "nope") == "none"

    def plain_store(o):
        o.k = 1
    assert hc.attribute_setter(plain_store.__code__, "k") == "STORE_ATTR"
    listing = hc.show_instructions(replay, width=30)
    assert all(len(line) <= 30 for line in listing.splitlines())
    assert "'k'" in hc.show_instructions(replay)


def test_replay_instructions_without_graph_outputs_returns_everything():
    def plain(a):
        return a + 1
    assert hc.replay_instructions(plain.__code__) == list(dis.get_instructions(plain.__code__))


def test_show_instructions_hides_compiled_fn_names():
    def k(x):
        return x * 5
    clear_compile_state()
    torch.compile(k, backend="eager")(torch.randn(2))
    text = hc.show_instructions(dis.get_instructions(transformed_code(k)))
    assert "'__compiled_fn_…'" in text and "__compiled_fn_1" not in text


def test_opnames_compare_shapes_of_code():
    def a(x):
        return x + 1

    def b(y):
        return y + 2

    def c(x):
        return x.sum() + 1
    assert hc.opnames(a.__code__) == hc.opnames(b.__code__)
    assert hc.opnames(a.__code__) != hc.opnames(c.__code__)


def test_compiled_fn_names_filters_and_sorts_by_compile_number():
    ns = {"__compiled_fn_3_x": 1, "__compiled_fn_1_y": 2, "other": 3}
    assert hc.compiled_fn_names(ns) == ["__compiled_fn_1_y", "__compiled_fn_3_x"]
    ns = {"__compiled_fn_10_ab": 1, "__compiled_fn_2_cd": 2, "__compiled_fn": 3}
    assert hc.compiled_fn_names(ns) == ["__compiled_fn", "__compiled_fn_2_cd", "__compiled_fn_10_ab"]
    before = set(hc.compiled_fn_names(globals()))

    def fresh(x):
        return x - 3
    clear_compile_state()
    torch.compile(fresh, backend="eager")(torch.randn(2))
    assert len(set(hc.compiled_fn_names(globals())) - before) == 1


def test_watch_pruning_sees_a_shape_only_input_removed_and_restores():
    cls = private("torch._dynamo.output_graph.OutputGraph")
    original = cls.remove_unused_graphargs

    def shape_only(x, other):
        return x * other.shape[0]
    clear_compile_state()
    with hc.watch_pruning() as records:
        torch.compile(shape_only, backend="eager")(torch.randn(2), torch.randn(5))
    assert cls.remove_unused_graphargs is original
    (rec,) = records
    assert set(rec.before) == {"L_x_", "L_other_"} and rec.after == ["L_x_"] and rec.pruned == ["L_other_"]


def test_graph_layers_and_draw_graph():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def f(a, b):
        return torch.relu(a @ b) + a

    clear_compile_state()
    rec = GraphRecorder()
    torch.compile(f, backend=rec)(torch.randn(2, 2), torch.randn(2, 2))
    depth = hc.graph_layers(rec.graphs[0])
    assert depth["l_a_"] == 0 and depth["l_b_"] == 0
    assert depth["matmul"] == 1 and depth["relu"] == 2 and depth["add"] == 3 and depth["output"] == 4
    fig, ax = plt.subplots()
    hc.draw_graph(rec.graphs[0], ax)
    labels = [t.get_text() for t in ax.texts]
    assert "L_a_" in labels and "output" in labels and "matmul" in labels
    assert len([t for t in labels if t]) == len(depth)        # one box per node
    edges = sum(len(n.all_input_nodes) for n in rec.graphs[0].graph.nodes)
    assert len([t for t in labels if not t]) == edges == 6    # one arrow per edge
    plt.close(fig)


def test_watch_method_records_outcomes_and_restores():
    cls = private("torch._dynamo.symbolic_convert.InstructionTranslator")
    original = cls.__dict__["_return"]

    def no_ops(x):
        return x

    def one_op(x):
        return x + 1
    clear_compile_state()
    with hc.watch_method("torch._dynamo.symbolic_convert.InstructionTranslator._return") as calls:
        torch.compile(no_ops, backend="eager")(torch.randn(2))
        torch.compile(one_op, backend="eager")(torch.randn(2))
    assert cls.__dict__["_return"] is original
    # a traced return ends tracing by raising ReturnValueOp; an empty graph raises SkipFrame instead
    assert [c.outcome for c in calls] == ["SkipFrame", "ReturnValueOp"]
    assert "No ops traced" in calls[0].message
    import pytest

    from helpers.env import CourseError
    with pytest.raises(CourseError):
        with hc.watch_method("torch._dynamo.output_graph.OutputGraph.no_such_method"):
            pass


def test_watch_output_graph_sees_ambient_guards_and_fakes():
    cls = private("torch._dynamo.output_graph.OutputGraph")
    originals = (cls.init_ambient_guards, cls.call_user_compiler)
    bias = torch.randn(2)

    def f(x, unused):
        return x * 2 + bias
    clear_compile_state()
    with hc.watch_output_graph() as views:
        torch.compile(f, backend="eager")(torch.randn(2), torch.randn(3))
    assert (cls.init_ambient_guards, cls.call_user_compiler) == originals
    (view,) = views
    assert {"GRAD_MODE", "DEFAULT_DEVICE", "GLOBAL_STATE", "SHAPE_ENV"} <= set(view.ambient_guards)
    assert not any(k in view.ambient_guards for k in ("TENSOR_MATCH", "TYPE_MATCH"))
    assert view.tracked_fakes == ["L['x']", "L['bias']"]
    assert view.placeholders_fake and view.backend_fake_mode_is_new and view.shape_env_shared


def test_output_names_and_new_compiled_fn_globals():
    def twice(x):
        y = x.sin()
        return y, y, x

    clear_compile_state()
    rec = GraphRecorder()
    a, b, c = torch.compile(twice, backend=rec)(torch.randn(2))
    assert hc.output_names(rec.graphs[0]) == ["y"] and a is b
    clear_compile_state()

    def two_graphs(x):
        y = x.cos()
        torch._dynamo.graph_break()
        return y.sin()

    def no_graph(x):
        return x

    assert hc.new_compiled_fn_globals(two_graphs, torch.randn(2)) == 2
    assert hc.new_compiled_fn_globals(no_graph, torch.randn(2)) == 0


def test_tf32_warning_applies_only_on_ampere_or_newer_cuda(monkeypatch):
    import types

    if not torch.cuda.is_available():
        assert hc.tf32_warning_applies() is False
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for capability, precision, want in [((9, 0), "ieee", True), ((9, 0), "tf32", False), ((7, 5), "ieee", False)]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, c=capability: c)
        monkeypatch.setattr(torch.backends.cuda, "matmul", types.SimpleNamespace(fp32_precision=precision))
        assert hc.tf32_warning_applies() is want
        assert hc.tf32_warning_applies("cpu") is False  # a CPU graph on a GPU machine never warns
