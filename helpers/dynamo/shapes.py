"""Symbolic shapes: follow recompiles call by call, read shape guards, mark dimensions dynamic (ch11).

Every private torch access of chapter 11 goes through ``helpers.core.private.private`` here (or through
``helpers.dynamo.graph_breaks``, ``helpers.dynamo.config`` and ``helpers.dynamo.logs``): ``torch._dynamo.mark_dynamic`` /
``maybe_mark_dynamic``, ``torch._dynamo.config`` (``assume_static_by_default``,
``automatic_dynamic_shapes``, ``recompile_limit``), ``torch._dynamo.decorators.mark_unbacked``,
``torch.fx.experimental._config.backed_size_oblivious``, the frame counters and the ``recompiles`` /
``guards`` logging artifacts. All exist on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass, field

from ..core.private import private
from .config import dynamo_setting
from .graph_breaks import reset_counters
from .logs import capture_logs, silence


def mark_dynamic(t, dim: int, *, min: int | None = None, max: int | None = None):
    """``torch._dynamo.mark_dynamic``: insist that ``t``'s dimension ``dim`` stays symbolic (ch11).

    Compiling code that would specialise it raises ``ConstraintViolationError``; ``min``/``max``
    declare a range the compiled code must accept.
    """
    kwargs = {k: v for k, v in (("min", min), ("max", max)) if v is not None}
    private("torch._dynamo.mark_dynamic")(t, dim, **kwargs)
    return t


def maybe_mark_dynamic(t, dim: int):
    """``torch._dynamo.maybe_mark_dynamic``: a hint to start ``dim`` symbolic, without the error (ch11)."""
    private("torch._dynamo.maybe_mark_dynamic")(t, dim)
    return t


def shape_policy() -> dict:
    """Dynamo's defaults that decide static vs symbolic sizes, and the recompile limit (ch11)."""
    return {name: dynamo_setting(name)
            for name in ("assume_static_by_default", "automatic_dynamic_shapes", "recompile_limit")}


@dataclass
class Call:
    """One call of a compiled function: its batch size, whether it compiled, and why."""

    size: int
    compiled: bool
    reasons: list[str] = field(default_factory=list)
    error: str | None = None  # the exception's class name, if the call raised


def _reasons(messages: list[str]) -> list[str]:
    out = []
    for m in messages:
        for line in m.splitlines():
            line = line.strip()
            if line.startswith("- ") and ":" in line:
                out.append(line[2:].split("  #")[0].strip())
    return out


def follow_calls(fn, sizes, make_args, *, dynamic=None, mark=None, backend="eager") -> list[Call]:
    """Compile ``fn`` once and call it with ``make_args(size)`` for each size; record compiles and reasons (ch11).

    ``dynamic`` is passed to ``torch.compile``; ``mark(args)`` (optional) runs on each call's arguments
    first (e.g. to ``mark_dynamic`` them). A call "compiled" if Dynamo converted a frame during it; a call
    that raised records the exception's class name in ``error`` and the run goes on.
    """
    import torch

    register = private("torch._dynamo.convert_frame.register_bytecode_hook")
    reset_counters()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    converted: list[str] = []
    handle = register(lambda old, new: converted.append(old.co_name))
    calls = []
    try:
        # silence: Dynamo's recompile-limit warning, which the chapter reports itself, and the guard
        # builder's log of a ConstraintViolationError, which the call records in `error`
        with capture_logs("recompiles") as logs, silence("torch._dynamo", level=logging.ERROR), \
                silence("torch._guards"):
            for size in sizes:
                args = make_args(size)
                if mark is not None:
                    mark(args)
                before, seen = len(converted), len(logs.records)
                try:
                    compiled(*args)
                    error = None
                except Exception as exc:  # e.g. ConstraintViolationError under mark_dynamic: recorded, shown
                    error = type(exc).__name__
                calls.append(Call(size, len(converted) > before, _reasons([m for _, m in logs.records[seen:]]), error))
    finally:
        handle.remove()
    return calls


def compiles(calls: list[Call]) -> int:
    """How many of the calls compiled (ch11)."""
    return sum(c.compiled for c in calls)


@dataclass
class GuardLog:
    """The ``guards`` log of one or more compiles: the printed guard trees and latencies."""

    lines: list[str]

    @property
    def latencies_us(self) -> list[float]:
        """``Guard eval latency = X us`` values, one per compile, in order."""
        return [float(m.group(1)) for line in self.lines
                if (m := re.search(r"Guard eval latency = ([\d.]+) us", line))]

    def tensor_match(self, name: str = "x") -> list[str]:
        """The TENSOR_MATCH guards of local ``name``, trimmed to dtype, size and stride."""
        out = []
        for line in self.lines:
            if "TENSOR_MATCH" in line and f"L['{name}']" in line:
                m = re.search(r"(torch\.\w+).*?(size=\[[^\]]*\]), (stride=\[[^\]]*\])", line)
                out.append(f"TENSOR_MATCH L['{name}']: " + (", ".join(m.groups()) if m else line.strip()))
        return out

    def shape_guards(self) -> list[str]:
        """The symbolic-shape guards (``LAMBDA_GUARD`` lines that mention a size or stride), comments cut."""
        out = []
        for line in self.lines:
            if "LAMBDA_GUARD" in line and (".size()" in line or ".stride()" in line):
                out.append(line.split("LAMBDA_GUARD:", 1)[1].split("  #")[0].strip())
        return out

    def mentions(self, text: str) -> bool:
        return any(text in line for line in self.lines)


