"""Unit tests of helpers/dynamo/graph_breaks.py."""
import contextlib
import io

import pytest
import torch

from helpers.dynamo.config import dynamo_setting
from helpers.dynamo.graph_breaks import (
    break_records,
    break_sites,
    breaks_and_output,
    compare_compiled,
    compile_stats,
    count_breaks,
    error_on_graph_break,
    first_line,
    graph_break_function,
    parse_break,
    print_at,
    reorderable,
)


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


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def twice(x):
    x = x * 2; print("a"); x = x + 1; print("b"); return x * 3  # noqa: E702


def loop(x):
    for _ in range(3):
        x = x * 2
        print("in loop")
    return x + 1


def test_compile_stats_of_a_break():
    st = quiet(compile_stats, f, torch.randn(4))
    assert (st.frames, st.graphs, st.restarts) == (2, 2, 1)
    assert st.frame_names[0] == "f" and st.frame_names[1].startswith("torch_dynamo_resume_in_f")
    assert len(st.resume_functions) == 1 and st.break_reasons == ["Failed to trace builtin operator"]


def test_compile_stats_of_a_break_in_an_inlined_helper():
    st = quiet(compile_stats, big, torch.randn(4))
    assert (st.frames, st.graphs, st.restarts, len(st.resume_functions)) == (4, 3, 2, 2)


def test_compile_stats_without_break():
    st = compile_stats(lambda x: x.sin() + 1, torch.randn(4))
    assert (st.frames, st.graphs, st.restarts, st.resume_functions) == (1, 1, 0, [])


def test_first_line():
    assert first_line("\n\n  Reason here  \nmore") == "Reason here"
    assert first_line("") == ""


def test_reorderable_print_removes_the_break():
    with reorderable(print):
        assert print in dynamo_setting("reorderable_logging_functions")
        st = quiet(compile_stats, f, torch.randn(4))
    assert (st.graphs, st.resume_functions) == (1, [])
    assert print not in dynamo_setting("reorderable_logging_functions")


def test_print_at_places_the_print():
    fn = print_at(2, 4)
    lines = fn.source.splitlines()
    assert lines[3].strip() == 'print("here")' and len(lines) == 7
    x = torch.randn(3)
    assert torch.allclose(quiet(fn, x), torch.sin(x * 2 + 1) - 3)
    with pytest.raises(ValueError):
        print_at(5, 4)


def test_break_sites_nesting():
    sites = quiet(break_sites, big, torch.randn(4))
    assert [name for name, _ in sites[0]] == ["big", "util"]


def test_print_at_converts_the_function_itself():
    # registered with linecache: no `inner` wrapper frame on any torch (2.11 wraps source-less functions)
    import inspect

    fn = print_at(2, 4)
    assert inspect.getsource(fn) == fn.source
    st = quiet(compile_stats, fn, torch.randn(4))
    assert st.frame_names[0] == "moved" and st.frames == 2


def test_count_breaks_disagree_where_the_chapter_says():
    x = torch.randn(4)
    c = count_breaks(branchy, x)
    assert (c.logged, c.counter, c.resume_names, c.resumes_created, c.restarts) == (1, 0, 1, 2, 0)
    assert "Data-dependent branching" in c.log_text
    c = count_breaks(twice, x)
    assert (c.logged, c.explain, c.counter, c.resume_names, c.resumes_created) == (2, 2, 2, 1, 2)
    assert c.row() == (2, 2, 2, 1, 2) and len(c.ops_per_graph) == 3
    c = count_breaks(print_at(0), x)
    assert (c.logged, c.explain) == (1, 0)


def test_a_break_in_a_loop_skips_the_frame():
    c = count_breaks(loop, torch.randn(4))
    assert (c.frames, c.graphs) == (0, 0) and "graph break in loop" in c.log_text


def try_break(x):
    try:
        x = x * 2
        print("in try")
        x = x + 1
    except ValueError:
        x = x - 1
    return x * 3


