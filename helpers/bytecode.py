"""Bytecode, the frame hook, the instruction translator, VariableTrackers and Sources (ch03-ch05).

The instruction listings here (``instructions``, ``listing``) serve every later chapter that shows
bytecode. Every private TorchDynamo access of chapters 3-5 lives here, each behind one small function
that works on torch 2.11 (Python 3.12, the canonical GPU run), 2.13 and 2.15 (Python 3.11, CPU), imported
through ``helpers.inspect.private`` so a moved API raises a CourseError that names it.
"""
from __future__ import annotations

import collections
import contextlib
import dis
import functools
import re
import sys
from dataclasses import dataclass, field

from .inspect import GraphRecorder, cache_entries, clear_compile_state, private
from .logs import Logs, capture_logs

# ---------------------------------------------------------------- the interpreter


def python_minor() -> str:
    """The running Python as "3.12" (bytecode is a property of the Python version) (ch03)."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


# ---------------------------------------------------------------- code objects and dis

#: Bookkeeping instructions that do no work of the function's own (frame setup, inline caches).
BOOKKEEPING = ("RESUME", "CACHE", "COPY_FREE_VARS", "MAKE_CELL", "NOP", "EXTENDED_ARG")


@dataclass(frozen=True)
class Ins:
    """One bytecode instruction as ``dis`` shows it (cache entries left out) (ch03)."""

    offset: int
    opname: str
    argval: object
    argrepr: str
    arg: int | None = None

    def __str__(self) -> str:
        shown = self.argrepr
        if not shown and self.arg is not None and self.opname.startswith(("BUILD_", "UNPACK_", "SWAP", "COPY")):
            shown = str(self.arg)
        return f"{self.offset:4d} {self.opname:<22} {shown}".rstrip()


def _short(argrepr: str) -> str:
    """Shorten Dynamo's long generated names (``__compiled_fn_1_<uuid>`` → ``__compiled_fn_1_…``)."""
    return re.sub(r"(__compiled_fn_\d+)_[0-9a-f_]{20,}", r"\1_…", argrepr)


def instructions(code, *, bookkeeping: bool = True) -> list[Ins]:
    """The instructions of ``code`` as ``dis`` lists them; ``bookkeeping=False`` leaves out RESUME & co. (ch03)."""
    code = getattr(code, "__code__", code)
    return [Ins(i.offset, i.opname, i.argval, _short(i.argrepr), i.arg) for i in dis.get_instructions(code)
            if bookkeeping or i.opname not in BOOKKEEPING]


def listing(code, *, bookkeeping: bool = True, start: int = 0, stop: int | None = None) -> str:
    """A ``dis`` listing with byte offsets, instructions ``start:stop`` of ``instructions(code)`` (ch03)."""
    ins = instructions(code, bookkeeping=bookkeeping)
    lines = [str(i) for i in ins[start:stop]]
    if start > 0:
        lines.insert(0, f"     … {start} instructions above not shown")
    if stop is not None and stop < len(ins):
        lines.append(f"     … {len(ins) - stop} more instructions not shown")
    return "\n".join(lines)


# ---------------------------------------------------------------- the frame hook (PEP 523)


def set_eval_frame_binding():
    """Dynamo's C switch ``torch._C._dynamo.eval_frame.set_eval_frame`` (shown, never called) (ch03)."""
    return private("torch._C._dynamo.eval_frame.set_eval_frame")


def eval_frame_callback():
    """The Python callback the frame hook calls now (None when no compiled call is running) (ch03)."""
    return private("torch._C._dynamo.eval_frame.get_eval_frame_callback")()


def hook_probe():
    """A probe ``(call, seen)``: each ``call()`` appends the current callback's type name to ``seen`` (ch03).

    The probe is wrapped in ``torch.compiler.disable(recursive=False)``: Dynamo does not trace it (a
    graph break at the call), but it runs with the hook still installed, so it sees what a frame sees.
    """
    import torch

    seen: list[str] = []
    current = private("torch._C._dynamo.eval_frame.get_eval_frame_callback")

    def probe():
        seen.append(type(current()).__name__)

    return torch.compiler.disable(probe, recursive=False), seen


