"""Exercise checks that compile the reader's code (ch01, ch03, ch05, ch06).

Each runs the reader's answer under ``torch.compile`` with a recording backend and returns what the
exercise asks for (compiles, graphs, breaks), or a message string when the answer is wrong, or None
when the exercise is not attempted; ``helpers.exercises.check`` turns that into the printed verdict.

``compiles_for`` and ``compiled_runs_for`` judge each call of the reader's code by what it returned: a
result must be what a graph compiled for that call returned (the judge keeps a copy of every graph
output), so an answer that runs an already-compiled graph (``compiled(x, 0)``) and returns an eager
result, or that calls the backend by hand and runs nothing compiled, is told so instead of counted.
``entry_points`` names torch's compile entry points for the grader's watch (``helpers.pipeline.audit``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.exercises import WATCHED_ENTRY_POINTS
from ..core.private import private
from .state import GraphRecorder


@dataclass
class JudgingRecorder(GraphRecorder):
    """A ``GraphRecorder`` that also keeps a copy of what each graph run returned (``outputs``, in run order)
    and the kind of anything handed to it that is not an FX graph (``not_graphs``: a faked compile)."""

    outputs: list = field(default_factory=list)
    not_graphs: list = field(default_factory=list)

    def __call__(self, gm, example_inputs):
        import torch

        if not isinstance(gm, torch.fx.GraphModule):
            self.not_graphs.append(type(gm).__qualname__)
        run = super().__call__(gm, example_inputs)

        def judged(*args):
            out = run(*args)
            items = out if isinstance(out, (tuple, list)) else (out,)
            self.outputs.append([t.detach().clone() for t in items if isinstance(t, torch.Tensor)])
            return out

        return judged


def _returned_by(got, copies: list) -> bool:
    """Whether ``got`` is, value for value, one of the tensors a graph returned (``copies``)."""
    import torch

    if not isinstance(got, torch.Tensor):
        return False
    return any(c.shape == got.shape and c.dtype == got.dtype and torch.equal(c, got.detach()) for c in copies)


def _recorded(answer, values, reference, rtol: float, *, every_call_compiled: bool):
    """Run a reader's ``(make, call)`` pair under a judging backend: (the recorder, how many calls returned
    what a graph compiled for them returned), or a message.

    A call that ran a graph but returned something else (an eager result beside a cached graph's run) is
    a message; so is, with ``every_call_compiled``, a call that ran no graph at all.
    """
    import torch

    from .state import clear_compile_state

    make, call = answer
    clear_compile_state()
    recorder = JudgingRecorder()
    compiled = make(recorder)
    if recorder.not_graphs:
        return f"the backend was handed a {recorder.not_graphs[0]}, not an FX graph: is torch.compile the real one?"
    from_graphs = 0
    for v in values:
        start = len(recorder.outputs)
        got, want = call(compiled, v), reference(v)
        if not torch.allclose(torch.as_tensor(got), torch.as_tensor(want), rtol=rtol):
            return f"wrong result for {v!r}"
        if recorder.not_graphs:
            return f"the backend was handed a {recorder.not_graphs[0]}, not an FX graph: is torch.compile the real one?"
        ran = [t for outs in recorder.outputs[start:] for t in outs]
        if ran and not _returned_by(got, ran):
            return f"the result for {v!r} is not what the graph run in that call returned"
        if not ran and every_call_compiled:
            return f"the call for {v!r} ran no compiled graph"
        from_graphs += bool(ran)
    return recorder, from_graphs


def compiles_for(answer, values, reference, *, rtol: float = 1e-5) -> int | str | None:
    """Run a reader's ``(make, call)`` pair and count the graphs it compiles over ``values`` (ch05).

    ``make(backend)`` returns the compiled function (the check passes a recording backend);
    ``call(compiled, v)`` calls it for one value. Returns the number of graphs compiled, or a short
    message if a call's result differs from ``reference(v)`` (a "fix" that returns wrong numbers is no
    fix) or is not what a graph run in that call returned (every call must run compiled code); None
    while ``answer`` is still None.
    """
    if answer is None:
        return None
    judged = _recorded(answer, values, reference, rtol, every_call_compiled=True)
    return judged if isinstance(judged, str) else judged[0].compiles


def break_shape(fn, *args, forbid: tuple[str, ...] = (), taken: tuple = ()) -> tuple[int, int] | str | None:
    """``(graph_count, graph_break_count)`` that ``explain`` reports for the reader's ``fn`` (ch03).

    A message instead if ``fn`` is not a function, uses a name in ``forbid`` (``"print"``) or is one of
    the chapter's own functions in ``taken``; None while ``fn`` is still None.
    """
    if fn is None:
        return None
    code = getattr(fn, "__code__", None)
    if code is None:
        return "not a function: assign the function itself, not its result"
    if any(code is getattr(t, "__code__", None) for t in taken):
        return f"that is the chapter's {fn.__name__}: write your own"
    used = set(code.co_names) | {n for c in code.co_consts if hasattr(c, "co_names") for n in c.co_names}
    banned = sorted(used & set(forbid))
    if banned:
        return f"uses {', '.join(banned)}"
    from .state import explain

    e = explain(fn, *args)
    return (e.graph_count, e.graph_break_count)


def one_graph_rewrite(fn, reference, inputs, *, op: str, rtol: float = 1e-5) -> tuple | str | None:
    """``(graphs, breaks, op in the graph)`` for the reader's rewrite ``fn`` of ``reference`` (ch03).

    First runs ``fn`` compiled on every input and compares with ``reference`` (a message names the
    first input that differs); None while ``fn`` is still None.
    """
    if fn is None:
        return None
    if getattr(fn, "__code__", None) is None:
        return "not a function: assign the function itself, not its result"
    import torch

    from .state import clear_compile_state, explain

    clear_compile_state()
    compiled = torch.compile(fn, backend="eager")
    for i, v in enumerate(inputs):
        if not torch.allclose(compiled(v), reference(v), rtol=rtol):
            return f"wrong result for input {i}"
    e = explain(fn, inputs[0])
    return (e.graph_count, e.graph_break_count, any(op in ops for ops in e.ops_per_graph))


def compiled_runs_for(answer, values, reference, *, rtol: float = 1e-5) -> int | str | None:
    """Run a reader's ``(make, call)`` pair and count the calls that ran a compiled graph (ch06).

    Like ``compiles_for``, but counts the calls whose result a graph run in that call returned: a call
    that Dynamo gave up on (past the recompile limit) runs eager and does not count. Returns a short
    message if a result differs from ``reference(v)`` or a call ran a graph but returned something else;
    None while ``answer`` is still None.
    """
    if answer is None:
        return None
    judged = _recorded(answer, values, reference, rtol, every_call_compiled=False)
    return judged if isinstance(judged, str) else judged[1]


ENTRY_MODULES = ("torch.compiler", "torch._dynamo", "torch._dynamo.eval_frame")


def entry_points() -> dict[str, object]:
    """``torch.compile`` and every callable of ``torch.compiler``, ``torch._dynamo`` and its ``eval_frame``
    (``torch.compile`` returns ``torch._dynamo.optimize(...)(model)``), by name: what the grader's watch
    compares before and after a student's cell (``helpers.pipeline.audit``)."""
    import torch

    out = {"torch.compile": torch.compile}
    for name in ENTRY_MODULES:
        mod = torch.compiler if name == "torch.compiler" else private(name)
        for key, value in list(vars(mod).items()):
            if callable(value) and str(getattr(value, "__module__", "") or "").startswith("torch"):
                out[f"{name}.{key}"] = value
    return out


WATCHED_ENTRY_POINTS.append(entry_points)
