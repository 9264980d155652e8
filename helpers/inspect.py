"""Look inside torch.compile: Dynamo graphs, explain, AOT graphs, Inductor code, guards (ch02).

Every private ``torch._dynamo`` / ``torch._inductor`` access of the course lives in this module,
each behind one function that works on torch 2.11 and 2.13. When torch moves one, the reader gets
a CourseError naming the API, not a traceback from deep inside torch.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field

from .env import SUPPORTED_TORCH, CourseError


def private(path: str):
    """Import ``module.attr`` from torch's private API, or raise a CourseError that names it."""
    module, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        import torch

        raise CourseError(
            f"helpers needs the private torch API `{path}`, which torch {torch.__version__} does not have. "
            f"The course is tested on torch {SUPPORTED_TORCH[0]} to 2.13; install one of those, or report "
            f"this so helpers/inspect.py can follow the move."
        ) from exc


def clear_compile_state() -> None:
    """Forget every compiled frame and in-memory Inductor module (the on-disk cache stays)."""
    private("torch._dynamo.reset")()
    try:
        private("torch._inductor.utils.clear_caches")()
    except CourseError:
        pass  # older/newer torch: reset() alone is enough for the course's experiments


def counters() -> dict:
    """A copy of Dynamo's event counters (``torch._dynamo.utils.counters``) as plain dicts."""
    return {k: dict(v) for k, v in private("torch._dynamo.utils.counters").items()}


# ---------------------------------------------------------------- Dynamo


@dataclass
class Explanation:
    """What ``torch._dynamo.explain`` reports, as plain data."""

    graph_count: int
    graph_break_count: int
    op_count: int
    ops_per_graph: list[list[str]]
    break_reasons: list[str]
    guards: list[tuple[str, str]]  # (guard kind, guarded name)

    @property
    def guard_kinds(self) -> list[str]:
        return sorted({kind for kind, _ in self.guards})


def explain(fn, *args, **kwargs) -> Explanation:
    """Run ``fn`` under ``torch._dynamo.explain`` and summarise graphs, breaks, ops and guards."""
    clear_compile_state()
    out = private("torch._dynamo.explain")(fn)(*args, **kwargs)
    ops = [[_op_name(op) for op in graph_ops] for graph_ops in (out.ops_per_graph or [])]
    reasons = [getattr(r, "reason", str(r)) for r in out.break_reasons]
    guards = [(g.create_fn_name(), g.name) for g in (out.out_guards or [])]
    return Explanation(out.graph_count, out.graph_break_count, out.op_count, ops, reasons, guards)


def _op_name(op) -> str:
    name = getattr(op, "__name__", None) or str(op)
    module = getattr(op, "__module__", "") or ""
    return f"torch.{name}" if module.startswith("torch") and "." not in name else name


@dataclass
class Captured:
    """Graphs a capturing backend received, in the order Dynamo compiled them."""

    graphs: list = field(default_factory=list)  # torch.fx.GraphModule

    @property
    def count(self) -> int:
        return len(self.graphs)

    def code(self, i: int = 0) -> str:
        return self.graphs[i].code.strip()

    def op_nodes(self, i: int = 0) -> list[str]:
        """Names of the call nodes of graph ``i`` (placeholders and output left out)."""
        return [str(n.target.__name__ if hasattr(n.target, "__name__") else n.target)
                for n in self.graphs[i].graph.nodes if n.op.startswith("call")]


def capture_graphs(fn, *args, dynamic=None, **kwargs):
    """Compile ``fn`` with a backend that records each FX graph and runs it eagerly.

    Returns ``(result, Captured)``. Uses only the public ``torch.compile(backend=callable)``.
    """
    import torch

    clear_compile_state()
    captured = Captured()

    def backend(gm, example_inputs):
        captured.graphs.append(gm)
        return gm.forward

    result = torch.compile(fn, backend=backend, dynamic=dynamic)(*args, **kwargs)
    return result, captured


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


# ---------------------------------------------------------------- Inductor