@dataclass
class FrameSeen:
    """One frame the Dynamo callback was offered, and what it decided."""

    name: str
    file: str
    decision: str  # "compiled", "skipped: torch internals", "skipped: skipfiles", "skipped: user code"
    caller: str = ""  # the Python function that called this frame (ch03)
    stack: tuple[str, ...] = ()  # "file:function" of the calling frames, innermost first (ch03)
    strategy: str = ""  # what Dynamo told the C hook to do with this code object, "SKIP/DEFAULT" (ch03)
    reason: str = ""  # why Dynamo skipped it ("frame is in the Dynamo skipfiles list"); empty on torch 2.11 (ch03)

    def within(self, name: str, file: str = "") -> bool:
        """True if this frame is function ``name`` (in a file ending with ``file``) or runs inside it (ch03)."""
        here = f"{self.file}:{self.name}"
        return any(entry.endswith(f":{name}") and entry.rsplit(":", 1)[0].endswith(file)
                   for entry in (here, *self.stack))


@dataclass
class FrameLog:
    """Frames the Dynamo callback saw while ``watch_frames`` was active, in order."""

    frames: list[FrameSeen] = field(default_factory=list)

    def clear(self) -> None:
        self.frames.clear()

    def count(self, decision: str | None = None) -> int:
        return sum(1 for f in self.frames if decision is None or f.decision == decision)

    def table(self) -> str:
        return "\n".join(f"{i:>3}  {f.name:<40} {f.file:<18} {f.decision}" for i, f in enumerate(self.frames, 1))


def _short_file(path: str) -> str:
    parts = path.replace("\\", "/").split("/")
    if "torch" in parts:
        return "torch/" + "/".join(parts[len(parts) - 1 - parts[::-1].index("torch") + 1:])[-30:]
    return parts[-1]


@contextlib.contextmanager
def watch_frames():
    """Record every frame the Dynamo callback is offered, with its decision (ch03).

    Wraps ``torch._dynamo.convert_frame.CatchErrorsWrapper.__call__``, the Python entry the C frame
    hook calls when a frame has no usable cache entry. Frames answered in C (a cache hit, or a code
    object already marked "skip") never reach it, and so are not listed. Each frame also records its
    caller and the ``FrameExecStrategy`` Dynamo returned for it (``cur_action/recursive_action``).
    """
    wrapper_cls = private("torch._dynamo.convert_frame.CatchErrorsWrapper")
    is_skipfile = private("torch._dynamo.trace_rules.check")
    original = wrapper_cls.__call__
    log = FrameLog()

    @functools.wraps(original)
    def spy(self, frame, cache_entry, frame_state, *rest, **kw):
        code = frame.f_code
        # the C hook calls this wrapper before the offered frame runs: the Python frame below us is its caller
        outer, stack = sys._getframe(1), []
        while outer is not None and len(stack) < 16:
            stack.append(f"{_short_file(outer.f_code.co_filename)}:{outer.f_code.co_name}")
            outer = outer.f_back
        result = original(self, frame, cache_entry, frame_state, *rest, **kw)
        if getattr(result, "guarded_code", None) is not None or cache_entries(code):
            decision = "compiled"
        elif is_skipfile(code):
            decision = "skipped: torch internals" if "torch" in code.co_filename else "skipped: skipfiles"
        else:
            decision = "skipped: user code"
        strategy = getattr(result, "frame_exec_strategy", None)
        strategy = (f"{strategy.cur_action.name}/{strategy.recursive_action.name}" if strategy is not None else "")
        log.frames.append(FrameSeen(code.co_name, _short_file(code.co_filename), decision,
                                    stack[0].rsplit(":", 1)[1] if stack else "", tuple(stack), strategy,
                                    getattr(result, "skip_reason", None) or ""))
        return result

    wrapper_cls.__call__ = spy
    try:
        yield log
    finally:
        wrapper_cls.__call__ = original


def compile_inner_seconds() -> list[float]:
    """Seconds of every ``_compile.compile_inner`` so far in this process, one per frame compile (ch03).

    Read from ``torch._dynamo.utils.compilation_time_metrics`` (what ``compile_times()`` prints).
    """
    return list(private("torch._dynamo.utils.compilation_time_metrics").get("_compile.compile_inner", []))


# ---------------------------------------------------------------- the instruction translator


