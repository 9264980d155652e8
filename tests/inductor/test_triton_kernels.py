"""Unit tests of helpers/inductor/triton_kernels.py (chapter 21)."""
import pytest
import torch

from helpers.inductor import triton_kernels as tk
from helpers.inductor.code import InductorOutput

# Kernels exactly as torch 2.11 (Triton 3.6) wrote them on the H200 for the chapter's functions:
# relu(x + y) * 2 on 1,000,000 elements, relu(x + 1).sum(1) on 1024 x 1024 (persistent) and on
# 1024 x 8192 (looped). The chapter cites the line numbers the helper finds in the live kernels;
# these keep the patterns matching that shape.
POINTWISE = "import triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers, triton_heuristics\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nfrom torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\ntriton_helpers.set_driver_to_gpu()\n\n@triton_heuristics.pointwise(\n    size_hints={'x': 1048576}, \n    filename=__file__,\n    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},\n    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_mul_relu_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 16000000}},\n    min_elem_per_thread=0\n)\n@triton.jit\ndef triton_poi_fused_add_mul_relu_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n    xnumel = 1000000\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[:]\n    xmask = xindex < xnumel\n    x0 = xindex\n    tmp0 = tl.load(in_ptr0 + (x0), xmask)\n    tmp1 = tl.load(in_ptr1 + (x0), xmask)\n    tmp2 = tmp0 + tmp1\n    tmp3 = tl.full([1], 0, tl.int32)\n    tmp4 = triton_helpers.maximum(tmp3, tmp2)\n    tmp5 = tl.full([1], 2.0, tl.float32)\n    tmp6 = tmp4 * tmp5\n    tl.store(out_ptr0 + (x0), tmp6, xmask)"

PERSISTENT = "import triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers, triton_heuristics\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nfrom torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\ntriton_helpers.set_driver_to_gpu()\n\n@triton_heuristics.persistent_reduction(\n    size_hints={'x': 1024, 'r0_': 1024},\n    reduction_hint=ReductionHint.INNER,\n    filename=__file__,\n    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},\n    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_add_relu_sum_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 8192, 'r0_': 4194304}}\n)\n@triton.jit\ndef triton_per_fused_add_relu_sum_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):\n    xnumel = 1024\n    r0_numel = 1024\n    R0_BLOCK: tl.constexpr = 1024\n    rnumel = r0_numel\n    RBLOCK: tl.constexpr = R0_BLOCK\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]\n    xmask = xindex < xnumel\n    r0_index = tl.arange(0, R0_BLOCK)[None, :]\n    r0_offset = 0\n    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]\n    roffset = r0_offset\n    rindex = r0_index\n    r0_1 = r0_index\n    x0 = xindex\n    tmp0 = tl.load(in_ptr0 + (r0_1 + 1024*x0), xmask, other=0.0)\n    tmp1 = tl.full([1, 1], 1.0, tl.float32)\n    tmp2 = tmp0 + tmp1\n    tmp3 = tl.full([1, 1], 0, tl.int32)\n    tmp4 = triton_helpers.maximum(tmp3, tmp2)\n    tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])\n    tmp7 = tl.where(xmask, tmp5, 0)\n    tmp8 = tl.sum(tmp7, 1)[:, None].to(tl.float32)\n    tl.store(out_ptr0 + (x0), tmp8, xmask)"

LOOPED = "import triton\nimport triton.language as tl\n\nfrom torch._inductor.runtime import triton_helpers, triton_heuristics\nfrom torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\nfrom torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties\ntriton_helpers.set_driver_to_gpu()\n\n@triton_heuristics.reduction(\n    size_hints={'x': 1024, 'r0_': 8192},\n    reduction_hint=ReductionHint.INNER,\n    filename=__file__,\n    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},\n    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_red_fused_add_relu_sum_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 8192, 'r0_': 33554432}}\n)\n@triton.jit\ndef triton_red_fused_add_relu_sum_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):\n    xnumel = 1024\n    r0_numel = 8192\n    rnumel = r0_numel\n    RBLOCK: tl.constexpr = R0_BLOCK\n    xoffset = tl.program_id(0) * XBLOCK\n    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]\n    xmask = xindex < xnumel\n    r0_base = tl.arange(0, R0_BLOCK)[None, :]\n    rbase = r0_base\n    x0 = xindex\n    _tmp6 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)\n    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):\n        r0_index = r0_offset + r0_base\n        r0_mask = r0_index < r0_numel\n        roffset = r0_offset\n        rindex = r0_index\n        r0_1 = r0_index\n        tmp0 = tl.load(in_ptr0 + (r0_1 + 8192*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)\n        tmp1 = tl.full([1, 1], 1.0, tl.float32)\n        tmp2 = tmp0 + tmp1\n        tmp3 = tl.full([1, 1], 0, tl.int32)\n        tmp4 = triton_helpers.maximum(tmp3, tmp2)\n        tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])\n        tmp7 = _tmp6 + tmp5\n        _tmp6 = tl.where(r0_mask & xmask, tmp7, _tmp6)\n    tmp6 = tl.sum(_tmp6, 1)[:, None]\n    tl.store(out_ptr0 + (x0), tmp6, xmask)"

