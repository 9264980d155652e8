"""Unit tests of helpers/dynamo/output_graph.py."""
import torch

from helpers.core.env import CourseError
from helpers.core.private import private
from helpers.dynamo.output_graph import (
    new_compiled_fn_globals,
    output_names,
    tf32_warning_applies,
    watch_method,
)
from helpers.dynamo.state import GraphRecorder, clear_compile_state


def test_watch_method_records_outcomes_and_restores():
    cls = private("torch._dynamo.symbolic_convert.InstructionTranslator")
    original = cls.__dict__["_return"]

    def no_ops(x):
        return x

    def one_op(x):
        return x + 1
    clear_compile_state()
    with watch_method("torch._dynamo.symbolic_convert.InstructionTranslator._return") as calls:
        torch.compile(no_ops, backend="eager")(torch.randn(2))
        torch.compile(one_op, backend="eager")(torch.randn(2))
    assert cls.__dict__["_return"] is original
    # a traced return ends tracing by raising ReturnValueOp; an empty graph raises SkipFrame instead
    assert [c.outcome for c in calls] == ["SkipFrame", "ReturnValueOp"]
    assert "No ops traced" in calls[0].message
    import pytest

    with pytest.raises(CourseError):
        with watch_method("torch._dynamo.output_graph.OutputGraph.no_such_method"):
            pass


def test_output_names_and_new_compiled_fn_globals():
    def twice(x):
        y = x.sin()
        return y, y, x

    clear_compile_state()
    rec = GraphRecorder()
    a, b, c = torch.compile(twice, backend=rec)(torch.randn(2))
    assert output_names(rec.graphs[0]) == ["y"] and a is b
    clear_compile_state()

    def two_graphs(x):
        y = x.cos()
        torch._dynamo.graph_break()
        return y.sin()

    def no_graph(x):
        return x

    assert new_compiled_fn_globals(two_graphs, torch.randn(2)) == 2
    assert new_compiled_fn_globals(no_graph, torch.randn(2)) == 0


def test_tf32_warning_applies_only_on_ampere_or_newer_cuda(monkeypatch):
    import types

    if not torch.cuda.is_available():
        assert tf32_warning_applies() is False
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for capability, precision, want in [((9, 0), "ieee", True), ((9, 0), "tf32", False), ((7, 5), "ieee", False)]:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, c=capability: c)
        monkeypatch.setattr(torch.backends.cuda, "matmul", types.SimpleNamespace(fp32_precision=precision))
        assert tf32_warning_applies() is want
        assert tf32_warning_applies("cpu") is False  # a CPU graph on a GPU machine never warns
