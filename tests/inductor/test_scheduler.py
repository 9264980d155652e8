"""Unit tests of helpers/inductor/scheduler.py (chapter 19)."""
import torch

from helpers.inductor.code import InductorOutput
from helpers.inductor.scheduler import Schedule, horizontal_check, inductor_setting, loop_nests, outer_loops, schedule

CPP = """
{
    for(int64_t x0=0; x0<16; x0+=1L)
    {
        for(int64_t x1=0; x1<16; x1+=8L)
        {
            tmp = 1;
        }
    }
}
{
    for(int64_t x0=0; x0<16; x0+=8L)
    {
        for (long x0_inner = 0; x0_inner < 8; x0_inner++)
        {
        }
    }
}
"""


def test_loop_nests_counts_only_outermost_loops():
    assert loop_nests(CPP) == 2
    assert [line.endswith(("x0+=1L)", "x0+=8L)")) for line in outer_loops(CPP)] == [True, True]
    assert loop_nests("") == 0


def epilogue(x):
    return torch.relu((torch.sin(x) + 1).sum(1)) * 2


def wall(x):
    y = torch.sin(x)
    return torch.relu(y + y.sum())


def wall_exp(x):
    """The wall with exp, which the CPU's heavy-op list (should_realize_on_reuse) stores for its readers."""
    y = torch.exp(x)
    return torch.relu(y + y.sum())


def test_epilogue_fuses_and_scores_the_shared_buffer_in_bytes():
    x = torch.randn(64, 64)
    s = schedule(epilogue, x)
    assert [n.ir for n in s.pre] == ["Reduction", "Pointwise"]
    assert s.pre[1].unmet == ["buf0"]
    assert s.shared_data[("op0", "op1")] == 64 * 4
    assert s.post == [["op0", "op1"]] and s.fusions == ["op0 with op1"]
    assert s.language == "c++" and s.kernel_count == s.loop_nests >= 1
    assert schedule(epilogue, x) is s  # cached: one compile per function and shape


def test_global_reduction_is_a_wall():
    s = schedule(wall, torch.randn(64, 64))
    assert s.shared_data[("op0", "op1")] == 64 * 64 * 4 + 4
    assert s.possible_fusions[0] == 0 and len(s.post) == 2 and s.loop_nests == 2
    assert all("sin" in n.origins for n in s.pre)
    # the model: op0 reads x and writes the scalar; op1 reads x and the scalar, writes the output
    assert s.bytes_moved == 3 * 64 * 64 * 4 + 8


def test_horizontal_check_and_settings():
    assert horizontal_check(None, lambda x: x) is None
    assert isinstance(inductor_setting("max_fusion_size"), int)
    assert isinstance(inductor_setting("cpp.simdlen"), (int, type(None)))


def mismatch(x):
    return torch.sin(x), torch.cos(x.t()).contiguous()


def test_reorder_round_is_logged_on_cpu_and_fuses_nothing_there():
    x = torch.randn(64, 64)
    s = schedule(mismatch, x)
    assert s.rejections == ["cannot fuse op0 with op1: no shared data"]
    # fuse_nodes' extra round ran (loop_ordering_after_fusion is on by default), re-scored the pair and fused nothing:
    # shared_data_after_reordering_loop returns -1 for CPU nodes
    assert "op0 and op1 has 0 shared data" in s.reorder_round and s.reorder_fusions == []
    off = schedule(mismatch, x, loop_ordering_after_fusion=False, loop_index_inversion_in_fusion=False)
    assert off.reorder_round == [] and len(off.post) == len(s.post) == 2


def test_op_name_heuristic_stores_exp_but_recomputes_sin_on_cpu():
    x = torch.randn(64, 64)
    assert [n.origins for n in schedule(wall_exp, x).pre][0] == ["exp"]  # y is its own node: stored
    assert all("sin" in n.origins for n in schedule(wall, x).pre)       # sin in both nodes: recomputed


def test_reduction_nodes_and_stored_values_name_what_each_node_is():
    x = torch.randn(64, 64)
    plain = schedule(wall, x)
    # sin is inlined into both readers on a CPU: one reduction, nothing stored for another node
    assert plain.reduction_nodes == 1 and plain.stored_values == [] and plain.stored_text() == "none"
    assert [n.buffers for n in plain.pre] == [["buf0"], ["buf1"]]
    stored = schedule(wall_exp, x)
    # exp is on the CPU's heavy-op list (should_realize_on_reuse): y is a pointwise node that the others read
    assert stored.reduction_nodes == 1 and stored.stored_values == [["exp"]] and stored.stored_text() == "exp"


def test_stored_readers_say_who_reads_a_stored_value():
    x = torch.randn(64, 64)
    plain = schedule(wall, x)
    assert plain.stored_readers == [] and plain.stored_readers_text() == "none"
    stored = schedule(wall_exp, x)
    # the stored exp is read by the sum and by the pointwise user
    assert [n.name for n in stored.stored_readers] == ["op1", "op2"]
    assert [n.ir for n in stored.stored_readers] == ["Reduction", "Pointwise"]
    assert stored.stored_readers_text() == "op1 (sum_1), op2 (add+relu)"


def test_stores_counts_the_store_lines_left_in_triton_kernels():
    def kernel(name, stores):
        body = "\n".join(f"    tl.store(out_ptr{i} + (x0), tmp{i}, xmask)" for i in range(stores))
        return f"{name} = async_compile.triton('{name}', '''\ndef {name}(in_ptr0, xnumel):\n{body}\n''', device_str='cuda')\n"
    src = (kernel("triton_red_fused_sin_sum_0", 1) + kernel("triton_poi_fused_add_relu_sin_1", 2)
           + "def call(args):\n    triton_red_fused_sin_sum_0.run(buf0)\n    triton_poi_fused_add_relu_sin_1.run(buf1)\n")
    s = Schedule([], [], [], [], InductorOutput([src]))
    assert s.language == "triton" and s.launches == 2 and s.stores == 3