SPLIT_CALL = '        arg0_1, = args\n        args.clear()\n        assert_size_stride(arg0_1, (4096, 4096), (4096, 1))\n        with torch.cuda._DeviceGuard(0):\n            torch.cuda.set_device(0)\n            buf0 = empty_strided_cuda((512, ), (1, ), torch.float32)\n            # Topologically Sorted Source Nodes: [sum_1], Original ATen: [aten.sum]\n            stream0 = get_raw_stream(0)\n            triton_red_fused_sum_0.run(arg0_1, buf0, 512, 32768, stream=stream0)\n            del arg0_1\n            buf1 = empty_strided_cuda((), (), torch.float32)\n            # Topologically Sorted Source Nodes: [sum_1], Original ATen: [aten.sum]\n            stream0 = get_raw_stream(0)\n            triton_per_fused_sum_1.run(buf0, buf1, 1, 512, stream=stream0)\n            del buf0\n        return (buf1, )'


def test_kernel_lines_are_found_by_role():
    k = tk.KernelSource("triton_poi_fused_add_mul_relu_0", POINTWISE)
    assert k.kind == "poi" and k.heuristic() == "pointwise"
    assert k.size_hints() == "{'x': 1048576}"
    assert k.line_of("def") == 17
    assert k.line_of("program_id") == 19
    assert k.line_of("xmask") == 21
    assert k.find("load") == [23, 24] and k.find("store") == [30]
    assert k.count("relu") == 1 and k.line_of("relu") == 27
    assert (k.line_of("xnumel"), k.line_of("xindex")) == (18, 20)
    assert k.constant("xnumel") == 1_000_000
    assert "  19|     xoffset = tl.program_id(0) * XBLOCK" in k.excerpt(["program_id"])
    cut = k.excerpt(["program_id", "store"])
    assert "…" in cut and cut.splitlines()[-1].startswith("  30|")
    with pytest.raises(LookupError):
        k.line_of("r0_loop")


def test_a_looped_reduction_has_its_loop_accumulator_and_where():
    k = tk.KernelSource("triton_red_fused_add_relu_sum_0", LOOPED)
    assert k.kind == "red" and k.heuristic() == "reduction"
    assert k.constant("r0_numel") == 8192 and k.block_constant("R0_BLOCK") is None
    roles = ["def", "r0_numel", "program_id", "accumulator", "r0_loop", "r0_mask", "load", "where", "sum", "store"]
    assert [k.line_of(r) for r in roles] == [17, 19, 22, 28, 29, 31, 35, 42, 43, 44]
    assert k.count("load") == 1 and k.count("store") == 1


def test_a_persistent_reduction_fixes_r0_block():
    k = tk.KernelSource("triton_per_fused_add_relu_sum_0", PERSISTENT)
    assert k.kind == "per" and k.heuristic() == "persistent_reduction"
    assert k.block_constant("R0_BLOCK") == 1024 and k.constant("r0_numel") == 1024
    roles = ["def", "xnumel", "r0_numel", "r0_block_fixed", "program_id", "xindex", "xmask", "r0_index", "load",
             "where", "sum", "store"]
    assert [k.line_of(r) for r in roles] == [17, 18, 19, 20, 23, 24, 25, 26, 33, 39, 40, 41]
    with pytest.raises(LookupError):
        k.line_of("r0_loop")