@dataclass
class Step:
    """One instruction the translator executed: opcode, argument, and the symbolic stack before it."""

    opname: str
    arg: str
    stack: list[str]

    def __str__(self) -> str:
        return f"{self.opname:<15} {self.arg:<10} [{', '.join(self.stack)}]"


_TRACE = re.compile(r"^TRACE (\S+) (.*?) \[(.*)\]$")


def split_top(text: str) -> list[str]:
    """Split a comma-separated list at top level (commas inside (), [], {}, <> do not count) (ch04)."""
    items, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        items.append("".join(cur).strip())
    return items


def parse_trace(lines: list[str]) -> list[Step]:
    """Parse ``trace_bytecode`` lines (``TRACE OP ARG [stack]``) into Steps (ch04)."""
    steps = []
    for line in lines:
        m = _TRACE.match(line.strip())
        if m:
            steps.append(Step(m.group(1), m.group(2), split_top(m.group(3))))
    return steps


def short_vt(text: str) -> str:
    """A VariableTracker repr without addresses and long details: ``TorchInGraphFunctionVariable(sin)`` (ch04)."""
    text = re.sub(r"^LazyVariableTracker\(realized: (.*)\)$", r"\1", text.strip())  # used: show what it became
    text = re.sub(r"unrealized: <class '([\w.]+)'>", lambda m: "unrealized: " + m.group(1).split(".")[-1], text)
    text = re.sub(r"<built-in method (\w+) of [^>]*>", r"\1", text)
    text = re.sub(r", kind=[\w.]+", "", text)
    return re.sub(r" at 0x[0-9a-f]+", "", text)


@dataclass
class Trace:
    """What the translator did for one compile: its steps (all frames, inlined ones included) and graphs."""

    steps: list[Step]
    graphs: list  # torch.fx.GraphModule, in compile order
    log: Logs

    def call_nodes(self, i: int = 0) -> list:
        """The ``call_*`` nodes of graph ``i`` (operations; placeholders and output left out)."""
        return [n for n in self.graphs[i].graph.nodes if n.op.startswith("call")]


def trace(fn, *args, artifacts: tuple[str, ...] = (), **kwargs) -> Trace:
    """Compile ``fn`` with a recording backend while capturing ``trace_bytecode`` (ch04)."""
    import torch

    clear_compile_state()
    recorder = GraphRecorder()
    with capture_logs("trace_bytecode", *artifacts) as logs:
        torch.compile(fn, backend=recorder)(*args, **kwargs)
    # a copy: torch._dynamo.reset() calls reset() on every backend it still holds, which empties recorder.graphs
    return Trace(parse_trace(logs.lines("trace_bytecode")), list(recorder.graphs), logs)


@dataclass
class DispatchCensus:
    """The translator's opcode → handler table, counted."""

    slots: int  # length of the table (one slot per possible opcode byte)
    filled: int  # slots for opcodes this Python has
    handlers: list[str]  # opcodes with a real handler method
    placeholders: list[str]  # opcodes mapped to the "Missing bytecode handler" graph break
    python_opcodes: int  # real opcodes in dis.opmap (< 256)
    pseudo_opcodes: int  # compiler pseudo-ops in dis.opmap (>= 256)
    owner: dict[str, str]  # opname → qualified name of its handler, for every handled opcode
    metaclass: str  # the metaclass that builds the table (its name changed between releases)


def dispatch_census(translator: str = "InstructionTranslator") -> DispatchCensus:
    """Count a translator class's ``dispatch_table``: real handlers vs "missing handler" placeholders (ch04).

    ``translator`` names the class in ``torch._dynamo.symbolic_convert`` (default: the one for a
    compiled frame; ``"InliningGeneratorInstructionTranslator"`` traces inlined generators).
    """
    translator = private(f"torch._dynamo.symbolic_convert.{translator}")
    table = translator.dispatch_table
    opname = {v: k for k, v in dis.opmap.items()}
    handlers, placeholders, owner = [], [], {}
    for op, entry in enumerate(table):
        if entry is None:
            continue
        name = opname.get(op, f"<{op}>")
        if isinstance(entry, functools.partial) and getattr(entry.func, "__name__", "") == "_missing":
            placeholders.append(name)
        else:
            handlers.append(name)
            owner[name] = getattr(entry, "__qualname__", type(entry).__name__)
    census = DispatchCensus(len(table), sum(e is not None for e in table), sorted(handlers), sorted(placeholders),
                            sum(v < 256 for v in dis.opmap.values()), sum(v >= 256 for v in dis.opmap.values()),
                            owner, type(translator).__name__)
    return census


