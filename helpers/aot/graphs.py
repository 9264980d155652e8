"""AOTAutograd's output: the ATen forward and backward graphs it hands the compiler (first look in
ch02; Part 2, chapters 12-16, opens them up).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.private import private
from ..dynamo.state import clear_compile_state


@dataclass
class AotGraphs:
    """Forward and backward graphs AOTAutograd hands to its compilers (ATen level)."""

    forward: list = field(default_factory=list)
    backward: list = field(default_factory=list)

    def code(self, which: str = "forward", i: int = 0) -> str:
        return getattr(self, which)[i].code.strip()

    def op_nodes(self, which: str = "forward", i: int = 0) -> list[str]:
        return [str(n.target) for n in getattr(self, which)[i].graph.nodes if n.op == "call_function"]


def aot_graphs(fn, *args, run_backward: bool = True, **kwargs):
    """Compile ``fn`` through AOTAutograd with recording compilers; returns ``(result, AotGraphs)``.

    If the result requires grad and ``run_backward``, ``result.sum().backward()`` is run so the
    backward graph is produced too.
    """
    import torch

    aot_autograd = private("torch._dynamo.backends.common.aot_autograd")
    make_boxed_func = private("torch._functorch.aot_autograd.make_boxed_func")
    clear_compile_state()
    graphs = AotGraphs()

    def recorder(bucket):
        def compiler(gm, example_inputs):
            bucket.append(gm)
            return make_boxed_func(gm.forward)
        return compiler

    backend = aot_autograd(fw_compiler=recorder(graphs.forward), bw_compiler=recorder(graphs.backward))
    result = torch.compile(fn, backend=backend)(*args, **kwargs)
    if run_backward and isinstance(result, torch.Tensor) and result.requires_grad:
        result.sum().backward()
    return result, graphs