def test_the_heuristics_run_again_from_a_kernels_decorator():
    name, kwargs = tk.decorator_arguments(LOOPED)
    assert name == "reduction" and kwargs["size_hints"] == {"x": 1024, "r0_": 8192}
    looped = tk.candidates_from_source(LOOPED)
    assert [c.text() for c in looped] == ["XBLOCK: 1, R0_BLOCK: 2048, num_warps: 16, num_stages: 1"]
    assert looped == tk.candidates_from_source(LOOPED, tk.L40S)
    assert [c.text() for c in tk.candidates_from_source(POINTWISE)] == [c.text() for c in tk.pointwise_candidates(10**6)]
    per = tk.candidates_from_source(PERSISTENT)
    assert len(per) == 1 and per == tk.candidates_from_source(PERSISTENT, tk.L40S)


def test_launches_are_read_from_call():
    src = "def call(args):\n" + SPLIT_CALL + "\n"
    launches = tk.launches_of(InductorOutput([src]))
    assert [(launch.kernel, launch.ints) for launch in launches] == [("triton_red_fused_sum_0", [512, 32768]),
                                                                   ("triton_per_fused_sum_1", [1, 512])]


def test_the_tiling_arithmetic_uses_torchs_grid():
    t = tk.tiling(1_000_000, 1024)
    assert (t.programs, t.active_in_last, t.masked) == (977, 576, 448)
    assert tk.grid(4096, 1024) == 4 and tk.tiling(4096, 1024).masked == 0
    assert tk.grid(1, 1024) == 1 and tk.tiling(1, 1024).active_in_last == 1
    assert tk.series_programs(1_000_000, 1024) == 977


def test_the_pointwise_heuristic_runs_without_a_gpu():
    first, second = tk.pointwise_candidates(1_000_000)
    assert (first.xblock, first.num_warps, first.num_stages) == (1024, 4, 1)
    assert (second.xblock, second.num_warps) == (512, 8)
    assert tk.pointwise_candidates(1000)[0].xblock == 256
    assert tk.pointwise_candidates(1_000_000, tk.L40S) == tk.pointwise_candidates(1_000_000, tk.H200)
    assert first.text() == "XBLOCK: 1024, num_warps: 4, num_stages: 1"


def test_split_factor_and_persistence_are_torchs_decisions():
    assert tk.split_factor(4096 * 4096) == 512
    assert tk.split_factor(4096 * 4096, device=tk.L40S) == 512
    assert tk.split_factor(1024, outputs=1) == 1          # too short to split
    assert tk.split_factor(1 << 20, outputs=1024) == 1    # enough outputs to fill the GPU
    assert tk.persistent_or_looped(1024) == "per" and tk.persistent_or_looped(2048) == "red"
    assert tk.persistent_threshold() == 1024
    assert tk.persistent_threshold(hint="DEFAULT") == 64


def test_persistence_asks_torchs_own_features_class_whatever_it_grew():
    """torch 2.14.1 asks the features ``strict_sum_rblock()``, 2.15 ``strict_reduction_rblock()``: the
    helper hands torch its own ``SIMDKernelFeatures`` (no nodes), so such a question is answered by torch."""
    from helpers.core.private import private

    base = private("torch._inductor.codegen.simd_kernel_features.SIMDKernelFeatures")
    v = private("torch._inductor.virtualized.V")
    hints = private("torch._inductor.runtime.hints.ReductionHint")
    with v.set_graph_handler(tk._Graph()):
        f = tk._features(1024, 2048, hints.INNER)
        assert isinstance(f, base) and f.get_reduction_hint() == hints.INNER
        assert int(f.numel) == 1024 and int(f.reduction_numel) == 2048
        for question in ("strict_reduction_rblock", "strict_sum_rblock"):  # 2.15's and 2.14.1's
            if hasattr(base, question):
                assert getattr(f, question)() is None


def test_a_moved_heuristic_is_unverified_on_an_unverified_torch_and_raised_on_a_verified_one(monkeypatch, capsys):
    from helpers.core import private as private_mod
    from helpers.core.private import Unverified, private

    choices = private("torch._inductor.choices.InductorChoices")
    monkeypatch.setattr(private_mod, "_SAID", set())
    # a release whose heuristic asks the features a question no torch's class answers
    monkeypatch.setattr(choices, "should_use_persistent_reduction",
                        staticmethod(lambda features, cooperative: features.strict_future_rblock()))
    monkeypatch.setattr(torch, "__version__", "2.13.0+cpu")
    with pytest.raises(AttributeError, match="strict_future_rblock"):
        tk.persistent_or_looped(1024)
    monkeypatch.setattr(torch, "__version__", "2.14.1")
    assert isinstance(tk.persistent_or_looped(1024), Unverified)
    assert isinstance(tk.persistent_threshold(), Unverified)
    said = capsys.readouterr().out
    assert said.count("this step needs torch 2.11–2.15") == 1 and "torch 2.14.1 moved InductorChoices" in said
    assert tk.split_factor(1024) == 1  # the other heuristics still run


