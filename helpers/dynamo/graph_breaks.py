"""Graph breaks: count compiles and restarts, find where a break happened, read the log, reorder prints (ch10).

Every private torch access of chapter 10 goes through ``helpers.core.private.private`` here:
``torch._dynamo.utils`` (``counters``, ``compilation_time_metrics``), ``torch._dynamo.explain`` and the
bytecode hook, ``torch._dynamo.graph_break`` and ``torch._dynamo.error_on_graph_break``; Dynamo's
settings go through ``helpers.dynamo.config`` and its logs through ``helpers.dynamo.logs``. All of them exist on
torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.private import private
from .config import dynamo_config, dynamo_setting
from .state import clear_compile_state


def reorderable(*functions):
    """Context manager: let Dynamo move calls of ``functions`` (e.g. ``print``) after the graph (ch10).

    Sets ``torch._dynamo.config.reorderable_logging_functions``; the calls then run after the graph
    instead of breaking it.
    """
    current = set(dynamo_setting("reorderable_logging_functions"))
    return dynamo_config(reorderable_logging_functions=current | set(functions))


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
    resumes_created: int = 0  # resume functions built (a name can be built twice; see count_breaks)
    graph_break_counter: int = 0  # Dynamo's counters["graph_break"], summed (misses data-dependent jumps)


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
        resumes_created=int(sum(counters["resumes"].values())),
        graph_break_counter=int(sum(counters["graph_break"].values())),
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


@dataclass
class BreakRecord:
    """One graph break as ``TORCH_LOGS="graph_breaks"`` reports it: where, what kind, why, what to try (ch10).

    ``file``/``line``: the user code line Dynamo stopped at (the log's "Graph break in user code at");
    ``title``: torch's name for the kind of break ("Failed to trace builtin operator", "Data-dependent
    branching"); ``explanation`` and ``hints``: torch's own lines; ``skips_frame``: Dynamo gave up the
    whole function, which then runs eagerly (a break inside a loop, or one it could not resume after);
    ``stack``: the user code traceback as ``(file, line, function)``, outermost first.
    """

    file: str
    line: int
    title: str
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    skips_frame: bool = False
    stack: list[tuple[str, int, str]] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)  # every kind the message names (a skip adds its own)

    def innermost_in(self, path: str) -> tuple[str, int, str] | None:
        """The innermost traceback frame in the file ``path`` (the reader's own code), if any."""
        import os

        want = os.path.realpath(path)
        return next((f for f in reversed(self.stack) if os.path.realpath(f[0]) == want), None)


_BREAK_AT = re.compile(r"^Graph break in user code at (.+):(\d+)\s*$", re.M)
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (\S+)\s*$')
_PREAMBLES = ("Encountered graph break when attempting", "Failed to handle graph break gracefully")
_SKIPS = ("Skipping the function and falling back to eager", "Skipping the frame", "graph break in loop")


def parse_break(message: str) -> BreakRecord | None:
    """A ``graph_breaks`` log message as a ``BreakRecord`` (None for a message of another shape) (ch10).

    The message layout (torch 2.11, 2.13 and 2.15): "Graph break in user code at FILE:LINE", "Graph
    Break Reason: ...", the kind of break on its own line followed by "  Explanation: ..." and
    "  Hint: ..." lines, then "User code traceback:" and its ``File "...", line N, in fn`` frames.
    """
    head = _BREAK_AT.search(message)
    if head is None:
        return None
    body, _, trace = message.partition("User code traceback:")
    reason = body.split("Graph Break Reason:", 1)[-1]
    lines = reason.splitlines()
    titles = [lines[i].strip() for i in range(len(lines) - 1)
              if lines[i].strip() and lines[i + 1].strip().startswith("Explanation:")]
    title = titles[0] if titles else next(
        (ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith(_PREAMBLES)), first_line(reason))
    explanation = next((ln.strip()[len("Explanation:"):].strip() for ln in lines
                        if ln.strip().startswith("Explanation:")), "")
    hints = list(dict.fromkeys(ln.strip()[len("Hint:"):].strip() for ln in lines if ln.strip().startswith("Hint:")))
    stack = [(m.group(1), int(m.group(2)), m.group(3)) for ln in trace.splitlines() if (m := _FRAME.match(ln))]
    return BreakRecord(head.group(1), int(head.group(2)), title, explanation, hints,
                       any(s in message for s in _SKIPS), stack, titles)


def break_records(messages) -> list[BreakRecord]:
    """Every graph break among ``graph_breaks`` log messages (``capture_logs(...).messages("graph_breaks")``) (ch10)."""
    return [r for r in (parse_break(m) for m in messages) if r is not None]


OPS = ("x = x * 2", "x = x + 1", "x = torch.sin(x)", "x = x - 3")


def print_at(position: int, n_ops: int = 4):
    """A function of ``n_ops`` tensor operations with ``print("here")`` before operation ``position`` (ch10).

    ``position == n_ops`` puts the print after the last operation, just before ``return``. The source
    is registered with ``linecache``, so every torch converts ``moved`` itself (no wrapper frame).
    """
    if not 0 <= position <= n_ops:
        raise ValueError(f"position must be between 0 and {n_ops}")
    lines = [OPS[k % len(OPS)] for k in range(n_ops)]
    lines.insert(position, 'print("here")')
    src = "def moved(x):\n" + "".join(f"    {line}\n" for line in lines) + "    return x\n"
    import linecache

    import torch

    # Register the source under the pseudo file name (as helpers.dynamo.codegen.synthetic does): a function
    # without a source file is wrapped by torch 2.11's torch.compile in an extra `inner` frame
    # (external_utils.wrap_inline), which would add a converted frame on 2.11 only.
    filename = f"<print at {position} of {n_ops}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace: dict = {"torch": torch}
    exec(compile(src, filename, "exec"), namespace)
    fn = namespace["moved"]
    fn.source = src
    return fn


def break_sites(fn, *args) -> list[list[tuple[str, int]]]:
    """For each graph break ``explain`` reports, the user stack as ``(function, line)`` pairs, outermost first (ch10)."""
    clear_compile_state()
    out = private("torch._dynamo.explain")(fn)(*args)
    return [[(frame.name, frame.lineno) for frame in (getattr(r, "user_stack", None) or [])]
            for r in out.break_reasons]


@dataclass
class BreakCount:
    """One compiled call's graph breaks as five different tools count them (ch10).

    ``logged``: records of the ``graph_breaks`` log artifact (what ``TORCH_LOGS="graph_breaks"`` prints,
    one per break); ``explain``: ``explain``'s graph_break_count (graphs minus one); ``counter``:
    Dynamo's ``counters["graph_break"]``, summed; ``resume_names``: distinct resume-function names
    (``counters["resumes"]`` is keyed by ``co_name``, ``torch_dynamo_resume_in_<fn>_at_<line>``);
    ``resumes_created``: resume functions built. Plus the frames, graphs and restarts of the run.
    """

    logged: int
    explain: int
    counter: int
    resume_names: int
    resumes_created: int
    restarts: int
    frames: int
    graphs: int
    log_text: str = ""
    ops_per_graph: list[list[str]] = field(default_factory=list)
    frame_names: list[str] = field(default_factory=list)

    def row(self) -> tuple[int, int, int, int, int]:
        """(logged, explain, counter, resume names, resumes created), the table's columns."""
        return (self.logged, self.explain, self.counter, self.resume_names, self.resumes_created)


def count_breaks(fn, *args) -> BreakCount:
    """Compile ``fn`` from scratch twice (counters + log, then ``explain``) and count its breaks five ways (ch10).

    Prints made by ``fn`` are swallowed.
    """
    import contextlib
    import io

    from .logs import capture_logs
    from .state import explain

    with contextlib.redirect_stdout(io.StringIO()):
        with capture_logs("graph_breaks") as logs:
            st = compile_stats(fn, *args)
        rep = explain(fn, *args)
    return BreakCount(
        logged=len(logs.messages("graph_breaks")),
        explain=rep.graph_break_count,
        counter=st.graph_break_counter,
        resume_names=len(st.resume_functions),
        resumes_created=st.resumes_created,
        restarts=st.restarts,
        frames=st.frames,
        graphs=st.graphs,
        log_text=logs.text("graph_breaks"),
        ops_per_graph=rep.ops_per_graph,
        frame_names=st.frame_names,
    )


def graph_break_function():
    """``torch._dynamo.graph_break``, the function to call in your own code to break the graph there (ch10)."""
    return private("torch._dynamo.graph_break")


def error_on_graph_break(flag: bool):
    """``torch._dynamo.error_on_graph_break(flag)``: a context manager and decorator (ch10).

    ``True`` makes a graph break an error in the region it covers, ``False`` allows breaks again in a
    part of it; unlike ``fullgraph=True`` it does not promise one graph.
    """
    return private("torch._dynamo.error_on_graph_break")(flag)


def breaks_and_output(fn, *args, within=None) -> tuple[int, str] | None:
    """Compile ``fn`` from scratch inside the context manager ``within`` and run it once (ch10).

    Returns ``(graph breaks logged, text printed)``, or None while ``within`` is None (an exercise
    not answered yet). The breaks are the ``graph_breaks`` log's records, which count every break.
    """
    import contextlib
    import io

    from .logs import capture_logs

    if within is None:
        return None
    with contextlib.redirect_stdout(io.StringIO()) as out:
        with within, capture_logs("graph_breaks") as logs:
            compile_stats(fn, *args)
    return len(logs.messages("graph_breaks")), out.getvalue()


def compare_compiled(fn, reference, *args) -> tuple[bool, bool, int] | None:
    """Run ``reference`` eagerly and compile ``fn``: (same result, same printed text, graphs compiled) (ch10).

    None while ``fn`` is None (an exercise not answered yet).
    """
    import contextlib
    import io

    import torch

    if fn is None:
        return None
    with contextlib.redirect_stdout(io.StringIO()) as eager_out:
        want = reference(*args)
    with contextlib.redirect_stdout(io.StringIO()) as compiled_out:
        st = compile_stats(fn, *args)
    same = bool(torch.allclose(st.result, want)) if isinstance(want, torch.Tensor) else st.result == want
    return same, compiled_out.getvalue() == eager_out.getvalue(), st.graphs
