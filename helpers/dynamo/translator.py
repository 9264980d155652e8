"""Chapter 4, the instruction translator: Dynamo's symbolic interpreter traced step by step, its opcode
handler table counted, and what the first compile does.
"""
from __future__ import annotations

import dis
import functools
import re
from dataclasses import dataclass

from ..core.private import private
from .frames import BreakReport, break_reports
from .logs import Logs, capture_logs
from .state import GraphRecorder, clear_compile_state


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
