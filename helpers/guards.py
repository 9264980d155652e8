"""Guards, cache entries and recompilations of a compiled frame (ch06).

Dynamo keeps, on each code object it compiled, a list of *cache entries*: a guard tree and the
bytecode that calls the compiled graph. These functions read that list, evaluate and time the guard
trees, and capture the reasons torch logs when a call misses every entry. Every private torch access
goes through ``helpers.inspect.private`` so a moved API gives a clear CourseError; all of it works on
torch 2.11 and 2.13.
"""
from __future__ import annotations

import inspect as _pyinspect
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from .inspect import private

# ---------------------------------------------------------------- cache entries


def code_of(fn):
    """The code object Dynamo attaches cache entries to, for a function, method or module (ch06)."""
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
    """Dynamo's cache entries for ``fn``'s code object, in the order the next call checks them (ch06).

    Uses ``torch._C._dynamo.eval_frame._debug_get_cache_entry_list`` (a debug binding, on 2.11 and 2.13).
    """
    get = private("torch._C._dynamo.eval_frame._debug_get_cache_entry_list")
    return list(get(code_of(fn)))


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


class _Collector(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        try:
            self.messages.append(record.getMessage())
        except Exception:  # pragma: no cover - a malformed record should never break a chapter
            pass


def _artifact_loggers(artifact: str) -> list[logging.Logger]:
    """The logger objects torch uses for one logging artifact (e.g. ``recompiles``)."""
    suffix = f".__{artifact}"
    names = set()
    try:
        names |= {q for q in private("torch._logging._internal.log_registry").artifact_log_qnames
                  if q.endswith(suffix)}
    except Exception:
        pass
    names |= {n for n in logging.root.manager.loggerDict if n.endswith(suffix)}
    return [logging.getLogger(n) for n in sorted(names)]


@contextmanager
def capture_artifact(*artifacts: str, loggers: tuple[str, ...] = ()):
    """Collect the messages of torch logging artifacts (``recompiles``, ``guards``...) in-process (ch06).

    Like ``TORCH_LOGS="recompiles"`` but into a list instead of stderr. ``loggers`` adds plain
    logger names (e.g. ``torch._dynamo.convert_frame`` for the recompile-limit warning).
    Uses ``torch._logging._internal.log_state``.
    """
    _dynamo_config()  # importing Dynamo registers its artifact loggers
    log_state = private("torch._logging._internal.log_state")
    collector = _Collector()
    added = [a for a in artifacts if not log_state.is_artifact_enabled(a)]
    for a in added:
        log_state.enable_artifact(a)
    saved = []
    targets = [lg for a in artifacts for lg in _artifact_loggers(a)] + [logging.getLogger(n) for n in loggers]
    for lg in targets:
        saved.append((lg, lg.level, lg.propagate))
        lg.setLevel(logging.DEBUG if lg.name.split(".")[-1].startswith("__") else min(lg.level or 30, 30))
        lg.propagate = False
        lg.addHandler(collector)
    try:
        yield collector.messages
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(collector)
            lg.setLevel(level)
            lg.propagate = propagate
        for a in added:
            log_state.artifact_names.discard(a)


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
    with capture_artifact("recompiles", loggers=("torch._dynamo.convert_frame",)) as messages:
        try:
            yield log
        finally:
            log.messages = [m for m in messages if m.startswith("Recompiling function")]
            log.warnings = [m for m in messages if "limit" in m and not m.startswith("Recompiling")]


@contextmanager
def guard_latency_log():
    """Collect the ``Guard eval latency = … us`` values torch logs once per compile (ch06).

    torch measures one evaluation of the new guard tree right after building it, after flushing the
    CPU caches (``profile_guard_manager``): a cold-cache number.
    """
    values: list[float] = []
    with capture_artifact("guards") as messages:
        try:
            yield values
        finally:
            for m in messages:
                hit = re.search(r"Guard eval latency = ([\d.]+) us", m)
                if hit:
                    values.append(float(hit.group(1)))


# ---------------------------------------------------------------- config


def _dynamo_config():
    return private("torch._dynamo.config")


def recompile_limit() -> int:
    """``torch._dynamo.config.recompile_limit`` (``cache_size_limit`` on older torch) (ch06)."""
    cfg = _dynamo_config()
    return int(getattr(cfg, "recompile_limit", None) or cfg.cache_size_limit)


@contextmanager
def recompile_limit_set(limit: int):
    """Temporarily set Dynamo's per-code-object recompile limit (ch06)."""
    cfg = _dynamo_config()
    name = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
    saved = getattr(cfg, name)
    setattr(cfg, name, limit)
    try:
        yield
    finally:
        setattr(cfg, name, saved)


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
