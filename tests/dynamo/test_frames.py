"""Unit tests of helpers/dynamo/frames.py."""
import torch

from helpers.core.private import private
from helpers.dynamo.frames import (
    FrameLog,
    FrameSeen,
    callback_while_compiling,
    eval_frame_callback,
    hook_probe,
    profiled_events,
    set_eval_frame_binding,
    skiplisted_stdlib,
    watch_frames,
)
from helpers.dynamo.state import clear_compile_state


def test_hook_probe_sees_callback_only_inside_a_compiled_call():
    probe, seen = hook_probe()

    def step(x):
        y = x * 2
        probe()
        return y + 1

    clear_compile_state()
    probe()
    torch.compile(step, backend="eager")(torch.randn(4))
    probe()
    assert seen == ["NoneType", "CatchErrorsWrapper", "NoneType"]
    assert eval_frame_callback() is None
    assert "set_eval_frame" in repr(set_eval_frame_binding())


def test_watch_frames_counts_first_call_only_and_restores():
    CatchErrorsWrapper = private("torch._dynamo.convert_frame.CatchErrorsWrapper")

    original = CatchErrorsWrapper.__call__

    def double(t):
        return t * 2

    def step(x):
        return double(x) + 1

    clear_compile_state()
    c = torch.compile(step, backend="eager")
    with watch_frames() as log:
        c(torch.randn(4))
        names = [fr.name for fr in log.frames]
        assert names[0] == "step" and "double" not in names and log.count("compiled") == 1
        # everything else offered on a first call is torch's own runtime machinery, skipped
        assert log.count("skipped: torch internals") == len(names) - 1
        log.clear()
        c(torch.randn(4))
        assert log.count() == 0
    assert CatchErrorsWrapper.__call__ is original
    table = FrameLog([FrameSeen("step", "a.py", "compiled")]).table()
    assert "step" in table and "compiled" in table


def test_frame_seen_within_matches_itself_and_its_callers():
    fr = FrameSeen("disable", "torch/_dynamo/decorators.py", "skipped: torch internals", "inner",
                      ("torch/_compile.py:inner", "x.py:step"), "SKIP/DEFAULT")
    assert fr.within("inner", "torch/_compile.py") and fr.within("disable") and fr.within("step", "x.py")
    assert not fr.within("inner", "other.py") and not fr.within("nothing")


def test_skiplist_callback_and_profiler_events():
    assert "random" in skiplisted_stdlib() and all(isinstance(m, str) for m in skiplisted_stdlib())
    assert callback_while_compiling(lambda t: t.cos() + 1, torch.randn(3)) == "NoneType"
    compiled = torch.compile(lambda t: t.sin() + 1, backend="eager")
    compiled(torch.randn(3))
    assert "TorchDynamo Cache Lookup" in profiled_events(compiled, torch.randn(3))
    assert "TorchDynamo Cache Lookup" not in profiled_events(lambda t: t.sin() + 1, torch.randn(3))
