"""Unit tests of helpers/inductor/lowering.py (chapter 18)."""
import torch

from helpers.inductor.lowering import (FATES, CountOps, EvalOps, PrintOps, count_loads, in_inductor_decompositions,
                                       loop_ir, lowering_of, lowering_table, node_block, ops, read_ir, run_inner_fn,
                                       unroll_reductions_threshold)

aten = torch.ops.aten

DUMP = """op0: SchedulerNode(ComputedBuffer)
op0.writes = [MemoryDep('buf0', c0, {c0: 4})]
op0.met_dependencies = [MemoryDep('arg0_1', c0, {c0: 32})]
op0.outputs = [
    buf0: ComputedBuffer
    buf0.users = [NodeUser(node=OUTPUT, can_inplace=False, is_weak=False)]
]
op0.group.device = cpu
op0.group.iteration = ((4,), (8,))
class op0_loop_body:
    var_ranges = {p0: 4, p1: 8}
    index0 = 8*p0 + p1
    index1 = p0
    def body(self, ops):
        get_index = self.get_index('index0')
        load = ops.load('arg0_1', get_index)
        relu = ops.relu(load)
        reduction = ops.reduction(torch.float32, torch.float32, 'sum', relu)
        get_index_1 = self.get_index('index1')
        store_reduction = ops.store_reduction('buf0', get_index_1, reduction)
        return None
"""


def test_read_ir_parses_a_reduction_node():
    (node,) = read_ir(DUMP)
    assert (node.name, node.kind, node.iteration) == ("op0", "SchedulerNode(ComputedBuffer)", "((4,), (8,))")
    assert node.var_ranges == {"p0": 4, "p1": 8} and node.reduction == "sum" and node.is_reduction
    assert node.loads == [("arg0_1", "8*p0 + p1")] and node.stores == [("buf0", "p0")]
    assert (node.output_range, node.reduction_range, node.writes, node.users) == (4, 8, ["buf0"], 1)
    assert "index0 = 8*p0 + p1" in node_block(DUMP, "op0")


def test_lowering_table_and_probes():
    assert lowering_of(aten.relu.default).fate == FATES[0]
    assert lowering_of(aten.mm.default).fate == FATES[2]
    assert lowering_of(aten.nonzero.default).fate == FATES[4]
    assert lowering_of(aten._cdist_forward.default).fallback
    table = lowering_table()
    assert table.entries > table.overloads == sum(table.fates.values()) and table.fallbacks > table.overridden > 0
    assert not in_inductor_decompositions(aten.sum.dim_IntList)
    assert unroll_reductions_threshold() >= 2


def test_toy_handlers_read_one_inner_fn_three_ways():
    def body(i):
        return ops.store("y", i, ops.relu(ops.add(ops.load("x", i), ops.constant(1.0))))
    printer, counter, evaluator = PrintOps(), CountOps(), EvalOps({"x": [-3.0, 1.0]})
    run_inner_fn(body, printer)
    run_inner_fn(body, counter)
    for i in range(2):
        run_inner_fn(body, evaluator, index=(i,))
    assert printer.lines[0] == "tmp0 = ops.load('x', i)" and len(printer.lines) == 5
    assert counter.reads == {"x": 1} and counter.writes == {"y": 1}
    assert evaluator.buffers["y"] == {0: 0.0, 1: 2.0}

    class Loads:
        def __init__(self):
            self.loads = 0

        def load(self, buf, index):
            self.loads += 1

        def __getattr__(self, name):
            return lambda *a: None
    assert count_loads(Loads, body) == 1


def test_loop_ir_inlines_an_unrealized_producer():
    ir = loop_ir(lambda t: (t * 2 + 1).relu().sum(dim=1), torch.randn(4, 8))
    assert len(ir.pre) == 1 and ir.pre[0].reduction == "sum" and ir.pre[0].loads[0][0] == "arg0_1"
    assert len(ir.code.kernels) == 1


def test_read_ir_counts_a_fused_node_once():
    # the layout torch 2.11-2.15 write: the parts follow `op0_op1.snodes[i] =` flush left
    fused = ("op0_op1: FusedSchedulerNode(SchedulerNode,SchedulerNode)\n"
             "op0_op1.writes = [MemoryDep('buf0', c0, {c0: 32}), MemoryDep('buf1', c0, {c0: 32})]\n"
             "op0_op1.snodes[0] =\n" + DUMP + "\nop0_op1.snodes[1] =\n" + DUMP.replace("op0", "op1"))
    nodes = read_ir(fused)
    assert [n.name for n in nodes] == ["op0_op1"] and nodes[0].kind.startswith("FusedSchedulerNode(")
    assert nodes[0].writes == ["buf0", "buf1"]
    indented = fused.replace("\nop0:", "\n    op0:")  # what FusedSchedulerNode.debug_str_extra means to write
    assert [n.name for n in read_ir(indented)] == ["op0_op1"]


def test_a_real_horizontal_fusion_reads_as_one_node_after_fusion():
    x = torch.randn(4, 8)
    ir = loop_ir(lambda t: (t.sin(), t.cos()), x)
    assert [n.name for n in ir.pre] == ["op0", "op1"]
    assert [n.name for n in ir.post] == ["op0_op1"] and len(ir.code.kernels) == 1


def test_loop_ir_can_stop_after_scheduling():
    x = torch.randn(4, 8)
    ir = loop_ir(lambda t: t.relu().sum(dim=0), x, codegen=False)
    assert torch.allclose(ir.result, x.relu().sum(dim=0))
    assert ir.code.kernels == [] and len(ir.pre) == 1 and len(ir.pre[0].loads) == 4  # unrolled: 4 < 8


def test_exercise_18_1_accepts_an_equal_index_written_another_way():
    from helpers.inductor.lowering import index_answer

    assert index_answer("32*p1 + p0", "p0 + 32*p1") == "p0 + 32*p1"
    assert index_answer("p0+32*p1", "p0 + 32*p1") == "p0 + 32*p1"
    assert index_answer("32*p0 + p1", "p0 + 32*p1") == "32*p0 + p1"  # a different index stays the reader's
    assert index_answer("p0 +", "p0 + 32*p1") == "p0 +"
    assert index_answer(None, "p0") is None


def test_range_answer_reads_a_tuple_of_sizes_as_its_element_count():
    from helpers.inductor.lowering import range_answer

    assert range_answer(32) == 32
    assert range_answer((32,)) == 32 and range_answer([4, 8]) == 32 and range_answer(()) == 1
    assert range_answer("32") == "32"      # not a count: left as written, judged wrong
    assert range_answer((True,)) == (True,)
