"""Unit tests of helpers/runtime/bet.py."""
import math

import pytest

from helpers.runtime.bet import CompileBet


def test_break_even_is_the_first_call_count_where_compiled_total_is_not_longer():
    bet = CompileBet(compile_s=10.0, eager_s=0.003, compiled_s=0.001)
    n = bet.break_even_calls()
    assert n == 5000
    assert bet.net_saving_s(n) >= 0 > bet.net_saving_s(n - 1)


def test_recompiles_raise_the_upfront_price_at_the_recompile_cost():
    assert CompileBet(2.0, 0.2, 0.1, recompiles=3).upfront_s == pytest.approx(8.0)
    bet = CompileBet(2.0, 0.2, 0.1, recompiles=3, recompile_s=0.5)
    assert bet.upfront_s == pytest.approx(3.5)
    assert bet.break_even_calls() == 35


def test_a_compiled_call_that_is_not_faster_never_pays_off():
    assert CompileBet(1.0, 0.001, 0.001).break_even_calls() == math.inf
    assert CompileBet(1.0, 0.001, 0.002).break_even_calls() == math.inf
    assert "never pays off" in CompileBet(1.0, 0.001, 0.002).verdict()
    assert CompileBet(0.0, 0.002, 0.001).break_even_calls() == 0


def test_verdict_says_what_a_given_number_of_calls_saves_or_loses():
    bet = CompileBet(compile_s=10.0, eager_s=0.003, compiled_s=0.001)
    assert bet.verdict(100).startswith("compiling pays off after 5,000 calls; over 100 calls it loses 9.8")
    assert "saves 10 s" in bet.verdict(10_000)


@pytest.mark.parametrize("kwargs", [dict(compile_s=-1, eager_s=1, compiled_s=1),
                                    dict(compile_s=1, eager_s=float("nan"), compiled_s=1),
                                    dict(compile_s=1, eager_s=1, compiled_s=1, recompiles=-2)])
def test_nonsense_inputs_are_refused(kwargs):
    with pytest.raises(ValueError):
        CompileBet(**kwargs)
