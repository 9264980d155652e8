"""Exercise checks that compile the reader's code (ch01, ch03, ch05, ch06).

Each runs the reader's answer under ``torch.compile`` with a recording backend and returns what the
exercise asks for (compiles, graphs, breaks), or a message string when the answer is wrong, or None
when the exercise is not attempted; ``helpers.exercises.check`` turns that into the printed verdict.
"""
from __future__ import annotations


def _recorded(answer, values, reference, rtol: float):
    """Run a reader's ``(make, call)`` pair under a recording backend: the recorder, or a message."""
    import torch

    from .state import GraphRecorder, clear_compile_state

    make, call = answer
    clear_compile_state()
    recorder = GraphRecorder()
    compiled = make(recorder)
    for v in values:
        got, want = call(compiled, v), reference(v)
        if not torch.allclose(torch.as_tensor(got), torch.as_tensor(want), rtol=rtol):
            return f"wrong result for {v!r}"
    return recorder


def compiles_for(answer, values, reference, *, rtol: float = 1e-5) -> int | str | None:
    """Run a reader's ``(make, call)`` pair and count the graphs it compiles over ``values`` (ch05).

    ``make(backend)`` returns the compiled function (the check passes a recording backend);
    ``call(compiled, v)`` calls it for one value. Returns the number of graphs compiled, or a short
    message if a call's result differs from ``reference(v)`` (a "fix" that returns wrong numbers is no
    fix); None while ``answer`` is still None.
    """
    if answer is None:
        return None
    recorder = _recorded(answer, values, reference, rtol)
    return recorder if isinstance(recorder, str) else recorder.compiles


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

    Like ``compiles_for``, but counts graph runs: a call that Dynamo gave up on (past the recompile
    limit) runs eager and does not count. Returns a short message if a result differs from
    ``reference(v)``; None while ``answer`` is still None.
    """
    if answer is None:
        return None
    recorder = _recorded(answer, values, reference, rtol)
    return recorder if isinstance(recorder, str) else recorder.runs