@dataclass
class InductorOutput:
    """The Python module(s) Inductor wrote for one compiled call, and what is in them."""

    sources: list[str]

    _KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(triton|cpp_pybinding|cpp)\(", re.M)

    @property
    def source(self) -> str:
        return "\n".join(self.sources)

    @property
    def kernels(self) -> list[str]:
        """Generated kernel names, in definition order (Triton on GPU, C++ on CPU)."""
        return list(dict.fromkeys(m.group(1) for m in self._KERNEL_DEF.finditer(self.source)))

    @property
    def kernel_language(self) -> str | None:
        m = self._KERNEL_DEF.search(self.source)
        return None if m is None else ("triton" if m.group(2) == "triton" else "c++")

    @property
    def launches(self) -> int:
        """Kernel launches in the wrapper's ``call()`` (lines that run a generated kernel)."""
        names = self.kernels
        return sum(1 for line in self.call_function().splitlines()
                   if any(re.search(rf"\b{re.escape(n)}(\.run)?\(", line) for n in names))

    def call_function(self) -> str:
        """The body of the wrapper's ``call(args)`` function."""
        match = re.search(r"^( *)def call\((?:self, )?args\):\n", self.source, re.M)
        if not match:
            return ""
        indent = len(match.group(1))
        lines = []
        for line in self.source[match.end():].splitlines():
            if line.strip() and (len(line) - len(line.lstrip())) <= indent:
                break
            lines.append(line)
        return "\n".join(lines).rstrip()

    def kernel_source(self, name: str | None = None) -> str:
        """The source of one generated kernel (the first if no name is given)."""
        names = self.kernels
        name = name or (names[0] if names else None)
        if name is None:
            return ""
        pattern = rf"^{re.escape(name)} = async_compile\.\w+\(.*?'''(.*?)'''"
        m = re.search(pattern, self.source, re.M | re.S)
        return m.group(1).strip() if m else ""


def inductor_code(fn, *args, mode=None, dynamic=None, **kwargs):
    """Compile ``fn`` with Inductor and return ``(result, InductorOutput)`` with the generated code."""
    import torch

    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    clear_compile_state()
    compiled = torch.compile(fn, mode=mode, dynamic=dynamic)
    result, sources = run_and_get_code(compiled, *args, **kwargs)
    return result, InductorOutput(list(sources))


# ---------------------------------------------------------------- operators and planted bugs


def dispatched_ops(fn, *args, **kwargs) -> tuple[object, list[str]]:
    """Run ``fn`` eagerly and list the ATen operators it dispatched, in order (ch01)."""
    mode_cls = private("torch.utils._python_dispatch.TorchDispatchMode")
    seen: list[str] = []

    class Recorder(mode_cls):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func.overloadpacket.__name__))
            return func(*args, **(kwargs or {}))

    with Recorder():
        result = fn(*args, **kwargs)
    return result, seen


def operator_counts() -> dict[str, int]:
    """How many ATen operators (packets and overloads), core-ATen operators and prims this torch has."""
    import torch

    prims = private("torch._prims.__all__")
    packets = overloads = core = 0
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        if not hasattr(packet, "overloads"):
            continue
        packets += 1
        names = packet.overloads()
        overloads += len(names)
        core += any(torch.Tag.core in getattr(packet, o).tags for o in names)
    return {"aten_packets": packets, "aten_overloads": overloads, "core_aten": core, "prims": len(prims)}


class inject_codegen_bug:
    """Context manager: make Inductor's generated code compute relu wrongly (a testing knob) (ch02).

    Uses ``torch._inductor.config.{cpp,triton}.inject_relu_bug_TESTING_ONLY = "accuracy"``.
    """

    def __enter__(self):
        config = private("torch._inductor.config")
        self._saved = (config.cpp.inject_relu_bug_TESTING_ONLY, config.triton.inject_relu_bug_TESTING_ONLY)
        config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
        config.triton.inject_relu_bug_TESTING_ONLY = "accuracy"
        clear_compile_state()
        return self

    def __exit__(self, *exc):
        config = private("torch._inductor.config")
        config.cpp.inject_relu_bug_TESTING_ONLY, config.triton.inject_relu_bug_TESTING_ONLY = self._saved
        clear_compile_state()
        return False
