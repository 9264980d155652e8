"""Unit tests of helpers/runtime/recompiles.py (ch26)."""
import torch

from helpers.runtime.recompiles import CURES, classify, fail_on_recompile, run_case, timeline


def test_classify_names_each_root_cause():
    assert classify("G['step'] == 7") == "constant"
    assert classify("s == 0.0") == "constant"
    assert classify("tensor 'x' size mismatch at index 0. expected 8, actual 16") == "shape"
    assert classify("tensor 'x' rank mismatch. expected 1, actual 2") == "rank"
    assert classify("2 <= x.size()[0]") == "0/1 size"
    assert classify("GLOBAL_STATE changed: grad_mode") == "global state"
    assert classify("___check_obj_id(fn.__code__, 1403), type=<class 'code'>") == "identity"
    assert set(CURES) >= {"constant", "shape", "rank", "0/1 size", "global state", "identity"}


def test_run_case_counts_graphs_and_reasons():
    f = torch.compile(lambda x, n: x * n, backend="eager")
    x = torch.randn(4)
    case = run_case("ints", [lambda n=n: f(x, n) for n in (2, 3, 3)])
    assert case.graphs == 2 and case.recompiles == 1 and not case.limit_hit
    assert classify(case.first_reasons[0]) == "constant"


def test_timeline_marks_the_compiling_calls():
    f = torch.compile(lambda x: x + 1, backend="eager")
    steps = timeline([lambda: f(torch.randn(3)), lambda: f(torch.randn(3))])
    assert [s.compiled for s in steps] == [True, False]


def test_fail_on_recompile_raises_on_a_new_shape():
    f = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
    assert fail_on_recompile(lambda: f(torch.randn(3)), lambda: f(torch.randn(5))) != "none"
    assert fail_on_recompile(lambda: f(torch.randn(3)), lambda: f(torch.randn(3))) == "none"