#: What the handler table's families are called in the chapter's chart, by opcode name prefix.
FAMILIES = [("load", ("LOAD_",)), ("store / delete", ("STORE_", "DELETE_")),
            ("call / return", ("CALL", "PRECALL", "PUSH_NULL", "KW_NAMES", "RETURN_", "MAKE_FUNCTION")),
            ("stack", ("POP_TOP", "COPY", "SWAP", "ROT_", "DUP_", "NOP", "RESUME", "CACHE", "EXTENDED_ARG")),
            ("jump / loop", ("JUMP", "POP_JUMP", "FOR_ITER", "END_FOR", "GET_ITER")),
            ("build / unpack", ("BUILD_", "UNPACK_", "LIST_", "SET_", "DICT_", "MAP_")),
            ("arithmetic / compare", ("BINARY_", "UNARY_", "COMPARE_", "IS_OP", "CONTAINS_OP", "STORE_SUBSCR")),
            ("instrumented", ("INSTRUMENTED_",)),
            ("exceptions / with / match / import", ("RAISE", "RERAISE", "PUSH_EXC", "POP_EXCEPT", "CHECK_E", "WITH_",
                                                     "BEFORE_WITH", "MATCH_", "IMPORT_", "PREP_RERAISE", "CLEANUP_THROW")),
            ("async / generator", ("ASYNC", "GET_A", "SEND", "YIELD", "END_ASYNC", "BEFORE_ASYNC", "GET_YIELD",
                                   "RETURN_GENERATOR", "GEN_"))]


def family(opname: str) -> str:
    """The family of an opcode for the coverage chart (first matching prefix; "other" if none) (ch04)."""
    for name, prefixes in FAMILIES:
        if opname.startswith(prefixes):
            return name
    return "other"


# ---------------------------------------------------------------- guards, recompiles, sources


@dataclass
class GuardTree:
    """The guard tree Dynamo printed for one compiled frame (the ``guards`` artifact)."""

    text: str

    @property
    def leaves(self) -> list[tuple[str, str]]:
        """``(kind, check)`` for every leaf guard (``+- EQUALS_MATCH: L['n'] == 3``)."""
        out = []
        for line in self.text.splitlines():
            m = re.search(r"\+- ([A-Z][A-Z_]+)(?::\s*(.*?))?\s*(?:#.*)?$", line)
            if m:
                out.append((m.group(1), (m.group(2) or "").strip()))
        return out

    def kinds(self) -> collections.Counter:
        return collections.Counter(kind for kind, _ in self.leaves)

    def checks(self, kind: str) -> list[str]:
        return [check for k, check in self.leaves if k == kind]

    @property
    def latency_us(self) -> float | None:
        """The "Guard eval latency = … us" Dynamo measured for this tree, if it printed one."""
        m = re.search(r"Guard eval latency = ([\d.]+) us", self.text)
        return float(m.group(1)) if m else None


def guard_trees(fn, *args, dynamic=None, **kwargs) -> list[GuardTree]:
    """Compile ``fn`` (backend "eager") and return the guard tree of each compiled frame (ch05)."""
    import torch

    clear_compile_state()
    with capture_logs("guards") as logs:
        torch.compile(fn, backend="eager", dynamic=dynamic)(*args, **kwargs)
    return _split_trees(logs)


def _split_trees(logs: Logs) -> list[GuardTree]:
    trees: list[str] = []
    for name, msg in logs.records:
        if name != "guards":
            continue
        if "TREE_GUARD_MANAGER" in msg:
            trees.append(msg)
        elif "Guard eval latency" in msg and trees:  # printed as its own message after the tree
            trees[-1] += "\n" + msg
    return [GuardTree(t) for t in trees]


