"""Unit tests of helpers/aot/graphs.py."""
import torch

from helpers.aot.graphs import aot_graphs


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


def test_aot_graphs_returns_one_aten_forward_and_backward():
    _, aot = aot_graphs(f, torch.randn(8, requires_grad=True))
    assert len(aot.forward) == 1 and len(aot.backward) == 1
    assert "aten.sin.default" in aot.op_nodes("forward")
    assert "aten.cos.default" in aot.op_nodes("backward")  # d/dx sin(x) = cos(x)


def test_aot_graphs_without_grad_has_no_backward():
    _, aot = aot_graphs(f, torch.randn(8), run_backward=False)
    assert len(aot.forward) == 1 and aot.backward == []
