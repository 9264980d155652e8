"""Graph breaks: count compiles and restarts, find where a break happened, reorder prints (ch10).

Every private torch access of chapter 10 goes through ``helpers.inspect.private`` here:
``torch._dynamo.utils`` (``counters``, ``compilation_time_metrics``), ``torch._dynamo.explain`` and the
bytecode hook; Dynamo's settings go through ``helpers.dynamo_config`` and its logs through
``helpers.logs``. All of them exist on torch 2.11 and 2.13.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .dynamo_config import dynamo_config, dynamo_setting
from .inspect import clear_compile_state, private

# ---------------------------------------------------------------- Dynamo settings


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