def test_the_device_specs_become_device_properties():
    p = tk.H200.properties()
    assert (p.multi_processor_count, p.cc, p.major, p.warp_size) == (132, 90, 9, 32)
    assert tk.L40S.properties().max_threads_per_multi_processor == 1536


@pytest.mark.skipif(torch.cuda.is_available(), reason="what a machine without a GPU gets")
def test_no_triton_source_without_a_gpu():
    here = tk.try_triton_codegen()
    assert here.works is False
    assert "triton" in here.raised_in and here.error


def test_dynamic_numel_and_the_dynamic_check():
    assert tk.dynamic_check(None, torch.relu) is None
    static = tk.dynamic_check(lambda f: torch.compile(f, dynamic=False), lambda x: torch.relu(x + 1) * 2)
    dynamic = tk.dynamic_check(lambda f: torch.compile(f, dynamic=True), lambda x: torch.relu(x + 1) * 2)
    assert static == (True, 2, False)
    assert dynamic == (True, 1, True)


def test_reader_checks_count_right_cases():
    def tiles_2d(ny, nx, by, bx):
        programs = -(-ny // by) * -(-nx // bx)
        return programs, programs * by * bx - ny * nx

    assert tk.grid_2d(1000, 3000, 16, 256) == (12, 63)      # (x axis, y axis): ceildiv(3000, 256), ceildiv(1000, 16)
    assert tk.reader_tiles_2d_check(None) is None
    assert tk.reader_tiles_2d_check(tiles_2d) == len(tk.TILES_2D_CASES)
    assert tk.reader_tiles_2d_check(lambda ny, nx, by, bx: (-(-ny // by) * -(-nx // bx), 0)) < len(tk.TILES_2D_CASES)
    assert tk.reader_tiles_2d_check(lambda *a: 1 / 0) == 0

    def programs(n):
        hint = tk.next_power_of_2(n)
        return -(-n // min(max(256, min(hint // 128, 1024)), hint))

    assert tk.reader_programs_check(None) is None
    assert tk.reader_programs_check(programs) == len(tk.PROGRAMS_SIZES)
    # XBLOCK from the size itself rather than from the rounded size_hints: wrong at most sizes
    assert tk.reader_programs_check(lambda n: -(-n // min(max(256, min(n // 128, 1024)), n))) == len(tk.PROGRAMS_SIZES) - 4
    # the grid from the rounded size rather than the size: wrong wherever n is not a multiple of XBLOCK
    assert tk.reader_programs_check(lambda n: -(-tk.next_power_of_2(n) // min(max(256, min(tk.next_power_of_2(n) // 128, 1024)),
                                                                        tk.next_power_of_2(n)))) <= len(tk.PROGRAMS_SIZES) - 3


def test_the_persistent_proposal_follows_the_callers_cuda_not_the_device_properties():
    """_persistent_reduction_configs branches on torch.cuda.is_available() (torch 2.11 and 2.13): the H200
    kernel's own decorator gives 1 row / 1 warp with CUDA and 8 / 8 without, on any machine."""
    import torch

    with_cuda = tk.candidates_from_source(PERSISTENT, tk.H200, cuda_available=True)
    without = tk.candidates_from_source(PERSISTENT, tk.H200, cuda_available=False)
    assert with_cuda != without
    assert tk.candidates_from_source(PERSISTENT, tk.H200) == (with_cuda if torch.cuda.is_available() else without)


def test_the_2d_pointwise_heuristic_runs_without_a_gpu():
    square = tk.tiled_pointwise_candidates(1024, 1024, square=True)
    default = tk.tiled_pointwise_candidates(1024, 1024, square=False)
    assert [c.text() for c in square] == ["XBLOCK: 32, YBLOCK: 32, num_warps: 4, num_stages: 1"]
    assert len(default) > 1 and square[0] in default
