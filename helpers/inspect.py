"""Look inside torch.compile: Dynamo graphs, cache entries, explain, AOT graphs, Inductor code (ch02).

``private`` is the one door to torch's private API: every helpers module imports private torch names
through it, so a moved API raises a CourseError naming it instead of a traceback from deep inside torch.
This module also holds what several chapters share: the recording backend ``GraphRecorder`` (and
``capture_graphs``), the cache entries Dynamo keeps on a code object (``cache_entries``,
``transformed_code``), ``explain``, and the AOT and Inductor views. All of it works on torch 2.11 and 2.13.
"""
from __future__ import annotations

import importlib
import re
import types
from dataclasses import dataclass, field

from .env import VERIFIED_TORCH, CourseError


def private(path: str):
    """Import ``module.attr`` from torch's private API, or raise a CourseError that names it."""
    module, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        import torch

        raise CourseError(
            f"helpers needs the private torch API `{path}`, which torch {torch.__version__} does not have. "
            f"The course is verified on torch {', '.join(VERIFIED_TORCH)}; install one of those, or report "
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
class GraphRecorder:
    """A backend that keeps every FX graph Dynamo hands it and counts how often they run (ch02).

    Use it as ``torch.compile(fn, backend=recorder)`` (public API only). ``compiles`` is the number of
    graphs received, ``runs`` the number of times one of them was executed. Graph ``i`` defaults to the
    newest (``-1``).
    """

    graphs: list = field(default_factory=list)  # torch.fx.GraphModule, in compile order
    runs: int = 0

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        forward = gm.forward

        def run(*args):
            self.runs += 1
            return forward(*args)

        return run

    @property
    def compiles(self) -> int:
        """How many graphs the backend received (one per compile)."""
        return len(self.graphs)

    @property
    def count(self) -> int:
        """The same number as ``compiles``, read as "how many graphs were captured" (chapter 2's name)."""
        return len(self.graphs)

    def reset(self) -> None:
        """Forget the graphs and the run count."""
        self.graphs.clear()
        self.runs = 0

    def code(self, i: int = -1) -> str:
        """The Python code of graph ``i``."""
        return self.graphs[i].code.strip()

    def readable(self, i: int = -1, short_paths: bool = True) -> str:
        """Graph ``i`` as torch prints it: shapes, dtypes and the source line of each op.

        ``short_paths`` keeps only the file name in the ``# File:`` comments.
        """
        text = self.graphs[i].print_readable(print_output=False).strip()
        return re.sub(r"(# File: )\S*/([^/\s]+:\d+)", r"\1\2", text) if short_paths else text

    def placeholders(self, i: int = -1) -> list[str]:
        """The input names of graph ``i``, in order (``L_x_`` = the local ``x``; ``G_w_`` = the global ``w``)."""
        return [str(n.target) for n in self.graphs[i].graph.nodes if n.op == "placeholder"]

    def op_nodes(self, i: int = -1) -> list[str]:
        """The names of graph ``i``'s operation nodes (placeholders and output left out)."""
        return [n.name for n in self.graphs[i].graph.nodes if n.op.startswith("call")]

    def call_targets(self, i: int = -1) -> list:
        """``(target, args)`` of graph ``i``'s operation nodes."""
        return [(n.target, n.args) for n in self.graphs[i].graph.nodes if n.op.startswith("call")]

    def source_functions(self, i: int = -1) -> list[str]:
        """The user functions whose lines produced graph ``i``'s ops, in order of first appearance."""
        names = []
        for n in self.graphs[i].graph.nodes:
            if not n.op.startswith("call"):  # torch 2.11 gives placeholders a stack trace too
                continue
            trace = n.meta.get("stack_trace") or ""
            lines = [ln for ln in trace.splitlines() if ln.strip().startswith("File ")]
            if lines:
                name = lines[-1].rsplit(" in ", 1)[-1].strip()
                if name not in names:
                    names.append(name)
        return names


def capture_graphs(fn, *args, dynamic=None, **kwargs):
    """Compile ``fn`` afresh with a ``GraphRecorder`` and call it once; returns ``(result, recorder)`` (ch02)."""
    import torch

    clear_compile_state()
    recorder = GraphRecorder()
    result = torch.compile(fn, backend=recorder, dynamic=dynamic)(*args, **kwargs)
    return result, recorder


# ---------------------------------------------------------------- cache entries


def code_of(fn):
    """The code object Dynamo attaches cache entries to, for a function, method, module or code object (ch03)."""
    if isinstance(fn, types.CodeType):
        return fn
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)  # a torch.compile wrapper
    fn = getattr(fn, "_orig_mod", fn)  # an OptimizedModule
    if hasattr(fn, "forward") and not hasattr(fn, "__code__"):
        fn = fn.forward
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"cannot find the code object of {fn!r}")
    return code


def cache_entries(fn) -> list:
    """Dynamo's cache entries for ``fn``'s code object, in the order the next call checks them (newest first) (ch03).

    Each has ``.code`` (the rewritten code object), ``.guard_manager`` and ``.compile_id``. Uses
    ``torch._C._dynamo.eval_frame._debug_get_cache_entry_list`` (a debug binding, on 2.11 and 2.13).
    """
    get = private("torch._C._dynamo.eval_frame._debug_get_cache_entry_list")
    return list(get(code_of(fn)))


def transformed_code(fn, index: int = 0):
    """The code object Dynamo runs instead of ``fn``'s, for one cache entry (``0`` = the newest) (ch03)."""
    entries = cache_entries(fn)
    if not entries:
        raise ValueError("no cache entry: call the compiled function first")
    return entries[index].code


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
