"""Unit tests of helpers/dynamo/translator.py."""
import torch

from helpers.dynamo.translator import (
    dispatch_census,
    family,
    first_compile,
    parse_trace,
    placeholder_kinds,
    short_vt,
    split_top,
    trace,
)


def f(x):
    return torch.sin(x) + 1


def mul_add(x, y):
    z = x * y
    return z + 1


_FLAG = 0


def _delete_late(x):
    global _FLAG
    y = torch.sin(x) + 1
    del _FLAG  # DELETE_GLOBAL: no handler
    _FLAG = 0
    return y * 2


def test_split_and_parse_trace():
    assert split_top("A(1, 2), B[x, y], C") == ["A(1, 2)", "B[x, y]", "C"]
    assert split_top("") == []
    steps = parse_trace(["TRACE LOAD_CONST 1 [TensorVariable()]",
                            "TRACE BINARY_OP 0 [TensorVariable(), ConstantVariable(int: 1)]", "noise"])
    assert [s.opname for s in steps] == ["LOAD_CONST", "BINARY_OP"]
    assert steps[1].stack == ["TensorVariable()", "ConstantVariable(int: 1)"] and steps[1].arg == "0"
    assert "BINARY_OP" in str(steps[1])


def test_short_vt():
    assert short_vt("LazyVariableTracker(unrealized: <class 'torch.Tensor'>)") == "LazyVariableTracker(unrealized: Tensor)"
    assert short_vt("LazyVariableTracker(realized: BuiltinVariable(len))") == "BuiltinVariable(len)"
    text = "TorchInGraphFunctionVariable(<built-in method sin of type object at 0x7f>, kind=AllowInGraphKind.DEFAULT)"
    assert short_vt(text) == "TorchInGraphFunctionVariable(sin)"


def test_trace_steps_and_graph():
    t = trace(mul_add, torch.randn(8), torch.randn(8))
    ops = [s.opname for s in t.steps]
    assert ops[0] == "RESUME" and ops.count("BINARY_OP") == 2
    assert [str(n.target.__name__) for n in t.call_nodes()] == ["mul", "add"]
    assert len(t.graphs) == 1 and t.log.lines("trace_bytecode")


def test_dispatch_census_partitions_the_table():
    c = dispatch_census()
    assert c.slots == 256
    assert c.filled == len(c.handlers) + len(c.placeholders) == c.python_opcodes
    assert "LOAD_FAST" in c.handlers and c.owner["LOAD_FAST"].endswith("LOAD_FAST")
    assert not set(c.handlers) & set(c.placeholders)
    assert "Dispatch" in c.metaclass


def test_family():
    assert family("LOAD_FAST") == "load"
    assert family("BINARY_OP") == "arithmetic / compare"
    assert family("INSTRUMENTED_CALL") == "instrumented"
    assert family("POP_TOP") == "stack"
    assert family("SOMETHING_NEW") == "other"


def test_placeholder_kinds_partition_the_placeholders():
    census = dispatch_census()
    kinds = placeholder_kinds(census)
    assert sorted(op for ops in kinds.values() for op in ops) == sorted(census.placeholders)
    assert "EXTENDED_ARG" in kinds["rewritten"] and "DELETE_GLOBAL" in kinds["unsupported"]
    assert {"SEND", "YIELD_VALUE"} <= set(kinds["generator"])
    assert all(op.startswith("INSTRUMENTED_") for op in kinds["instrumented"])
    generator = dispatch_census("InliningGeneratorInstructionTranslator")
    assert "YIELD_VALUE" in generator.handlers and "YIELD_VALUE" in census.placeholders


def test_first_compile_counts_attempts_and_keeps_its_graphs():
    late = first_compile(_delete_late, torch.randn(4))
    assert len(late.graphs) == 1 and len(late.call_nodes()) == 2 and late.attempts == 2
    assert late.breaks[0].reason == "Missing bytecode handler" and late.tracing_s > 0 and late.wall_s > 0
    other = first_compile(mul_add, torch.randn(4), torch.randn(4))  # resets Dynamo, and with it old backends
    assert len(late.graphs) == 1 and len(other.graphs) == 1 and other.attempts == 1 and other.breaks == []
    t = trace(mul_add, torch.randn(4), torch.randn(4))
    trace(f, torch.randn(4))
    assert len(t.graphs) == 1