def guard_log(fn, *arg_lists, dynamic=None, backend="eager") -> list[GuardLog]:
    """Compile ``fn`` and call it with each argument tuple; return one ``GuardLog`` per call (ch11)."""
    import torch

    reset_counters()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    out = []
    with capture_logs("guards", "recompiles") as logs:
        for args in arg_lists:
            seen = len(logs.records)
            compiled(*args)
            out.append(GuardLog([line for _, m in logs.records[seen:] for line in m.splitlines()]))
    return out


def guard_range(reason: str) -> tuple[int | None, int | None]:
    """``(low, high)`` of a guard such as ``2 <= x.size()[0] <= 10`` (None where a side is open) (ch11)."""
    text = reason.split("#")[0]
    lo = re.search(r"(-?\d+)\s*<=\s*[A-Za-z_L]", text)
    hi = re.search(r"\]\s*<=\s*(-?\d+)", text)
    return (int(lo.group(1)) if lo else None, int(hi.group(1)) if hi else None)


def compile_error(fn, *args, backend="eager", **compile_kwargs):
    """Compile and call ``fn``; return the exception it raised, or None. Dynamo's own error log is muted (ch11)."""
    import torch

    reset_counters()
    try:
        with silence("torch._guards"):
            torch.compile(fn, backend=backend, **compile_kwargs)(*args)
        return None
    except Exception as exc:  # the chapter shows the exception, whatever its class
        return exc


def symbolic_inputs(gm) -> list[str]:
    """Placeholders of an FX graph that are symbolic integers (``Sym(s…)``), in order (ch11)."""
    import torch

    return [n.name for n in gm.graph.nodes
            if n.op == "placeholder" and isinstance(n.meta.get("example_value"), torch.SymInt)]


def node_types(gm) -> list[tuple[str, str]]:
    """``(node name, type)`` for each node, where the type is what ``print_readable`` annotates (ch11)."""
    import torch

    out = []
    for n in gm.graph.nodes:
        v = n.meta.get("example_value")
        if isinstance(v, torch.Tensor):
            text = f"{str(v.dtype).replace('torch.', '')}{list(v.shape)}"
        elif isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            text = f"Sym({v})"
        elif v is None:
            continue
        else:
            text = type(v).__name__
        out.append((n.name, text))
    return out


def unbacked_symbols(gm) -> list[str]:
    """Names of unbacked symbols (``u0``, ``zuf0`` …: values known only at run time) in an FX graph (ch11)."""
    import torch

    names = set()
    for n in gm.graph.nodes:
        v = n.meta.get("example_value")
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            names |= {str(s) for s in v.node.expr.free_symbols if re.fullmatch(r"(u|zuf|zuh)\d+", str(s))}
    return sorted(names)


def mark_unbacked(t, dim: int):
    """``torch._dynamo.decorators.mark_unbacked``: make ``dim`` an unbacked symbol from the first call (ch11).

    An unbacked size has no hint, so Dynamo cannot specialise it on 0 or 1 (or any value): sizes 0 and
    1 share the one graph, at the price of reasoning without an example value.
    """
    private("torch._dynamo.decorators.mark_unbacked")(t, dim)
    return t


@contextlib.contextmanager
def backed_size_oblivious(enabled: bool = True):
    """Set ``torch.fx.experimental._config.backed_size_oblivious`` for the block (ch11).

    Backed size symbols then get the range ``[0, inf]`` and size-oblivious reasoning, so sizes 0 and 1
    need no entries of their own; the setting is marked experimental (meant for export).
    """
    config = private("torch.fx.experimental._config")
    with config.patch(backed_size_oblivious=enabled):
        yield


def readable_types(gm) -> dict[str, str]:
    """Node name → the type ``print_readable`` writes (``"f32[2*s0, (s1//2)]"``), symbols renamed (ch11).

    Size symbols (``s77``, ``s27``) are renamed ``s0``, ``s1``, … in the order the graph takes them as
    inputs, so the text survives torch's renaming of symbols between releases.
    """
    text = gm.print_readable(print_output=False)
    head = re.search(r"def forward\(self, (.*?)\):", text)
    order = re.findall(r'\b(s\d+): "Sym\(\1\)"', head.group(1)) if head else []
    rename = {name: f"s{i}" for i, name in enumerate(order)}
    out = {}
    for m in re.finditer(r'^\s+(\w+): "([^"]+)" = ', text, re.M):
        out[m.group(1)] = re.sub(r"\bs\d+\b", lambda s: rename.get(s.group(0), s.group(0)), m.group(2))
    return out


def node_ops(gm) -> list[tuple[str, str]]:
    """``(FX op, target)`` of each node that computes, e.g. ``("call_method", "sum")`` (ch11).

    ``explain``'s op count counts only ``call_function`` nodes (``_explain_graph_detail`` in
    ``torch/_dynamo/backends/debugging.py``), so a ``call_method`` such as ``x.sum()`` adds nothing.
    """
    out = []
    for n in gm.graph.nodes:
        if n.op in ("call_function", "call_method", "call_module"):
            target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))
            out.append((n.op, target))
    return out


def size_equalities(fn) -> list[int]:
    """How many guards of each cache entry of ``fn`` equate two sizes (duck sizing), newest entry first (ch11)."""
    from .guards import guard_leaves
    from .state import cache_entries

    return [sum(1 for kind, check in guard_leaves(fn, i) if kind == "LAMBDA_GUARD"
                and re.fullmatch(r"\S+\.size\(\)\[\d+\] == \S+\.size\(\)\[\d+\]", check))
            for i in range(len(cache_entries(fn)))]
