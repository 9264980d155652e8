"""Unit tests for helpers/bytecode.py (chapters 3-5)."""
import sys

import torch

from helpers import bytecode as bc
from helpers.inspect import clear_compile_state, private
from helpers.logs import Logs, capture_logs


def f(x):
    return torch.sin(x) + 1


def mul_add(x, y):
    z = x * y
    return z + 1


def test_python_minor():
    assert bc.python_minor() == f"{sys.version_info.major}.{sys.version_info.minor}"


def test_instructions_drop_bookkeeping_on_request():
    ops = [i.opname for i in bc.instructions(mul_add, bookkeeping=False)]
    assert "RESUME" not in ops and ops[-1] in ("RETURN_VALUE", "RETURN_CONST")
    assert ops.count("BINARY_OP") == 2
    full = bc.instructions(mul_add)
    assert full[0].opname == "RESUME" and len(full) == len(ops) + 1
    assert [i.argval for i in full if i.opname == "LOAD_FAST"][:2] == ["x", "y"]
    assert [i.offset for i in full] == sorted(i.offset for i in full)
    text = bc.listing(mul_add, bookkeeping=False)
    assert "BINARY_OP" in text and len(text.splitlines()) == len(ops)


def test_listing_trims_and_says_so():
    n = len(bc.instructions(mul_add))
    text = bc.listing(mul_add, start=1, stop=3)
    assert "1 instructions above" in text and f"{n - 3} more instructions not shown" in text
    assert len(text.splitlines()) == 4
    assert "not shown" not in bc.listing(mul_add)


def test_ins_str_shows_offset_and_counts():
    line = str(bc.Ins(12, "BUILD_TUPLE", 3, "", 3))
    assert line.split() == ["12", "BUILD_TUPLE", "3"]
    assert str(bc.Ins(0, "RESUME", 0, "", 0)).split() == ["0", "RESUME"]


def test_short_hides_compiled_fn_uuid():
    assert bc._short("NULL + __compiled_fn_3_0d77ef53_6bc9_4019_a9a6_e2f71883d62d") == "NULL + __compiled_fn_3_…"
    assert bc._short("__resume_at_40_3") == "__resume_at_40_3"


def test_hook_probe_sees_callback_only_inside_a_compiled_call():
    probe, seen = bc.hook_probe()

    def step(x):
        y = x * 2
        probe()
        return y + 1

    clear_compile_state()
    probe()
    torch.compile(step, backend="eager")(torch.randn(4))
    probe()
    assert seen == ["NoneType", "CatchErrorsWrapper", "NoneType"]
    assert bc.eval_frame_callback() is None
    assert "set_eval_frame" in repr(bc.set_eval_frame_binding())


def test_watch_frames_counts_first_call_only_and_restores():
    CatchErrorsWrapper = private("torch._dynamo.convert_frame.CatchErrorsWrapper")

    original = CatchErrorsWrapper.__call__

    def double(t):
        return t * 2

    def step(x):
        return double(x) + 1

    clear_compile_state()
    c = torch.compile(step, backend="eager")
    with bc.watch_frames() as log:
        c(torch.randn(4))
        names = [fr.name for fr in log.frames]
        assert names[0] == "step" and "double" not in names and log.count("compiled") == 1
        # everything else offered on a first call is torch's own runtime machinery, skipped
        assert log.count("skipped: torch internals") == len(names) - 1
        log.clear()
        c(torch.randn(4))
        assert log.count() == 0
    assert CatchErrorsWrapper.__call__ is original
    table = bc.FrameLog([bc.FrameSeen("step", "a.py", "compiled")]).table()
    assert "step" in table and "compiled" in table


def test_split_and_parse_trace():
    assert bc.split_top("A(1, 2), B[x, y], C") == ["A(1, 2)", "B[x, y]", "C"]
    assert bc.split_top("") == []
    steps = bc.parse_trace(["TRACE LOAD_CONST 1 [TensorVariable()]",
                            "TRACE BINARY_OP 0 [TensorVariable(), ConstantVariable(int: 1)]", "noise"])
    assert [s.opname for s in steps] == ["LOAD_CONST", "BINARY_OP"]
    assert steps[1].stack == ["TensorVariable()", "ConstantVariable(int: 1)"] and steps[1].arg == "0"
    assert "BINARY_OP" in str(steps[1])


