"""Dynamo's compile state, read and reset: the one module every Dynamo chapter uses (ch01-ch11).

``clear_compile_state`` forgets compiled frames, ``fresh_compile_cache`` gives a block an empty on-disk
cache too (ch02, ch22, ch24); ``GraphRecorder`` / ``capture_graphs`` record the FX graphs
Dynamo hands a backend; ``cache_entries`` / ``transformed_code`` read what Dynamo stores on a code object
(ch03, ch06); ``explain`` reports graphs and breaks as plain data (ch01, ch10). Works on torch 2.11, 2.13
and 2.15.
"""
from __future__ import annotations

import os
import re
import tempfile
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import CourseError, cache_root, use_cache_dir
from ..core.private import private


def clear_compile_state() -> None:
    """Forget every compiled frame and in-memory Inductor module (the on-disk cache stays)."""
    private("torch._dynamo.reset")()
    try:
        private("torch._inductor.utils.clear_caches")()
    except CourseError:
        pass  # older/newer torch: reset() alone is enough for the course's experiments


@contextmanager
def fresh_compile_cache(prefix: str = "course_cold_"):
    """A brand-new, empty Inductor/Triton cache for the block, for measuring cold compiles (ch02).

    Compiled frames and in-memory modules are forgotten on entry and exit, and the caller's cache
    variables are restored after. Inductor's precompiled C++ headers live under $TMPDIR (the runner
    gives each run its own), not in this cache: a 'cold' CPU compile here excludes that one-off cost
    once an earlier compile of the run has built them.
    """
    saved = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=prefix, dir=root) as tmp:
        use_cache_dir(tmp)
        clear_compile_state()
        try:
            yield Path(tmp)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            clear_compile_state()


def counters() -> dict:
    """A copy of Dynamo's event counters (``torch._dynamo.utils.counters``) as plain dicts."""
    return {k: dict(v) for k, v in private("torch._dynamo.utils.counters").items()}


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
