"""Unit tests of helpers/runtime/backends.py (chapter 28)."""
import torch

from helpers.dynamo.state import clear_compile_state
from helpers.runtime.backends import (NodeTimer, aten_level, available, describe_inputs, inductor_decompositions, op_histogram,
                                     register, targets_by_tag)


def f(x):
    return torch.relu(x) + 1


def test_register_makes_a_name_and_survives_registering_twice():
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    register(backend, name="test_backends_probe")
    register(backend, name="test_backends_probe")  # a re-run notebook cell: no "duplicate name" error
    assert "test_backends_probe" in available()
    assert "inductor" in available() and set(available()) <= set(available(hidden=True))
    clear_compile_state()
    torch.compile(f, backend="test_backends_probe")(torch.randn(3))
    assert len(calls) == 1 and op_histogram(calls[0]) == {"relu": 1, "add": 1}


def test_aten_level_hands_the_compiler_aten_graphs():
    graphs = []
    clear_compile_state()
    torch.compile(f, backend=aten_level(lambda gm, ex: (graphs.append(gm), gm.forward)[1]))(torch.randn(3))
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert targets == ["aten.relu.default", "aten.add.Tensor"]


def test_describe_inputs_and_node_timer():
    assert describe_inputs([torch.zeros(2, 3), 5]) == ["Tensor(2, 3) float32 cpu", "int 5"]
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.zeros(2))
    assert describe_inputs([fake, torch.nn.Parameter(torch.zeros(1))]) == ["FakeTensor(2,) float32 cpu",
                                                                          "Parameter(1,) float32 cpu"]
    gm = torch.fx.symbolic_trace(f)
    timer = NodeTimer(gm)
    x = torch.randn(4)
    assert torch.equal(timer.run(x), f(x)) and torch.equal(timer.run(x), f(x))
    assert timer.runs == 2 and list(timer.per_call_us()) == ["1. relu", "2. add"]
    assert all(v > 0 for v in timer.per_call_us().values())


def test_targets_by_tag_groups_by_torchs_tags():
    graphs = []

    def g(x):
        return (x.softmax(-1) @ x.t()).exp()

    clear_compile_state()
    torch.compile(g, backend=aten_level(lambda gm, ex: (graphs.append(gm), gm.forward)[1],
                                        decompositions=inductor_decompositions()))(torch.randn(3, 3))
    groups = targets_by_tag(graphs[0])
    assert {"exp", "sub", "div"} <= set(groups["pointwise"]) and {"amax", "sum"} <= set(groups["reduction"])
    assert {"mm", "permute"} <= set(groups["other"])