def test_short_vt():
    assert bc.short_vt("LazyVariableTracker(unrealized: <class 'torch.Tensor'>)") == "LazyVariableTracker(unrealized: Tensor)"
    assert bc.short_vt("LazyVariableTracker(realized: BuiltinVariable(len))") == "BuiltinVariable(len)"
    text = "TorchInGraphFunctionVariable(<built-in method sin of type object at 0x7f>, kind=AllowInGraphKind.DEFAULT)"
    assert bc.short_vt(text) == "TorchInGraphFunctionVariable(sin)"


def test_trace_steps_and_graph():
    t = bc.trace(mul_add, torch.randn(8), torch.randn(8))
    ops = [s.opname for s in t.steps]
    assert ops[0] == "RESUME" and ops.count("BINARY_OP") == 2
    assert [str(n.target.__name__) for n in t.call_nodes()] == ["mul", "add"]
    assert len(t.graphs) == 1 and t.log.lines("trace_bytecode")


def test_dispatch_census_partitions_the_table():
    c = bc.dispatch_census()
    assert c.slots == 256
    assert c.filled == len(c.handlers) + len(c.placeholders) == c.python_opcodes
    assert "LOAD_FAST" in c.handlers and c.owner["LOAD_FAST"].endswith("LOAD_FAST")
    assert not set(c.handlers) & set(c.placeholders)
    assert "Dispatch" in c.metaclass


def test_family():
    assert bc.family("LOAD_FAST") == "load"
    assert bc.family("BINARY_OP") == "arithmetic / compare"
    assert bc.family("INSTRUMENTED_CALL") == "instrumented"
    assert bc.family("POP_TOP") == "stack"
    assert bc.family("SOMETHING_NEW") == "other"


class Cfg:
    def __init__(self):
        self.scale = 2


def test_guard_tree_parsing_and_guard_trees():
    text = ("TREE_GUARD_MANAGER:\n+- RootGuardManager\n| +- EQUALS_MATCH: L['n'] == 3   # n\n"
            "| +- GuardManager: source=L['x']\n| | +- TENSOR_MATCH: check_tensor(L['x'])  # y\n")
    tree = bc.GuardTree(text)
    assert tree.leaves == [("EQUALS_MATCH", "L['n'] == 3"), ("TENSOR_MATCH", "check_tensor(L['x'])")]
    assert tree.kinds()["EQUALS_MATCH"] == 1 and tree.checks("EQUALS_MATCH") == ["L['n'] == 3"]

    cfg = Cfg()

    def g(x, n, conf=cfg):
        return x * n + conf.scale

    trees = bc.guard_trees(g, torch.randn(4), 3)
    assert len(trees) == 1
    assert set(trees[0].checks("EQUALS_MATCH")) == {"L['n'] == 3", "L['conf'].scale == 2"}


def test_recompile_reasons():
    clear_compile_state()

    def g(x, n):
        return x * n

    c = torch.compile(g, backend="eager")
    with capture_logs("recompiles") as logs:
        c(torch.randn(4), 3)
        c(torch.randn(4), 4)
    assert bc.recompile_reasons(logs) == [["0/0: n == 3"]]
    assert bc.recompile_reasons(Logs([("recompiles", "something else")])) == []


def test_sources():
    assert bc.source_name(bc.local_source("x")) == "L['x']"
    assert bc.source_name(bc.attr_source(bc.global_source("cfg"), "scale")) == "G['cfg'].scale"
    assert bc.source_name(bc.item_source(bc.local_source("items"), 0)) == "L['items'][0]"

    class Prop:  # a source whose name is a property, as in newer torch
        name = "L['y']"

    assert bc.source_name(Prop()) == "L['y']"


def test_input_kinds_names_tensors_symints_and_promoted_floats():
    from helpers.bytecode import input_kinds
    from helpers.inspect import GraphRecorder, clear_compile_state

    def mul(x, s):
        return x * s

    x = torch.randn(8)
    kinds = []
    for values in ([0.5, 1.5], [3, 4]):
        clear_compile_state()
        rec = GraphRecorder()
        compiled = torch.compile(mul, backend=rec)
        for v in values:
            compiled(x, v)
        kinds.append(input_kinds(rec.graphs[-1]))
    assert kinds[0] == {"L_x_": "Tensor float32 [8]", "L_s_": "Tensor float64 []"}  # a float becomes a 0-d tensor
    assert kinds[1] == {"L_x_": "Tensor float32 [8]", "L_s_": "SymInt"}


# ---------------------------------------------------------------- chapters 3-4: frames, strategies, the table's gaps

import random

_FLAG = 0


def _roll():
    return random.randint(1, 6)


def _delete_late(x):
    global _FLAG
    y = torch.sin(x) + 1
    del _FLAG  # DELETE_GLOBAL: no handler
    _FLAG = 0
    return y * 2


