import pytest
import torch

from helpers import inspect as hi
from helpers.env import CourseError


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


def test_explain_counts():
    e = hi.explain(f, torch.randn(64))
    assert (e.graph_count, e.graph_break_count, e.op_count) == (1, 0, 5)
    assert "TENSOR_MATCH" in e.guard_kinds


def test_explain_sees_a_graph_break():
    def broken(x):
        y = x + 1
        print("side effect")
        return y * 2

    e = hi.explain(broken, torch.randn(4))
    assert e.graph_count == 2 and e.graph_break_count == 1 and e.break_reasons


def test_capture_and_aot_graphs():
    _, cap = hi.capture_graphs(f, torch.randn(8))
    assert cap.count == 1 and cap.op_nodes() == ["sin", "cos", "mul", "tanh", "add"]
    _, aot = hi.aot_graphs(f, torch.randn(8, requires_grad=True))
    assert len(aot.forward) == 1 and len(aot.backward) == 1
    assert "aten.sin.default" in aot.op_nodes("forward")


def test_inductor_code_finds_one_fused_cpp_kernel():
    out, code = hi.inductor_code(f, torch.randn(256))
    assert torch.allclose(out, f(torch.randn(256)) * 0 + out)
    assert code.kernels == ["cpp_fused_add_cos_mul_sin_tanh_0"] and code.launches == 1
    assert code.kernel_language == "c++" and "sin()" in code.kernel_source()
    assert "def call" not in code.call_function() and "cpp_fused" in code.call_function()


def test_private_api_missing_is_a_clear_error():
    with pytest.raises(CourseError, match=r"private torch API `torch._dynamo.no_such_thing`.*2\.11"):
        hi.private("torch._dynamo.no_such_thing")


def test_dispatched_ops_and_planted_bug():
    _, ops = hi.dispatched_ops(f, torch.randn(4))
    assert ops == ["sin", "cos", "mul", "tanh", "add"]
    g = lambda t: torch.relu(t) + 1  # noqa: E731
    v = torch.randn(100)
    with hi.inject_codegen_bug():
        assert not torch.allclose(torch.compile(g)(v), g(v))
    assert torch.allclose(torch.compile(g)(v), g(v))
