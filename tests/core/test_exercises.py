"""Unit tests of helpers/core/exercises.py."""

from helpers.core.exercises import run_answer


def test_run_answer_runs_the_readers_code_and_reports_failures():
    assert run_answer(lambda a: a + 1, None) is None
    assert run_answer(lambda a: a[0] + a[1], (1, None)) is None
    assert run_answer(lambda a: a + 1, 2) == 3
    assert run_answer(lambda a: 1 / a, 0) == "raised ZeroDivisionError: division by zero"


def test_check_says_not_answered_right_or_not_quite_and_never_raises(capsys):
    from helpers.core.exercises import check

    assert check("e", None, 3) is None and "not answered yet" in capsys.readouterr().out
    assert check("e", 3, 3) is True and "right" in capsys.readouterr().out
    assert check("e", 0.1 + 0.2, 0.3) is True  # floats within tolerance
    assert check("e", " Guard ", "guard") is True  # text ignores case and surrounding space
    assert check("e", 4, 3, hint="count again") is False and "Hint: count again" in capsys.readouterr().out


def test_solution_raises_when_the_books_own_answer_is_wrong():
    import pytest

    from helpers.core.exercises import solution

    solution("e", 3, 3)
    with pytest.raises(AssertionError, match="solution of e is wrong"):
        solution("e", 4, 3)