def recompile_reasons(logs: Logs) -> list[list[str]]:
    """For each recompile in a captured ``recompiles`` log, the failed guards (``0/0: n == 3``) (ch05)."""
    out = []
    for name, msg in logs.records:
        if name != "recompiles" or "Recompiling" not in msg:
            continue
        out.append([re.sub(r"\s+#.*$", "", m.group(1)).strip()
                     for m in re.finditer(r"^\s*- (\d+/\d+: .*)$", msg, re.M)])
    return out


def source_name(source) -> str:
    """The guard-language name of a Source (``L['x']``); ``name`` is a method or a property by version (ch05)."""
    name = source.name
    return name() if callable(name) else name


def local_source(name: str):
    """``LocalSource(name)``: a local variable of the frame, printed ``L['name']`` (ch05)."""
    return private("torch._dynamo.source.LocalSource")(name)


def global_source(name: str):
    """``GlobalSource(name)``: a global of the frame's module, printed ``G['name']`` (ch05)."""
    return private("torch._dynamo.source.GlobalSource")(name)


def attr_source(base, attr: str):
    """``AttrSource(base, attr)``: ``base.attr`` (ch05)."""
    return private("torch._dynamo.source.AttrSource")(base, attr)


def item_source(base, index):
    """``GetItemSource(base, index)``: ``base[index]`` (ch05)."""
    return private("torch._dynamo.source.GetItemSource")(base, index)


def input_kinds(gm) -> dict[str, str]:
    """What each input of a Dynamo graph was while tracing: ``{"L_s_": "Tensor float64 []", "L_n_": "SymInt"}`` (ch05)."""
    out = {}
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if hasattr(value, "dtype") and hasattr(value, "shape"):
            out[str(node.target)] = f"Tensor {str(value.dtype).replace('torch.', '')} {list(value.shape)}"
        else:
            out[str(node.target)] = type(value).__name__
    return out


# ---------------------------------------------------------------- chapters 3-4: the hook's decisions, the table's gaps


def skiplisted_stdlib() -> list[str]:
    """Standard-library modules whose frames Dynamo always skips (``trace_rules.BUILTIN_SKIPLIST``) (ch03)."""
    return sorted(m.__name__ for m in private("torch._dynamo.trace_rules.BUILTIN_SKIPLIST"))


def callback_while_compiling(fn, *args) -> str:
    """Type name of the frame hook's callback while Dynamo compiles ``fn`` (read inside the backend) (ch03)."""
    import torch

    seen: list[str] = []
    current = private("torch._C._dynamo.eval_frame.get_eval_frame_callback")

    def backend(gm, example_inputs):
        seen.append(type(current()).__name__)
        return gm.forward

    torch.compile(fn, backend=backend)(*args)  # a fresh wrapper compiles on its first call
    return seen[0]


def profiled_events(fn, *args) -> list[str]:
    """Names of the CPU profiler events of one call of ``fn`` (public ``torch.profiler``) (ch03).

    The profiler's own start/stop chatter (C++ lines on stderr, a warning on some builds) is muted.
    """
    import os
    import warnings

    import torch

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(devnull.fileno(), 2)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                fn(*args)
            events = sorted({e.name for e in prof.events()})
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return events


@dataclass
class BreakReport:
    """One graph break as the ``graph_breaks`` log prints it, split into its parts (ch03)."""

    reason: str  # the kind of break (its gb_type): "Data-dependent branching", "Missing bytecode handler"
    explanation: str
    hints: list[str]
    context: str  # the developer debug context: "attempted to jump with TensorVariable()"
    outcome: str = ""  # what Dynamo did when it could not resume ("... falling back to eager."), else ""


def break_reports(logs: Logs) -> list[BreakReport]:
    """Parse every message of a captured ``graph_breaks`` log into a BreakReport (ch03)."""
    out = []
    for msg in logs.messages("graph_breaks"):
        head = re.search(r"Graph Break Reason:\s*(.*)", msg)
        reason, outcome = (head.group(1).strip() if head else ""), ""
        if reason.endswith("Graph break encountered:"):  # Dynamo gave up on resuming: the kind follows
            outcome = reason[: -len("Graph break encountered:")].strip()
            after = msg[head.end():].strip().splitlines()
            reason = after[0].strip() if after else ""
        explanation = re.search(r"Explanation:\s*(.*)", msg)
        context = re.search(r"Developer debug context:\s*(.*)", msg)
        out.append(BreakReport(reason, explanation.group(1).strip() if explanation else "",
                               [h.strip() for h in re.findall(r"^\s*Hint:\s*(.*)$", msg, re.M)],
                               context.group(1).strip() if context else "", outcome))
    return out


