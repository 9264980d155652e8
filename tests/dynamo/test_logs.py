"""Unit tests of helpers/dynamo/logs.py."""
import contextlib
import io
import logging

import pytest
import torch

from helpers.core.env import CourseError
from helpers.core.private import private
from helpers.dynamo.frames import break_reports
from helpers.dynamo.logs import Logs, artifact_loggers, capture_logs, silence
from helpers.dynamo.state import clear_compile_state
from helpers.dynamo.variables import recompile_reasons


def mul_add(x, y):
    z = x * y
    return z + 1


def broken(x):
    x = x * 2
    print("mid")
    return x + 1


def test_recompile_reasons():
    clear_compile_state()

    def g(x, n):
        return x * n

    c = torch.compile(g, backend="eager")
    with capture_logs("recompiles") as logs:
        c(torch.randn(4), 3)
        c(torch.randn(4), 4)
    assert recompile_reasons(logs) == [["0/0: n == 3"]]
    assert recompile_reasons(Logs([("recompiles", "something else")])) == []


def test_break_reports_parse_both_message_shapes():
    plain = ("Graph break in user code at f.py:3\nGraph Break Reason: Data-dependent branching\n"
             "  Explanation: Detected data-dependent branching.\n  Hint: one.\n  Hint: Use `torch.cond`.\n\n"
             "  Developer debug context: attempted to jump with TensorVariable()\n")
    gave_up = ("Graph break in user code at f.py:9\nGraph Break Reason: Failed to handle graph break gracefully. "
               "Skipping the function and falling back to eager. Graph break encountered:\n\n"
               "Missing bytecode handler\n  Explanation: Dynamo does not know `DELETE_GLOBAL`.\n")
    first, second = break_reports(Logs([("graph_breaks", plain), ("recompiles", "x"), ("graph_breaks", gave_up)]))
    assert (first.reason, first.context, first.outcome) == ("Data-dependent branching",
                                                            "attempted to jump with TensorVariable()", "")
    assert first.hints == ["one.", "Use `torch.cond`."]
    assert second.reason == "Missing bytecode handler" and second.outcome.endswith("falling back to eager.")
    assert second.explanation.startswith("Dynamo does not know") and second.hints == []


def test_logs_filters_by_artifact():
    logs = Logs([("guards", "a\nb"), ("recompiles", "c"), ("guards", "d")])
    assert logs.messages("guards") == ["a\nb", "d"] and logs.messages() == ["a\nb", "c", "d"]
    assert logs.lines("guards") == ["a", "b", "d"] and logs.lines() == ["a", "b", "c", "d"]
    assert logs.text("recompiles") == "c" and logs.messages("nothing") == []


def test_capture_logs_collects_trace_and_graph_code_without_printing(capfd):
    clear_compile_state()
    with capture_logs("trace_bytecode", "graph_code") as logs:
        torch.compile(mul_add, backend="eager")(torch.randn(3), torch.randn(3))
    assert any(line.startswith("TRACE BINARY_OP") for line in logs.lines("trace_bytecode"))
    assert "def forward" in logs.text("graph_code")
    err = capfd.readouterr().err
    assert "TRACE" not in err and "def forward" not in err


def test_capture_logs_collects_one_graph_break_record(capfd):
    clear_compile_state()
    with capture_logs("graph_breaks") as logs, contextlib.redirect_stdout(io.StringIO()):
        torch.compile(broken, backend="eager")(torch.randn(4))
    assert len(logs.messages("graph_breaks")) == 1
    assert any("reorderable_logging_functions" in line for line in logs.lines())
    assert "Graph break" not in capfd.readouterr().err


def test_capture_logs_names_an_unknown_artifact():
    with pytest.raises(CourseError, match="no torch logger"):
        with capture_logs("no_such_artifact"):
            pass


def test_capture_logs_restores_loggers_and_switches():
    state = private("torch._logging._internal.log_state")
    loggers = artifact_loggers("recompiles")
    assert loggers, "no recompiles logger found"
    before = [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
    assert not state.is_artifact_enabled("recompiles")
    with capture_logs("recompiles") as logs:
        assert state.is_artifact_enabled("recompiles")
        loggers[0].debug("hello %s", "there")
    assert logs.messages("recompiles") == ["hello there"]
    assert [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers] == before
    assert not state.is_artifact_enabled("recompiles")


def test_capture_logs_keeps_the_readers_own_settings(capfd):
    set_logs = private("torch._logging.set_logs")
    set_logs(recompiles=True)  # what TORCH_LOGS="recompiles" would have done
    try:
        state = private("torch._logging._internal.log_state")
        loggers = artifact_loggers("recompiles")
        before = [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
        with capture_logs("recompiles", "guards") as logs:
            loggers[0].debug("inside")
        assert logs.messages("recompiles") == ["inside"]
        assert state.is_artifact_enabled("recompiles") and not state.is_artifact_enabled("guards")
        assert [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers] == before
        capfd.readouterr()
        loggers[0].debug("after")  # the reader's setting prints again
        assert "after" in capfd.readouterr().err
    finally:
        set_logs()


def test_capture_logs_plain_logger_collects_warnings(capfd):
    logger = logging.getLogger("torch._dynamo.convert_frame")
    level, propagate = logger.level, logger.propagate
    with capture_logs(loggers=("torch._dynamo.convert_frame",)) as logs:
        logger.warning("limit %d hit", 8)
        logger.debug("not collected")
    assert logs.records == [("torch._dynamo.convert_frame", "limit 8 hit")]
    assert (logger.level, logger.propagate) == (level, propagate)
    assert "limit 8 hit" not in capfd.readouterr().err


def test_silence_restores_level():
    logger = logging.getLogger("torch._dynamo")
    level = logger.level
    with silence("torch._dynamo"):
        assert logger.level > logging.CRITICAL
    assert logger.level == level
    with silence("torch._dynamo", level=logging.ERROR):
        assert logger.level == logging.ERROR and not logger.isEnabledFor(logging.WARNING)
    assert logger.level == level
