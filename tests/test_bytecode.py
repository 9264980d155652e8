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
