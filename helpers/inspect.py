"""Look inside torch.compile: Dynamo graphs, cache entries, explain, AOT graphs, Inductor code (ch02).

``private`` is the one door to torch's private API: every helpers module imports private torch names
through it, so a moved API raises a CourseError naming it instead of a traceback from deep inside torch.
This module also holds what several chapters share: the recording backend ``GraphRecorder`` (and
``capture_graphs``), the cache entries Dynamo keeps on a code object (``cache_entries``,
``transformed_code``), ``explain``, and the AOT and Inductor views. All of it works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import importlib
import re
from contextlib import contextmanager
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
    return _explanation(_run_explain(fn, *args, **kwargs))


def _run_explain(fn, *args, **kwargs):
    clear_compile_state()
    return private("torch._dynamo.explain")(fn)(*args, **kwargs)


def _explanation(out) -> "Explanation":
    """torch's ExplainOutput as plain data."""
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
    ``torch._C._dynamo.eval_frame._debug_get_cache_entry_list`` (a debug binding, on 2.11, 2.13 and 2.15).
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


def operator_counts(fresh_process: bool = False) -> dict[str, int]:
    """The operators torch's dispatcher has registered: ATen names and overloads, core ATen, prims (ch01).

    Counted from the dispatcher's own table (``torch._C._dispatch_get_all_op_names``), which libtorch
    fills with every ATen schema when it loads. ``aten_overloads`` counts ``aten::name.overload``
    entries, ``aten_packets`` the distinct names (what ``torch.ops.aten.name`` calls an
    ``OpOverloadPacket``); ``core_aten_*`` the overloads tagged ``torch.Tag.core`` and their names;
    ``prims`` the operators in the ``prims`` namespace, to which Inductor adds its own when it loads.
    ``aten_listed`` is what ``dir(torch.ops.aten)`` shows (taken first): only the packets this process
    has already touched, because ``torch.ops.aten`` creates them on first attribute access.
    ``fresh_process=True`` counts in a new interpreter that has only imported torch.
    """
    if fresh_process:
        import json
        import subprocess
        import sys

        code = "import json, torch; from helpers.inspect import operator_counts; print(json.dumps(operator_counts()))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    import torch

    listed = sum(hasattr(getattr(torch.ops.aten, n, None), "overloads") for n in dir(torch.ops.aten))
    names = private("torch._C._dispatch_get_all_op_names")()
    aten = [n.split("::", 1)[1] for n in names if n.startswith("aten::")]
    core_names: list[str] = []
    for entry in aten:
        packet, _, overload = entry.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        if torch.Tag.core in op.tags:
            core_names.append(packet)
    return {"aten_packets": len({n.partition(".")[0] for n in aten}), "aten_overloads": len(aten),
            "core_aten_packets": len(set(core_names)), "core_aten_overloads": len(core_names),
            "prims": len({n.split("::", 1)[1].partition(".")[0] for n in names if n.startswith("prims::")}),
            "aten_listed": listed}


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


# ---------------------------------------------------------------- compile time, kernels, guards (ch02)

@dataclass
class CompileTimes:
    """Seconds Dynamo's ``dynamo_timed`` timers recorded while a ``compile_times()`` block ran, by key (ch02).

    The keys are torch's own (``bytecode_tracing``, ``build_guards``, ``_compile.compile_inner``, ...); a
    timer that did not run reads 0. Nested timers overlap: ``stations()`` splits them into disjoint parts.
    """

    seconds: dict = field(default_factory=dict)

    def __getitem__(self, key: str) -> float:
        return self.seconds.get(key, 0.0)

    def _ending(self, suffix: str) -> float:
        return sum(v for k, v in self.seconds.items() if k.endswith(suffix))

    def compiler_seconds(self) -> float:
        """Time in the kernel compilers: g++ runs (``compile_file``) on CPU, else Triton's compile/wait timers."""
        if self["compile_file"]:
            return self["compile_file"]
        return self["async_compile.precompile"] + self["async_compile.wait"]

    def stations(self, total: float | None = None) -> dict[str, float]:
        """Disjoint seconds per station of one first call (nested timers subtracted); ``total`` adds what came after.

        Dynamo = ``_compile.compile_inner`` minus the backend call (split into bytecode tracing, guard
        building and the rest); AOTAutograd = ``create_aot_dispatcher_function`` minus Inductor's forward
        compiler; Inductor = the rest of the backend call, minus the kernel compilers; then the compilers.
        """
        inner, backend = self["_compile.compile_inner"], self["OutputGraph.call_user_compiler"]
        aot, fw = self["create_aot_dispatcher_function"], self._ending("fw_compiler_base")
        compilers = min(self.compiler_seconds(), fw) if fw else self.compiler_seconds()
        trace, guards = self["bytecode_tracing"], self["build_guards"]
        out = {
            "Dynamo: trace bytecode": trace,
            "Dynamo: build guards": guards,
            "Dynamo: the rest": max(inner - backend - trace - guards, 0.0),
            "AOTAutograd": max(aot - fw, 0.0),
            "Inductor: lower, schedule, write code": max(backend - aot, 0.0) + max(fw - compilers, 0.0),
            "kernel compiler (C++ or Triton)": compilers,
        }
        if total is not None:
            out["after compiling: wrappers, first run"] = max(total - inner, 0.0)
        return out

    def dynamo_seconds(self) -> float:
        """Dynamo's own part of the compile: ``_compile.compile_inner`` minus the backend call."""
        return max(self["_compile.compile_inner"] - self["OutputGraph.call_user_compiler"], 0.0)


