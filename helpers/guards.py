"""Guards, cache entries and recompilations of a compiled frame (ch06).

Dynamo keeps, on each code object it compiled, a list of *cache entries*: a guard tree and the
bytecode that calls the compiled graph. These functions read that list (``helpers.inspect.cache_entries``),
evaluate and time the guard trees, and capture the reasons torch logs when a call misses every entry
(through ``helpers.logs``). Every private torch access goes through ``helpers.inspect.private`` so a
moved API gives a clear CourseError; all of it works on torch 2.11 and 2.13.
"""
from __future__ import annotations

import inspect as _pyinspect
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from .inspect import cache_entries
from .logs import capture_logs

# ---------------------------------------------------------------- cache entries


def entry_ids(fn) -> list[str]:
    """The compile ids (``frame/entry``, e.g. ``0/2``) of ``fn``'s cache entries, in checking order (ch06)."""
    return [str(e.compile_id) if getattr(e, "compile_id", None) is not None else "?" for e in cache_entries(fn)]


def guard_tree(fn, index: int = 0) -> str:
    """The guard tree of one cache entry (``0`` = checked first), as torch prints it (ch06)."""
    entries = cache_entries(fn)
    if not entries:
        raise ValueError("no cache entry: call the compiled function first")
    return str(entries[index].guard_manager).strip()


_LEAF = re.compile(r"^[| ]*\+- ([A-Z_]+): (.*?)\s*(?:#.*)?$")


def guard_leaves(fn, index: int = 0, *, drop: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The leaf guards of one cache entry as ``(kind, check)`` pairs, source comments cut (ch06)."""
    leaves = []
    for line in guard_tree(fn, index).splitlines():
        m = _LEAF.match(line)
        if m and m.group(1) not in drop:
            leaves.append((m.group(1), m.group(2).strip()))
    return leaves


def frame_locals(fn, *args, **kwargs) -> dict:
    """The local variables Dynamo's guards read for a call ``fn(*args, **kwargs)``: arguments and closure cells (ch06)."""
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)
    sig = _pyinspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    scope = dict(bound.arguments)
    if hasattr(fn, "__self__"):  # a bound method: the frame also has ``self``
        scope = {"self": fn.__self__, **scope}
    func = getattr(fn, "__func__", fn)
    code = func.__code__
    for name, cell in zip(code.co_freevars, func.__closure__ or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return scope


@dataclass
class Verdict:
    """Would a cache entry accept a call? ``reason`` is the first failing guard, as torch words it."""

    entry: str
    passed: bool
    reason: str = ""


def check_entries(fn, *args, **kwargs) -> list[Verdict]:
    """Evaluate every cache entry's guards on a prospective call, without running or compiling it (ch06).

    Run it under the same global state (grad mode, ...) as the call you are asking about.
    """
    scope = frame_locals(fn, *args, **kwargs)
    out = []
    for entry, ident in zip(cache_entries(fn), entry_ids(fn)):
        gm = entry.guard_manager
        verbose = gm.check_verbose if hasattr(gm, "check_verbose") else gm.root.check_verbose
        info = verbose(scope)
        reason = "" if info.result else _clean_reason("; ".join(info.verbose_code_parts))
        out.append(Verdict(ident, bool(info.result), reason))
    return out


def _clean_reason(text: str) -> str:
    """A guard-failure reason without its trailing source comment and padding."""
    text = re.sub(r"\s+#.*$", "", text.strip())
    return re.sub(r"L\['([^']+)'\]", r"\1", text).strip()


def guard_check_time(fn, *args, repeats: int = 20, **kwargs):
    """Time evaluating the newest cache entry's guard tree on a call's locals (a Timing, wall per check) (ch06)."""
    from . import timing

    entry = cache_entries(fn)[0]
    scope = frame_locals(fn, *args, **kwargs)
    check = entry.guard_manager.check
    if not check(scope):
        raise ValueError("the newest cache entry's guards reject these arguments")
    return timing.wall(check, scope, repeats=repeats, device="cpu")


# ---------------------------------------------------------------- logs


@dataclass
class RecompileLog:
    """What torch logged about recompilations while the ``recompile_log()`` context was open."""

    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        """How many calls missed every entry and went to recompile (one refused by the limit included)."""
        return len(self.messages)

    def reasons(self, i: int = -1) -> list[str]:
        """The guard failures of recompilation ``i``: one line per cache entry tried, ``id: reason``."""
        if not self.messages:
            return []
        lines = []
        for line in self.messages[i].splitlines():
            m = re.match(r"^\s*- (\d+/\d+): (.*)$", line)
            if m:
                lines.append(f"{m.group(1)}: {_clean_reason(m.group(2))}")
        return lines

    def first_reason(self, i: int = -1) -> str:
        """The reason the newest entry tried gave for recompilation ``i`` (without the entry id)."""
        r = self.reasons(i)
        return r[0].split(": ", 1)[1] if r else ""

    @property
    def limit_hit(self) -> bool:
        return any("recompile_limit" in w or "cache_size_limit" in w for w in self.warnings)


@contextmanager
def recompile_log():
    """Collect ``TORCH_LOGS="recompiles"`` messages and recompile-limit warnings into a RecompileLog (ch06)."""
    log = RecompileLog()
    with capture_logs("recompiles", loggers=("torch._dynamo.convert_frame",)) as logs:
        try:
            yield log
        finally:
            messages = logs.messages()
            log.messages = [m for m in messages if m.startswith("Recompiling function")]
            log.warnings = [m for m in messages if "limit" in m and not m.startswith("Recompiling")]


@contextmanager
def guard_latency_log():
    """Collect the ``Guard eval latency = … us`` values torch logs once per compile (ch06).

    torch measures one evaluation of the new guard tree right after building it, after flushing the
    CPU caches (``profile_guard_manager``): a cold-cache number.
    """
    values: list[float] = []
    with capture_logs("guards") as logs:
        try:
            yield values
        finally:
            for m in logs.messages("guards"):
                hit = re.search(r"Guard eval latency = ([\d.]+) us", m)
                if hit:
                    values.append(float(hit.group(1)))


def show_tree(fn, index: int = 0, *, width: int = 210,
              drop: tuple[str, ...] = ("DIMENSION_DYNAMIC_MARKING_GUARD",)) -> str:
    """The guard tree of one cache entry, trimmed for reading: long lines cut, ``drop`` kinds left out (ch06)."""
    kept, cut = [], 0
    for line in guard_tree(fn, index).splitlines():
        m = _LEAF.match(line)
        if m and m.group(1) in drop:
            cut += 1
            continue
        line = re.sub(r"\s{2,}#.*$", "", line)  # the source-line comment
        line = re.sub(r", type=<class '[\w.]+'>, tag_safe=\([^)]*\)$", "", line)  # bookkeeping of the manager
        kept.append(line if len(line) <= width else line[: width - 1] + "…")
    if cut:
        kept.append(f"({cut} {'/'.join(drop)} lines left out)")
    return "\n".join(kept)
