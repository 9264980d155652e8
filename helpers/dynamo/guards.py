"""Guards, cache entries and recompilations of a compiled frame (ch06).

Dynamo keeps, on each code object it compiled, a list of *cache entries*: a guard tree and the
bytecode that calls the compiled graph. These functions read that list (``helpers.dynamo.state.cache_entries``),
evaluate and time the guard trees, and capture the reasons torch logs when a call misses every entry
(through ``helpers.dynamo.logs``). Every private torch access goes through ``helpers.core.private.private`` so a
moved API gives a clear CourseError; all of it works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import inspect as _pyinspect
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..core.private import private, private_step
from .logs import capture_logs
from .state import cache_entries


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
    from ..core import timing

    entry = cache_entries(fn)[0]
    scope = frame_locals(fn, *args, **kwargs)
    check = entry.guard_manager.check
    if not check(scope):
        raise ValueError("the newest cache entry's guards reject these arguments")
    return timing.wall(check, scope, repeats=repeats, device="cpu")


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


def key_phrase(text: str, phrase: str) -> str:
    """``phrase`` if ``text`` contains it, else all of ``text`` (ch06).

    Records a logged reason by the phrase that carries its meaning (the series' wording, e.g.
    ``"size mismatch at index 0. expected 4, actual 8"``): a prefix torch adds (``tensor 'x' ...``)
    leaves the figure unchanged, a reworded reason shows up in full and fails the check.
    """
    return phrase if phrase in text else text


_SUBJECT = re.compile(r"^(?:___check_type_id|___check_obj_id|check_tensor)\((.+?), ")


def guard_subject(check: str) -> str:
    """The value a leaf guard looks at: ``L['items']`` in ``___check_type_id(L['items'], 1403…)`` (ch05)."""
    m = _SUBJECT.match(check.strip())
    return m.group(1) if m else check.strip()


def tensor_layout(check: str) -> str:
    """The ``size=[…], stride=[…]`` part of a ``TENSOR_MATCH`` check ("" if it has none) (ch05)."""
    m = re.search(r"size=\[[^\]]*\], stride=\[[^\]]*\]", check)
    return m.group(0) if m else ""


def guard_checker(fn, index: int = 0):
    """The ``check(locals_dict) -> bool`` of one cache entry's guard tree (``0`` = checked first) (ch06).

    It is called through pybind with a dict, so timing it includes the call and the dict lookups that
    Dynamo's own C++ path (a ``FrameLocalsMapping`` over the frame's slots) does not pay.
    """
    entries = cache_entries(fn)
    if not entries:
        raise ValueError("no cache entry: call the compiled function first")
    return entries[index].guard_manager.check


@dataclass
class OverheadSplit:
    """One guard check against a compiled call's extra time over the plain function, in µs (ch06)."""

    guard_us: float  # median of the rounds
    eager_us: float
    compiled_us: float
    share: float  # median over rounds of guard / (compiled - eager), each round's three timings side by side
    rounds: int  # rounds that counted (compiled slower than eager in that round)

    @property
    def overhead_us(self) -> float:
        return self.compiled_us - self.eager_us


def overhead_split(fn, compiled_fn, *args, rounds: int = 15, target: float = 0.003, **kwargs) -> OverheadSplit:
    """Time ``fn``, ``compiled_fn`` and the guard check of ``fn``'s newest entry in alternating rounds (ch06).

    Each round times the three back to back (the order alternates), so a machine that slows down for
    a while (other programs, a shared GPU) slows all three of that round; the share is the median of
    the rounds' own shares. Give it CPU tensors: guards and Dynamo's overhead are CPU work.
    """
    import statistics

    from ..core.timing import cpu_clock

    clock, _ = cpu_clock()
    check = guard_checker(fn)
    scope = frame_locals(fn, *args, **kwargs)
    if not check(scope):
        raise ValueError("the newest cache entry's guards reject these arguments")
    calls = {"eager": lambda: fn(*args, **kwargs), "compiled": lambda: compiled_fn(*args, **kwargs),
             "guard": lambda: check(scope)}
    inner = {}
    for name, call in calls.items():
        for _ in range(3):
            call()
        t0 = clock()
        call()
        inner[name] = max(1, min(20_000, int(target / max(clock() - t0, 1e-7))))
    per = {name: [] for name in calls}
    shares = []
    for r in range(rounds):
        this = {}
        for name in (list(calls) if r % 2 == 0 else list(calls)[::-1]):
            call, n = calls[name], inner[name]
            t0 = clock()
            for _ in range(n):
                call()
            this[name] = (clock() - t0) / n
            per[name].append(this[name])
        extra = this["compiled"] - this["eager"]
        if extra > 0:
            shares.append(this["guard"] / extra)
    med = {name: statistics.median(v) * 1e6 for name, v in per.items()}
    share = statistics.median(shares) if shares else float("inf")
    return OverheadSplit(med["guard"], med["eager"], med["compiled"], share, len(shares))


@dataclass
class AmbientGuards:
    """The guards every compiled frame gets whatever it reads, as torch's source declares them (ch06)."""

    installer: str  # the function that declares them
    declared: list[str]  # GuardBuilder kinds it declares, in order (some only under a condition)
    no_ops: list[str]  # of those, the kinds whose GuardBuilder method does nothing (``pass``)
    global_state_fields: list[str]  # what one GLOBAL_STATE check compares (GlobalStateGuard's snapshot)