def try_late(x):
    x = torch.sin(x) + 1
    try:
        x = x * 2
        print("in try")
        x = x + 1
    except ValueError:
        x = x - 1
    return x * 3


def loop_late(x):
    x = torch.sin(x) + 1
    for _ in range(3):
        x = x * 2
        print("in loop")
    return x * 3


def test_a_break_in_a_try_falls_back_to_the_last_checkpoint():
    x = torch.randn(4)
    c = count_breaks(try_break, x)                       # no checkpoint: the frame is skipped
    assert (c.frames, c.graphs) == (0, 0) and "Failed to handle graph break gracefully" in c.log_text
    c = count_breaks(try_late, x)                        # two ops before the try: compiled up to there
    assert (c.frame_names, c.graphs, c.ops_per_graph) == (["try_late"], 1, [["torch.sin", "add"]])
    assert "Compiling up to the previous resumable state" in c.log_text and c.resume_names == 0
    assert compare_compiled(try_late, try_late, x) == (True, True, 1)
    c = count_breaks(loop_late, x)                       # a loop skips the frame, checkpoint or not
    assert (c.frames, c.graphs) == (0, 0) and "graph break in loop" in c.log_text


def test_graph_break_function_and_error_on_graph_break():
    gb = graph_break_function()

    def marked(x):
        x = x * 2
        gb()
        return x + 1

    st = compile_stats(marked, torch.randn(4))
    assert st.graphs == 2 and st.restarts == 1
    with pytest.raises(Exception) as info:
        with error_on_graph_break(True):
            compile_stats(marked, torch.randn(4))
    assert type(info.value).__name__ == "Unsupported"


def test_breaks_and_output():
    x = torch.randn(4)
    assert breaks_and_output(f, x) is None
    n, out = breaks_and_output(f, x, within=contextlib.nullcontext())
    assert n == 1 and "mid" in out
    n, out = breaks_and_output(f, x, within=reorderable(print))
    assert n == 0 and "mid" in out


def test_compare_compiled():
    x = torch.randn(4)
    assert compare_compiled(None, loop, x) is None
    same, printed, graphs = compare_compiled(loop, loop, x)
    assert same and printed and graphs == 0

    def loop_fixed(x):
        for _ in range(3):
            x = x * 2
        print("in loop\nin loop\nin loop")
        return x + 1

    assert compare_compiled(loop_fixed, loop, x) == (True, True, 2)
    assert compare_compiled(lambda t: t * 3, loop, x)[:2] == (False, False)


def _logged_breaks(fn, *args):
    from helpers.dynamo.logs import capture_logs

    with contextlib.redirect_stdout(io.StringIO()), capture_logs("graph_breaks") as logs:
        compile_stats(fn, *args)
    return break_records(logs.messages("graph_breaks"))


def _line_of(fn, text):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def test_break_records_read_where_what_and_why_from_the_log():
    [r] = _logged_breaks(f, torch.randn(4))
    assert (r.file, r.line) == (__file__, _line_of(f, 'print("mid")')) and r.stack[-1][2] == "f"
    assert r.title == "Failed to trace builtin operator" and "print" in r.explanation and r.hints
    assert not r.skips_frame and r.innermost_in(__file__)[1] == r.line
    [b] = _logged_breaks(branchy, torch.randn(4))
    assert b.title == "Data-dependent branching" and b.line == _line_of(branchy, "if x.sum()")
    [u] = _logged_breaks(big, torch.randn(4))  # the break sits in util; big's call of it is on the stack too
    assert u.line == _line_of(util, "print") and [fr[2] for fr in u.stack][-2:] == ["big", "util"]


def test_break_records_mark_a_break_in_a_loop_as_skipping_the_function():
    [r] = _logged_breaks(loop, torch.randn(4))
    assert r.skips_frame and "graph break in loop" in r.titles and r.line == _line_of(loop, "print")


def test_parse_break_ignores_other_messages():
    assert parse_break("Recompiling function f") is None and break_records(["", "x"]) == []
