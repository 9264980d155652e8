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


def test_an_answer_cannot_declare_itself_equal():
    """Issue 29: an answer whose __eq__ always says True (or that fakes its __class__) is not right."""
    from helpers.core.exercises import check

    class Whatever:
        def __eq__(self, other):
            return True

    class Faker:
        __class__ = property(lambda self: int)

        def __eq__(self, other):
            return True

    class Tricky(int):
        def __eq__(self, other):
            return True

    for answer in (Whatever(), Faker()):
        assert check("e", answer, 5) is False and check("e", answer, (0, 1)) is False
    assert check("e", Tricky(4), 5) is False and check("e", Tricky(5), 5) is True  # an int is its value


def test_plain_values_keep_their_kinds():
    import collections

    import torch

    from helpers.core.exercises import plain, same_plain

    assert same_plain(plain((0, True)), plain((0, 1)))  # Python's True == 1
    assert not same_plain(plain([1, 2]), plain((1, 2)))  # a list is not a tuple, as for ==
    assert same_plain(plain(collections.Counter(a=1)), plain({"a": 1}))
    assert same_plain(plain(torch.Size([3, 2])), plain((3, 2))) and same_plain(plain(torch.tensor(5)), plain(5))
    assert same_plain(plain({"L_x_", "L_y_"}), plain({"L_y_", "L_x_"}))
    assert not same_plain(plain("4"), plain(4.0)) and not same_plain(plain(None), plain(0))


def test_a_sealed_value_checks_without_showing_it():
    from helpers.core.exercises import check, digest, sealed

    seal = sealed(digest("exercise 6.1", 5))
    assert "5" not in repr(seal)
    assert check("exercise 6.1", 5, seal) is True and check("exercise 6.1", 5.0, seal) is True
    assert check("exercise 6.1", 6, seal) is False and check("exercise 6.2", 5, sealed(digest("exercise 6.1", 5))) is False
    assert check("e", " Inductor ", sealed(digest("e", "inductor"))) is True  # text: case and spaces as before
    assert check("e", {"L_x_", "L_y_"}, sealed(digest("e", {"L_y_", "L_x_"}))) is True
    assert check("e", 0.1 + 0.2, sealed(digest("e", 0.3))) is True


def test_the_record_carries_plain_values_for_the_grader(monkeypatch):
    import IPython.display

    from helpers.core import exercises

    shown = []
    monkeypatch.setattr("IPython.get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append(k["metadata"]))
    exercises.check("exercise 9.9", (1, [2]), (1, [2]))
    record = shown[0][exercises.RECORD_KEY]
    assert record["got"] == record["want"] == {"tuple": [{"num": 1}, {"list": [{"num": 2}]}]}
    assert record["result"] == "right" and record["sealed"] is False


def test_equal_is_checks_comparison_for_station_helpers():
    from helpers.core.exercises import equal

    class Whatever:
        def __eq__(self, other):
            return True

        def __iter__(self):
            return iter([Whatever(), Whatever()])

    assert equal((3, 5), (3, 5)) and equal(8.0, 8) and not equal(tuple(Whatever()), (3, 5))
    assert not equal([Whatever()] * 8, [1] * 8)