#: Opcodes ``_cached_cleaned_instructions`` rewrites before tracing starts (bytecode_transformation.py):
#: ``strip_extended_args``, ``remove_jump_if_none``, ``remove_binary_store_slice`` (ch04).
REWRITTEN_BEFORE_TRACING = re.compile(r"^(EXTENDED_ARG|POP_JUMP_(FORWARD_|BACKWARD_)?IF_(NOT_)?NONE|BINARY_SLICE|STORE_SLICE)$")


def placeholder_kinds(census: DispatchCensus | None = None) -> dict[str, list[str]]:
    """Sort the translator's placeholder slots by why they hold no handler (ch04).

    ``instrumented``: ``INSTRUMENTED_*``, only in code ``sys.monitoring`` watches; ``rewritten``: removed
    before tracing; ``generator``: handled by ``InliningGeneratorInstructionTranslator`` (inlined
    generators); ``unsupported``: the rest, a "Missing bytecode handler" graph break.
    """
    census = census or dispatch_census()
    generator = dispatch_census("InliningGeneratorInstructionTranslator")
    kinds: dict[str, list[str]] = {"instrumented": [], "rewritten": [], "generator": [], "unsupported": []}
    for op in census.placeholders:
        if op.startswith("INSTRUMENTED_"):
            kinds["instrumented"].append(op)
        elif REWRITTEN_BEFORE_TRACING.match(op):
            kinds["rewritten"].append(op)
        elif op in generator.handlers:
            kinds["generator"].append(op)
        else:
            kinds["unsupported"].append(op)
    return kinds


@dataclass
class FirstCompile:
    """One fresh compile of a function on its first call: graphs, attempts, breaks and times (ch04)."""

    graphs: list  # torch.fx.GraphModule, in compile order
    attempts: int  # tracing attempts of the frames compiled (a restart after a failed speculation adds one)
    breaks: list[BreakReport]  # what the graph_breaks log said
    wall_s: float  # the whole first call: tracing, guards, bytecode, the (recording) backend, the run
    tracing_s: float  # Dynamo's own "bytecode_tracing" timer: the translator walking the bytecode
    compile_s: float  # Dynamo's "_compile.compile_inner" timer: everything Dynamo did for the frames
    log: str = ""  # the graph_breaks log as printed

    def call_nodes(self, i: int = 0) -> list:
        """The ``call_*`` nodes of graph ``i``."""
        return [n for n in self.graphs[i].graph.nodes if n.op.startswith("call")]


def first_compile(fn, *args, **kwargs) -> FirstCompile:
    """Compile ``fn`` afresh with a recording backend and watch its first call (ch04).

    The compile state is cleared before the clock starts, and only the ``graph_breaks`` log is on (it
    prints nothing unless a graph breaks). Times come from ``perf_counter`` (wall) and from
    ``torch._dynamo.utils.compilation_time_metrics`` (``bytecode_tracing``, ``_compile.compile_inner``,
    ``compile_attempt_N``), summed over the frames this call compiled.
    """
    import time

    import torch

    metrics = private("torch._dynamo.utils.compilation_time_metrics")
    clear_compile_state()
    before = {k: len(v) for k, v in metrics.items()}
    recorder = GraphRecorder()
    compiled = torch.compile(fn, backend=recorder)
    with capture_logs("graph_breaks") as logs:
        start = time.perf_counter()
        compiled(*args, **kwargs)
        wall = time.perf_counter() - start
    new = {k: v[before.get(k, 0):] for k, v in metrics.items()}
    attempts = sum(len(v) for k, v in new.items() if re.fullmatch(r"compile_attempt_\d+", k))
    # a copy: torch._dynamo.reset() calls reset() on every backend it still holds, which empties recorder.graphs
    return FirstCompile(list(recorder.graphs), attempts, break_reports(logs), wall,
                        sum(new.get("bytecode_tracing", [])), sum(new.get("_compile.compile_inner", [])),
                        logs.text("graph_breaks"))