def _is_no_op(method) -> bool:
    import ast
    import textwrap

    tree = ast.parse(textwrap.dedent(_pyinspect.getsource(method)))
    body = tree.body[0].body
    stmts = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return bool(stmts) and all(isinstance(s, ast.Pass) for s in stmts)


@private_step("OutputGraph.init_ambient_guards, GuardBuilder and GlobalStateGuard")
def ambient_guards() -> AmbientGuards:
    """Read which ambient guards Dynamo declares (``OutputGraph.init_ambient_guards``) and which are no-ops (ch06)."""
    import json

    output_graph = private("torch._dynamo.output_graph.OutputGraph")
    builder = private("torch._dynamo.guards.GuardBuilder")
    snapshot = private("torch._C._dynamo.guards.GlobalStateGuard")()
    source = _pyinspect.getsource(output_graph.init_ambient_guards)
    declared = list(dict.fromkeys(re.findall(r"GuardBuilder\.([A-Z_]+)", source)))
    no_ops = [kind for kind in declared if hasattr(builder, kind) and _is_no_op(getattr(builder, kind))]
    state = snapshot.__getstate__()
    fields = sorted(json.loads(state)) if isinstance(state, str) else []
    return AmbientGuards("torch._dynamo.output_graph.OutputGraph.init_ambient_guards", declared, no_ops, fields)


def guard_builder_source(kind: str) -> str:
    """The source of ``GuardBuilder.<kind>``, the method that turns a declared guard into a leaf check (ch06)."""
    import textwrap

    method = getattr(private("torch._dynamo.guards.GuardBuilder"), kind)
    return textwrap.dedent(_pyinspect.getsource(method)).strip()


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


@dataclass
class GuardCensus:
    """One compile's guards, declared and run: ``explain``'s list by kind, and each frame's guard tree (ch03, ch10).

    ``graphs``: graphs Dynamo made; ``declared``: guard kind -> how many ``explain`` lists over all of
    them (``_compile_inner`` in ``convert_frame.py`` hands ``explain`` the guards of every frame that made
    a graph, and only of those); ``ambient``: the kinds ``OutputGraph.init_ambient_guards`` declared here,
    for every graph; ``leaves``: ``(frame, leaves of its cache entry's guard tree)`` for every frame
    given new bytecode, a frame that made no graph included: the checks that run on a call.
    """

    graphs: int
    declared: dict[str, int]
    ambient: list[str]
    leaves: list[tuple[str, int]] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Declared guards, as ``explain`` counts them."""
        return sum(self.declared.values())

    @property
    def per_graph(self) -> list[str]:
        """The kinds declared exactly once per graph, sorted."""
        return sorted(k for k, n in self.declared.items() if n == self.graphs)

    @property
    def extras(self) -> dict[str, int]:
        """The kinds declared another number of times (a guard on a global such as ``print``), by kind."""
        return {k: n for k, n in sorted(self.declared.items()) if n != self.graphs}

    def without(self, *kinds: str) -> int:
        """Declared guards, leaving out every guard of ``kinds``."""
        return sum(n for k, n in self.declared.items() if k not in kinds)

    @property
    def total_leaves(self) -> int:
        """Leaves of every frame's guard tree together."""
        return sum(n for _, n in self.leaves)


def guard_census(fn, *args) -> GuardCensus:
    """Compile ``fn`` from scratch twice (``explain``, then the ``eager`` backend) and take its guards' census (ch03, ch10).

    Prints made by ``fn`` are swallowed. Chapter 2 made the same comparison for one graph
    (``noop_guard_kinds``, ``guard_leaves``); this one adds them up over every graph and frame.
    """
    import contextlib
    import io
    from collections import Counter

    import torch

    from .state import clear_compile_state, explain

    register = private("torch._dynamo.convert_frame.register_bytecode_hook")
    codes: list = []
    with contextlib.redirect_stdout(io.StringIO()):
        report = explain(fn, *args)
        clear_compile_state()
        handle = register(lambda old, new: codes.append(old))
        try:
            torch.compile(fn, backend="eager")(*args)
        finally:
            handle.remove()
    declared = dict(Counter(kind for kind, _ in report.guards))
    ambient = [k for k in ambient_guards().declared if k in declared]
    leaves = [(code.co_name, len(guard_leaves(code, 0))) for code in codes]
    return GuardCensus(report.graph_count, declared, ambient, leaves)


def id_matched_locals(fn) -> list[str]:
    """The locals whose objects ``fn``'s cache entries ``ID_MATCH`` for the recompile limit, sorted (ch11).

    ``GuardBuilder.ID_MATCH`` keeps them in ``guard_manager.id_matched_objs`` (an ``nn.Module`` in a local,
    on torch 2.11–2.15), and ``compute_cache_size`` in ``torch/_dynamo/cache_size.py`` counts toward
    ``recompile_limit`` only the entries whose objects are the current call's; with none, every entry counts.
    """
    names: set[str] = set()
    for entry in cache_entries(fn):
        names.update(getattr(entry.guard_manager, "id_matched_objs", {}) or {})
    return sorted(names)


def gap_words(ours: int, theirs: int, whose: str = "the series'") -> str:
    """A count set beside another in words: "exactly the series' count", "one fewer than …", "3 more than …" (ch03, ch10)."""
    gap = theirs - ours
    if gap == 0:
        return f"exactly {whose} count"
    n = abs(gap)
    return f"{'one' if n == 1 else n} {'fewer' if gap > 0 else 'more'} than {whose} count"
