"""Graph breaks: count compiles and restarts, capture TORCH_LOGS in-process, patch Dynamo settings (ch10).

Every private torch access of chapter 10 goes through ``helpers.inspect.private`` here:
``torch._dynamo.config`` (``patch``, ``reorderable_logging_functions``, ``capture_scalar_outputs``),
``torch._dynamo.utils`` (``counters``, ``compilation_time_metrics``) and ``torch._logging.set_logs``.
All of them exist on torch 2.11 and 2.13. Chapter 11 reuses ``dynamo_config`` and ``capture_logs``.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
from dataclasses import dataclass, field

from .env import CourseError
from .inspect import clear_compile_state, private

# ---------------------------------------------------------------- Dynamo settings


@contextlib.contextmanager
def dynamo_config(**flags):
    """Temporarily set ``torch._dynamo.config`` flags, e.g. ``dynamo_config(capture_scalar_outputs=True)`` (ch10).

    Raises a CourseError naming the flag if this torch does not have it.
    """
    config = private("torch._dynamo.config")
    missing = [k for k in flags if not hasattr(config, k)]
    if missing:
        import torch

        raise CourseError(f"torch {torch.__version__} has no Dynamo setting {', '.join(missing)}; "
                          "the course is tested on torch 2.11 and 2.13.")
    with config.patch(**flags):
        yield


def dynamo_setting(name: str):
    """The current value of one ``torch._dynamo.config`` flag (ch10)."""
    config = private("torch._dynamo.config")
    if not hasattr(config, name):
        raise CourseError(f"this torch has no Dynamo setting {name!r}")
    return getattr(config, name)


def reorderable(*functions):
    """Context manager: let Dynamo move calls of ``functions`` (e.g. ``print``) after the graph (ch10).

    Sets ``torch._dynamo.config.reorderable_logging_functions``; the calls then run after the graph
    instead of breaking it.
    """
    current = set(dynamo_setting("reorderable_logging_functions"))
    return dynamo_config(reorderable_logging_functions=current | set(functions))


# ---------------------------------------------------------------- compile statistics


@dataclass
class CompileStats:
    """What one compiled call cost Dynamo: frames converted, graphs, restarts, resume functions."""

    frames: int
    graphs: int
    restarts: int
    frame_names: list[str] = field(default_factory=list)
    resume_functions: list[str] = field(default_factory=list)
    break_reasons: list[str] = field(default_factory=list)
    result: object = None


def reset_counters() -> None:
    """Forget compiled code, Dynamo's event counters and its compile-time metrics (ch10)."""
    clear_compile_state()
    private("torch._dynamo.utils.counters").clear()
    private("torch._dynamo.utils.compilation_time_metrics").clear()


def read_counters(result=None, frame_names: list[str] | None = None) -> CompileStats:
    """Read Dynamo's counters into a ``CompileStats`` (call ``reset_counters`` before the run) (ch10).

    ``frame_names`` are the frames that got new bytecode; without them the frame count falls back to
    Dynamo's ``frames/ok`` counter, which also counts frames it looked at and left alone.
    """
    counters = private("torch._dynamo.utils.counters")
    metrics = private("torch._dynamo.utils.compilation_time_metrics")
    restarts = sum(len(v) for k, v in metrics.items() if re.fullmatch(r"compile_attempt_[1-9]\d*", k))
    frames = len(frame_names) if frame_names is not None else int(counters["frames"].get("ok", 0))
    return CompileStats(
        frames=frames,
        graphs=int(counters["stats"].get("unique_graphs", 0)),
        restarts=restarts,
        frame_names=list(frame_names or []),
        resume_functions=sorted(counters["resumes"]),
        break_reasons=[first_line(r) for r in counters["graph_break"]],
        result=result,
    )


def compile_stats(fn, *args, backend="eager", **compile_kwargs) -> CompileStats:
    """Compile ``fn`` from scratch, call it once, and count what Dynamo did (ch10).

    ``frames``: frames Dynamo gave new bytecode (the function and every resume function; frames it only
    looked at, such as a notebook's output stream called by ``print``, are not counted); ``graphs``:
    graphs handed to the backend; ``restarts``: frames whose tracing started over after a graph break.
    """
    import torch

    register = private("torch._dynamo.convert_frame.register_bytecode_hook")
    reset_counters()
    names: list[str] = []
    handle = register(lambda old, new: names.append(old.co_name))
    try:
        result = torch.compile(fn, backend=backend, **compile_kwargs)(*args)
    finally:
        handle.remove()
    return read_counters(result, names)


