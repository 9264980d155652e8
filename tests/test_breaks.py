"""Unit tests of helpers.breaks (chapter 10): compile statistics, break sites, reordering, print_at."""
import contextlib
import io

import pytest
import torch

from helpers import breaks as hb
from helpers.dynamo_config import dynamo_setting


def f(x):
    x = x * 2
    print("mid")
    return x + 1


def util(t):
    print("in util")
    return t + 1


def big(x):
    y = x * 2
    z = util(y)
    return z * 3


def quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def test_compile_stats_of_a_break():
    st = quiet(hb.compile_stats, f, torch.randn(4))
    assert (st.frames, st.graphs, st.restarts) == (2, 2, 1)
    assert st.frame_names[0] == "f" and st.frame_names[1].startswith("torch_dynamo_resume_in_f")
    assert len(st.resume_functions) == 1 and st.break_reasons == ["Failed to trace builtin operator"]


def test_compile_stats_of_a_break_in_an_inlined_helper():
    st = quiet(hb.compile_stats, big, torch.randn(4))
    assert (st.frames, st.graphs, st.restarts, len(st.resume_functions)) == (4, 3, 2, 2)


def test_compile_stats_without_break():
    st = hb.compile_stats(lambda x: x.sin() + 1, torch.randn(4))
    assert (st.frames, st.graphs, st.restarts, st.resume_functions) == (1, 1, 0, [])


def test_first_line():
    assert hb.first_line("\n\n  Reason here  \nmore") == "Reason here"
    assert hb.first_line("") == ""


def test_reorderable_print_removes_the_break():
    with hb.reorderable(print):
        assert print in dynamo_setting("reorderable_logging_functions")
        st = quiet(hb.compile_stats, f, torch.randn(4))
    assert (st.graphs, st.resume_functions) == (1, [])
    assert print not in dynamo_setting("reorderable_logging_functions")


def test_print_at_places_the_print():
    fn = hb.print_at(2, 4)
    lines = fn.source.splitlines()
    assert lines[3].strip() == 'print("here")' and len(lines) == 7
    x = torch.randn(3)
    assert torch.allclose(quiet(fn, x), torch.sin(x * 2 + 1) - 3)
    with pytest.raises(ValueError):
        hb.print_at(5, 4)


def test_break_sites_nesting():
    sites = quiet(hb.break_sites, big, torch.randn(4))
    assert [name for name, _ in sites[0]] == ["big", "util"]
