"""Exercise checks every chapter uses: compare the reader's answer, reveal a solution (ch01).

A check prints one line (right, not quite, or not answered yet) and never raises, so a notebook
with unattempted exercises still runs to the end. In a kernel the line is a display output whose
metadata carries a structured record (``RECORD_KEY``: name, result, answer), which the grader reads
(``python -m helpers grade``). Checks that compile the reader's code live with their station
(``helpers.dynamo.exercises``).
"""
from __future__ import annotations

import math

RECORD_KEY = "course_exercise"
RESULTS = ("right", "not quite", "not answered")  # what a check can say


def _same(got, want, tol: float) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        try:
            return math.isclose(float(got), float(want), rel_tol=tol, abs_tol=tol)
        except (TypeError, ValueError):
            return False
    if isinstance(want, str) and isinstance(got, str):
        return got.strip().lower() == want.strip().lower()
    return got == want


def check(name: str, got, want, *, tol: float = 1e-6, hint: str = "") -> bool | None:
    """Print whether the reader's answer is right; None (and a nudge) while it is still ``None``."""
    if got is None:
        _say(name, "not answered", got, f"{name}: not answered yet — replace None with your answer and run the cell again.")
        return None
    if _same(got, want, tol):
        _say(name, "right", got, f"{name}: ✅ right.")
        return True
    _say(name, "not quite", got, f"{name}: ❌ not quite ({got!r})." + (f" Hint: {hint}" if hint else ""))
    return False


def _say(name: str, result: str, got, line: str) -> None:
    """Show the check's line; in a kernel as a display output carrying the record in its metadata."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(line)
        return
    answer = None if got is None else repr(got)[:200]
    display({"text/plain": line}, raw=True,
            metadata={RECORD_KEY: {"name": name, "result": result, "answer": answer}})


def solution(name: str, got, want, *, tol: float = 1e-6) -> None:
    """Check a solution cell: it must be right, so a wrong solution fails the notebook run."""
    if check(name, got, want, tol=tol) is not True:
        raise AssertionError(f"the solution of {name} is wrong: {got!r} != {want!r}")


def run_answer(run, answer):
    """``run(answer)``: what the reader's code does, for ``check`` to judge (ch01).

    None while ``answer`` (or an item of an ``answer`` tuple) is still None; a one-line message naming
    the exception if running it raised, so the check says "not quite" instead of stopping the notebook.
    Warnings raised while it runs (e.g. TorchScript's deprecation notices) are not shown.
    """
    import warnings

    if answer is None or (isinstance(answer, tuple) and any(a is None for a in answer)):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run(answer)
    except Exception as exc:  # the reader's code may fail in any way; the message says how
        first = (str(exc).strip().splitlines() or [""])[0][:100]
        return f"raised {type(exc).__name__}: {first}"
