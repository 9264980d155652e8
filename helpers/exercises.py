"""Exercise checks: say right or wrong, and let the hidden solution prove itself (ch01)."""
from __future__ import annotations

import math


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
        print(f"{name}: not answered yet — replace None with your answer and run the cell again.")
        return None
    if _same(got, want, tol):
        print(f"{name}: ✅ right.")
        return True
    print(f"{name}: ❌ not quite ({got!r})." + (f" Hint: {hint}" if hint else ""))
    return False


def solution(name: str, got, want, *, tol: float = 1e-6) -> None:
    """Check a solution cell: it must be right, so a wrong solution fails the notebook run."""
    if check(name, got, want, tol=tol) is not True:
        raise AssertionError(f"the solution of {name} is wrong: {got!r} != {want!r}")
