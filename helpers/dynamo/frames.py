"""Chapter 3, the frame hook: PEP 523's callback, which frames Dynamo sees, what it skips, and what a
compile costs the first call.
"""
from __future__ import annotations

import contextlib
import functools
import re
import sys
from dataclasses import dataclass, field

from ..core.private import private
from .logs import Logs
from .state import cache_entries


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