@contextmanager
def compile_times():
    """Collect what Dynamo's compile-time timers record inside the block into a ``CompileTimes`` (ch02).

    Reads ``torch._dynamo.utils.compilation_time_metrics`` (what ``torch._dynamo.utils.compile_times()``
    prints), keeping only entries added during the block; a ``torch._dynamo.reset()`` inside the block
    (which clears the table) is handled.
    """
    metrics = private("torch._dynamo.utils.compilation_time_metrics")
    before = {k: (v, len(v)) for k, v in metrics.items()}
    result = CompileTimes()
    try:
        yield result
    finally:
        for key, values in metrics.items():
            old, n = before.get(key, (None, 0))
            new = values[n:] if values is old else values
            if new:
                result.seconds[key] = float(sum(new))


@dataclass
class KernelSummary:
    """One generated kernel as the traffic model sees it: name, elements covered, loads and stores (ch02)."""

    name: str
    language: str | None
    numel: int | None
    loads: int
    stores: int


def kernel_summary(code: "InductorOutput", name: str | None = None) -> KernelSummary:
    """Name, element count and memory operations of one generated kernel (the first if no name) (ch02).

    Triton: ``xnumel`` and the ``tl.load``/``tl.store`` calls (``inductor_meta``'s ``num_load``/``num_store``
    count the same). C++: the loop bound and the ``loadu``/``.store`` calls (or scalar ``ptr[...]`` accesses).
    """
    names = code.kernels
    name = name or (names[0] if names else "")
    src = code.kernel_source(name)
    if code.kernel_language == "triton":
        m = re.search(r"^\s*xnumel = (\d+)", src, re.M)
        numel = int(m.group(1)) if m else None
        loads, stores = len(re.findall(r"\btl\.load\(", src)), len(re.findall(r"\btl\.store\(", src))
    else:
        bounds = re.findall(r"for\s*\(\s*int64_t\s+x0\s*=.*?;\s*x0\s*<\s*static_cast<int64_t>\((\d+)L?\)", src)
        numel = max(int(b) for b in bounds) if bounds else None
        loads = len(re.findall(r"::loadu\(", src)) + len(re.findall(r"=\s*in_ptr\d+\[", src))
        stores = len(re.findall(r"\.store\(\s*out_ptr", src)) + len(re.findall(r"\bout_ptr\d+\[[^\]]*\]\s*=", src))
    return KernelSummary(name, code.kernel_language, numel, loads, stores)


def inductor_vec_isa() -> str:
    """The SIMD instruction set Inductor's C++ backend writes for on this CPU ("avx2", "avx512", "neon", ... or "none") (ch02).

    Uses ``torch._inductor.cpu_vec_isa.pick_vec_isa`` (it compiles a small probe per candidate once per process).
    """
    isa = private("torch._inductor.cpu_vec_isa.pick_vec_isa")()
    return str(isa) if isa else "none"


def noop_guard_kinds(kinds) -> list[str]:
    """The guard kinds among ``kinds`` whose ``GuardBuilder`` method compiles to nothing (body ``pass``) (ch02).

    ``explain`` lists declared guards; for these kinds (on torch 2.11–2.15 ``GRAD_MODE`` and
    ``DETERMINISTIC_ALGORITHMS``) the check lives in the one global-state guard instead. Read from the
    source of ``torch._dynamo.guards.GuardBuilder``.
    """
    import ast
    import inspect as _pyinspect
    import textwrap

    builder = private("torch._dynamo.guards.GuardBuilder")
    out = []
    for kind in dict.fromkeys(kinds):
        method = getattr(builder, kind, None)
        if method is None:
            continue
        try:
            tree = ast.parse(textwrap.dedent(_pyinspect.getsource(method)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and hasattr(tree.body[0], "body") else []
        body = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(getattr(s, "value", None), ast.Constant))]
        if body and all(isinstance(s, ast.Pass) for s in body):
            out.append(kind)
    return out


def explain_with_times(fn, *args, **kwargs) -> tuple[Explanation, CompileTimes]:
    """``explain`` plus the compile-time table it prints (Dynamo's timers for that run alone) (ch02).

    ``torch._dynamo.explain`` resets Dynamo when it finishes, which clears the timers, so they are
    read from its ``compile_times`` text (what the series quoted: ``_compile.compile_inner``,
    ``bytecode_tracing``, ``build_guards``).
    """
    out = _run_explain(fn, *args, **kwargs)
    times = CompileTimes()
    for line in str(getattr(out, "compile_times", "") or "").splitlines():
        # "name  0.1, 0.2" with tabulate installed, "name, 0.1, 0.2" without (torch's fallback)
        m = re.match(r"^([^\s,]+)[,\s]+([0-9][0-9.,\se+-]*)$", line.strip())
        if m:
            try:
                times.seconds[m.group(1)] = sum(float(v) for v in m.group(2).split(",") if v.strip())
            except ValueError:
                continue
    return _explanation(out), times
