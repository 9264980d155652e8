"""Tests of helpers/runtime/triage_fixes.py (``--try-fixes``, chapter 30): each cure measured against a baseline.

The shape cures run inside tests/runtime/test_triage.py's shapes test (one triage shared); the logging cure here.
"""
from pathlib import Path

from helpers.runtime.triage import triage

CASES = Path(__file__).resolve().parent / "triage_cases"


def test_try_fixes_ignores_the_logging_call_that_breaks_the_graph():
    from helpers.runtime.triage_fixes import logging_methods

    r = triage(CASES / "log_break.py", backend="eager", rounds=1, repeats=2, try_fixes=True)
    assert logging_methods(r.data["breaks"]) == ["warning"]
    check_fixes(r, [("ignore_logging_functions", "ignore_logger_methods")])
    [row] = r.data["fixes"]
    assert (row["baseline"]["breaks"], row["fixed"]["breaks"]) == (1, 0)


def check_fixes(r, names):
    rows = r.data["fixes"]
    f = r.finding("fixes")
    assert f.status == "note" and r.findings[-1] is f and len(rows) == len(names)
    assert all(row["fix"] in (n if isinstance(n, tuple) else (n,)) for row, n in zip(rows, names))
    for row in rows:
        base, fixed = row["baseline"], row["fixed"]
        assert not base["error"] and not fixed["error"]
        assert (base["compiles"], fixed["compiles"]) == (2, 1) and fixed["matches"]
        assert fixed["compile_s"] > 0 and fixed["steady_s"] > 0
    assert all("frames compiled 2 → 1" in ln.text and "still match eager" in ln.text for ln in f.lines[:len(rows)])