def first_line(text: str) -> str:
    """The first non-empty line of a (graph-break) message (ch10)."""
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


# ---------------------------------------------------------------- TORCH_LOGS, in-process


@dataclass
class LogCapture:
    """Log records captured from torch's logging artifacts (what ``TORCH_LOGS`` would print)."""

    records: list[tuple[str, str]] = field(default_factory=list)  # (artifact, message)

    def messages(self, artifact: str | None = None) -> list[str]:
        return [m for a, m in self.records if artifact is None or a == artifact]

    def lines(self, artifact: str | None = None) -> list[str]:
        return [line for m in self.messages(artifact) for line in m.splitlines()]


class _Collector(logging.Handler):
    def __init__(self, capture: LogCapture):
        super().__init__(logging.DEBUG)
        self.capture = capture

    def emit(self, record):
        name = record.name
        artifact = name.rsplit(".__", 1)[1] if ".__" in name else name
        try:
            self.capture.records.append((artifact, record.getMessage()))
        except Exception:  # a record that cannot format itself is not worth failing a chapter for
            pass


@contextlib.contextmanager
def capture_logs(*artifacts: str, quiet: bool = True):
    """Switch on torch logging artifacts (``"graph_breaks"``, ``"recompiles"``, ``"guards"``) and collect them (ch10).

    The in-process equivalent of ``TORCH_LOGS="graph_breaks,..."``, through ``torch._logging.set_logs``.
    With ``quiet`` the lines are only collected, not also printed to stderr. Yields a ``LogCapture``.
    """
    set_logs = private("torch._logging.set_logs")
    capture = LogCapture()
    collector = _Collector(capture)
    set_logs(**{a: True for a in artifacts})
    # torch gives each of its top loggers a stderr handler and stops propagation there, so the
    # collector goes next to every such handler (a record reaches exactly one of them).
    names = ["torch", *[n for n in logging.root.manager.loggerDict if n.startswith("torch")]]
    hosts = [logging.getLogger(n) for n in dict.fromkeys(names)
             if any(type(h) is logging.StreamHandler for h in logging.getLogger(n).handlers)]
    muted = []
    sink = io.StringIO()
    for logger in hosts:
        logger.addHandler(collector)
        if quiet:
            for h in logger.handlers:
                if type(h) is logging.StreamHandler:  # not torch's trace/file handlers
                    muted.append((h, h.setStream(sink)))
    try:
        yield capture
    finally:
        for logger in hosts:
            logger.removeHandler(collector)
        for h, stream in muted:
            if stream is not None:
                h.setStream(stream)
        set_logs()


@contextlib.contextmanager
def silence(*loggers: str):
    """Mute the named loggers (e.g. Dynamo's warnings about a break we cause on purpose) (ch10)."""
    saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in loggers]
    for logger, _ in saved:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


# ---------------------------------------------------------------- a print that moves


OPS = ("x = x * 2", "x = x + 1", "x = torch.sin(x)", "x = x - 3")


def print_at(position: int, n_ops: int = 4):
    """A function of ``n_ops`` tensor operations with ``print("here")`` before operation ``position`` (ch10).

    ``position == n_ops`` puts the print after the last operation, just before ``return``.
    """
    if not 0 <= position <= n_ops:
        raise ValueError(f"position must be between 0 and {n_ops}")
    lines = [OPS[k % len(OPS)] for k in range(n_ops)]
    lines.insert(position, 'print("here")')
    src = "def moved(x):\n" + "".join(f"    {line}\n" for line in lines) + "    return x\n"
    import torch

    namespace: dict = {"torch": torch}
    exec(compile(src, f"<print at {position}>", "exec"), namespace)
    fn = namespace["moved"]
    fn.source = src
    return fn


def break_sites(fn, *args) -> list[list[tuple[str, int]]]:
    """For each graph break ``explain`` reports, the user stack as ``(function, line)`` pairs, outermost first (ch10)."""
    clear_compile_state()
    out = private("torch._dynamo.explain")(fn)(*args)
    return [[(frame.name, frame.lineno) for frame in (getattr(r, "user_stack", None) or [])]
            for r in out.break_reasons]