def test_frame_seen_within_matches_itself_and_its_callers():
    fr = bc.FrameSeen("disable", "torch/_dynamo/decorators.py", "skipped: torch internals", "inner",
                      ("torch/_compile.py:inner", "x.py:step"), "SKIP/DEFAULT")
    assert fr.within("inner", "torch/_compile.py") and fr.within("disable") and fr.within("step", "x.py")
    assert not fr.within("inner", "other.py") and not fr.within("nothing")


def test_watch_frames_records_callers_and_strategies():
    roll = torch.compiler.disable(_roll, recursive=False)

    def step(x):
        y = x.cos()
        roll()
        return y + 1

    clear_compile_state()
    with bc.watch_frames() as log:
        torch.compile(step, backend="eager")(torch.randn(4))
    by_name = {fr.name: fr for fr in log.frames}
    assert by_name["randint"].decision == "skipped: skipfiles" and by_name["randint"].caller == "_roll"
    assert by_name["randrange"].within("_roll") and not by_name["_roll"].within("randint")
    assert {fr.strategy for fr in log.frames if fr.decision == "compiled"} == {"DEFAULT/DEFAULT"}
    assert {fr.strategy for fr in log.frames if fr.decision != "compiled"} == {"SKIP/DEFAULT"}


def test_skiplist_callback_and_profiler_events():
    assert "random" in bc.skiplisted_stdlib() and all(isinstance(m, str) for m in bc.skiplisted_stdlib())
    assert bc.callback_while_compiling(lambda t: t.cos() + 1, torch.randn(3)) == "NoneType"
    compiled = torch.compile(lambda t: t.sin() + 1, backend="eager")
    compiled(torch.randn(3))
    assert "TorchDynamo Cache Lookup" in bc.profiled_events(compiled, torch.randn(3))
    assert "TorchDynamo Cache Lookup" not in bc.profiled_events(lambda t: t.sin() + 1, torch.randn(3))


def test_break_reports_parse_both_message_shapes():
    plain = ("Graph break in user code at f.py:3\nGraph Break Reason: Data-dependent branching\n"
             "  Explanation: Detected data-dependent branching.\n  Hint: one.\n  Hint: Use `torch.cond`.\n\n"
             "  Developer debug context: attempted to jump with TensorVariable()\n")
    gave_up = ("Graph break in user code at f.py:9\nGraph Break Reason: Failed to handle graph break gracefully. "
               "Skipping the function and falling back to eager. Graph break encountered:\n\n"
               "Missing bytecode handler\n  Explanation: Dynamo does not know `DELETE_GLOBAL`.\n")
    first, second = bc.break_reports(Logs([("graph_breaks", plain), ("recompiles", "x"), ("graph_breaks", gave_up)]))
    assert (first.reason, first.context, first.outcome) == ("Data-dependent branching",
                                                            "attempted to jump with TensorVariable()", "")
    assert first.hints == ["one.", "Use `torch.cond`."]
    assert second.reason == "Missing bytecode handler" and second.outcome.endswith("falling back to eager.")
    assert second.explanation.startswith("Dynamo does not know") and second.hints == []


def test_placeholder_kinds_partition_the_placeholders():
    census = bc.dispatch_census()
    kinds = bc.placeholder_kinds(census)
    assert sorted(op for ops in kinds.values() for op in ops) == sorted(census.placeholders)
    assert "EXTENDED_ARG" in kinds["rewritten"] and "DELETE_GLOBAL" in kinds["unsupported"]
    assert {"SEND", "YIELD_VALUE"} <= set(kinds["generator"])
    assert all(op.startswith("INSTRUMENTED_") for op in kinds["instrumented"])
    generator = bc.dispatch_census("InliningGeneratorInstructionTranslator")
    assert "YIELD_VALUE" in generator.handlers and "YIELD_VALUE" in census.placeholders


def test_first_compile_counts_attempts_and_keeps_its_graphs():
    late = bc.first_compile(_delete_late, torch.randn(4))
    assert len(late.graphs) == 1 and len(late.call_nodes()) == 2 and late.attempts == 2
    assert late.breaks[0].reason == "Missing bytecode handler" and late.tracing_s > 0 and late.wall_s > 0
    other = bc.first_compile(mul_add, torch.randn(4), torch.randn(4))  # resets Dynamo, and with it old backends
    assert len(late.graphs) == 1 and len(other.graphs) == 1 and other.attempts == 1 and other.breaks == []
    t = bc.trace(mul_add, torch.randn(4), torch.randn(4))
    bc.trace(f, torch.randn(4))
    assert len(t.graphs) == 1
