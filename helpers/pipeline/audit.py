"""The grader's cells in a student's kernel (instructor kit): a clock per exercise and a watch on the course.

``python -m helpers grade`` puts three cells around each exercise of the notebook it runs: ``begin`` before
the answer cell (notes the course's modules and starts the exercise's clock), ``between`` after it (what
the answer cell changed in the course's modules) and ``end`` after the check cell (what the check changed
in the modules that decide a result; the clock stops). Each writes a record (``AUDIT_KEY``) that the grader
reads; a record that never comes means the answer cell got in the way, which the grader notes too.

The clock raises ``ExerciseTimeout`` (a BaseException, so ``except Exception`` in the student's loop does
not swallow it) in whatever runs when the exercise's time is up, so an endless loop costs one exercise,
not the notebook. Code stuck inside a native call is stopped by the notebook's own timeout instead.
"""
from __future__ import annotations

import signal
import sys

AUDIT_KEY = "course_audit"
DECIDING = ("helpers.core.exercises", "helpers.pipeline", "builtins")  # watched during the check too
IGNORED = {"builtins.input", "builtins._", "builtins.__", "builtins.___"}  # the kernel swaps them per cell
_state: dict = {}


class ExerciseTimeout(BaseException):
    """The exercise ran past its time (raised by the grader's clock)."""


def _watched(name: str) -> bool:
    return name == "helpers" or name.startswith("helpers.") or name == "builtins"


def _code_id(value) -> int:
    """The identity of a function's code; an object whose ``__getattr__`` raises (a proxy) has none."""
    try:
        return id(getattr(value, "__code__", None))
    except Exception:
        return id(None)


def snapshot() -> dict[str, tuple[int, int, bool]]:
    """The identity of every name in the course's modules (and builtins), and of each function's code."""
    snap = {}
    for modname, mod in list(sys.modules.items()):
        if not _watched(modname) or mod is None:
            continue
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for key, value in items:
            if type(value).__name__ == "module":
                continue
            if f"{modname}.{key}" in IGNORED:
                continue
            flag = value is None or type(value) in (bool, int, float, str)  # a module's flag or counter
            snap[f"{modname}.{key}"] = (id(value), _code_id(value), flag)
            if isinstance(value, type) and str(getattr(value, "__module__", "")).startswith("helpers"):
                for attr, inner in list(vars(value).items()):
                    snap[f"{modname}.{key}.{attr}"] = (id(inner), _code_id(inner), False)
    return snap


def changed(before: dict, after: dict, only: tuple[str, ...] | None = None) -> list[str]:
    """The names whose object (or code) changed or that were deleted (new names are imports: not listed); a
    module's flag or counter (None, a bool, a number, a string: a lazy set-up) only in the deciding modules."""
    out = [k for k, v in before.items() if after.get(k) != v and (not v[2] or k.startswith(DECIDING))]
    if only:
        out = [k for k in out if k.startswith(only)]
    return sorted(out)[:20]


def _emit(number: str, phase: str, names: list[str]) -> None:
    from IPython.display import display

    line = f"(grader) exercise {number}, {phase}: " + (", ".join(names) + " changed" if names else "nothing changed")
    display({"text/plain": line}, raw=True, metadata={AUDIT_KEY: {"exercise": number, "phase": phase, "changed": names}})


def _alarm(number: str, seconds: float) -> None:
    def ring(signum, frame):
        raise ExerciseTimeout(f"exercise {number} ran past {seconds:.0f} s (stopped by the grader's clock)")

    if seconds and hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, seconds)


def begin(number: str, seconds: float) -> None:
    _state[number] = {"snap": snapshot(), "seconds": seconds}
    _alarm(number, seconds)


def between(number: str) -> None:
    state = _state.get(number, {})
    now = snapshot()
    _emit(number, "answer", changed(state.get("snap", {}), now))
    state["snap"] = now
    _alarm(number, state.get("seconds", 0))  # the check runs the student's code too: a fresh clock for it


def end(number: str) -> None:
    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)
    state = _state.get(number, {})
    _emit(number, "check", changed(state.get("snap", {}), snapshot(), DECIDING))
