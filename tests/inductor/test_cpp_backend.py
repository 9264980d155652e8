"""Unit tests of helpers/inductor/cpp_backend.py (chapter 22)."""
import math

import pytest
import torch

from helpers.core.private import private
from helpers.inductor.cpp_backend import (
    OMP_MARKS,
    REDUCTION_MARKS,
    SCALAR_MARKS,
    SIMD_MARKS,
    Build,
    Command,
    CppKernel,
    build_and_capture,
    chunk_check,
    codegen_threads,
    compiled_gears,
    cpp_kernel,
    elementwise,
    gear_of,
    generated_gears,
    is_parallel_threshold,
    lane_steps,
    min_chunk_size,
    parallel_threshold,
    predicted_gears,
    reduction_accumulators,
    sin_plus,
    smallest_vectorized,
    sum_of_squares,
    threads,
    time_gears,
    time_gears_on,
    vec_isa,
)


def test_isa_width_sets_the_loop_step():
    isa = vec_isa()  # runs the per-ISA tests concurrently first: the answer must be pick_vec_isa's
    assert isa.name == (str(private("torch._inductor.cpu_vec_isa.pick_vec_isa")()) if isa.bit_width else "none")
    assert isa.bit_width in (0, 128, 256, 512) and isa.lanes == max(1, isa.bit_width // 32)
    assert isa.family and (isa.macros or not isa.bit_width)
    k = gear_of(1024)
    if isa.bit_width:
        assert k.vectorized and k.step == isa.lanes
    assert not k.parallel and k.threads == 1  # one thread: never a parallel region


def test_the_lines_the_chapter_cites_are_in_the_generated_code():
    """The chapter quotes these lines by their markers; a torch that renames them must fail here."""
    assert gear_of(1024).missing(SIMD_MARKS) == []
    assert gear_of(1024, simdlen=1).missing(SCALAR_MARKS) == []
    assert gear_of(2**20, threads=8).missing(OMP_MARKS) == []
    red = cpp_kernel(sum_of_squares, torch.randn(2**20), threads=8)
    assert red.missing(REDUCTION_MARKS) == []
    # and in the order the prose walks through them
    for kernel, marks in ((gear_of(1024), SIMD_MARKS), (red, REDUCTION_MARKS)):
        lines = [kernel.line_of(m) for m in marks.values()]
        assert lines == sorted(lines)


def test_simdlen_one_gives_a_scalar_loop():
    k = gear_of(1024, simdlen=1)
    assert not k.vectorized and k.step == 1 and k.lines("std::max") and k.gear == "scalar"


def test_a_tail_is_the_remainder_of_the_lanes():
    lanes = vec_isa().lanes
    k = gear_of(103)
    assert k.vectorized and set(k.tail_counts) == {103 % lanes}


def test_the_vector_cutoff_is_a_quarter_of_the_lanes():
    lanes = vec_isa().lanes
    assert smallest_vectorized(lanes) == max(2, math.ceil(lanes / 4))
    assert gear_of(1).step is None  # one element: no loop at all


def test_a_narrower_isa_moves_the_cutoff():
    """simdlen=256 asks for 256-bit vectors: AVX2 (or SVE256) where the CPU has them, 8 lanes, and then n = 2
    is already vectorized; a CPU without a 256-bit ISA is left with scalar loops."""
    config = private("torch._inductor.config")
    with config.patch({"cpp.simdlen": 256}):
        isa = vec_isa()
        if isa.bit_width:
            assert isa.lanes == 8 and gear_of(1024).step == 8 and smallest_vectorized(8) == 2
        else:
            assert gear_of(1024).gear == "scalar"


def test_parallel_threshold_is_threads_times_min_chunk():
    t, m = 3, min_chunk_size()
    assert is_parallel_threshold(t * m, t)
    assert not is_parallel_threshold(t * m + 1, t)
    assert is_parallel_threshold("x", t) is False and is_parallel_threshold(True, t) is False
    assert parallel_threshold(t, lo=t * m // 4, hi=4 * t * m) == t * m
    assert parallel_threshold(t, lo=t * m, hi=4 * t * m) is None  # lo already parallel: the window is wrong
    assert gear_of(2**20, threads=8).pragma == "#pragma omp parallel num_threads(8)"
    assert not gear_of(2**20, threads=1).parallel


def test_threads_none_follows_torch_threads():
    with threads(1):
        assert codegen_threads() == 1 and gear_of(2**20, threads=None).threads == 1
    with threads(2):
        k = gear_of(2**20, threads=None)
        assert k.threads == 2 and k.parallel


def test_threads_context_restores():
    before = torch.get_num_threads()
    with threads(2):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before


def test_reduction_has_per_thread_arrays():
    k = cpp_kernel(sum_of_squares, torch.randn(2**16), threads=3)
    red = reduction_accumulators(k)
    assert red.arrays and set(red.arrays.values()) == {3} and set(red.combine_loops) == {3}
    assert red.slots == 3 * len(red.arrays) and len(red.combine_loops) == len(red.arrays)
    assert red.vec_reduce_all == (vec_isa().bit_width > 0) and red.cascade
    assert not red.omp_reduction_clause
    assert lane_steps(16) == 4 and lane_steps(8) == 3 and lane_steps(1) == 0


def test_parsing_a_written_kernel():
    src = ("extern \"C\" void kernel(const float* in_ptr0)\n{\n    #pragma omp parallel num_threads(4)\n"
           "    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(9L); x0+=static_cast<int64_t>(8L))\n"
           "    auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + x0, static_cast<int64_t>(1L));\n}\n")
    k = CppKernel(src, 4)
    assert k.gear == "SIMD+OpenMP" and k.step == 8 and k.tail_counts == [1] and k.omp_threads == 4
    assert k.pragma == "#pragma omp parallel num_threads(4)"
    assert k.line_of("#pragma omp") == 3 and k.line_of("nothing") is None
    text = k.excerpt({"sig": "extern", "loop": "for(int64_t"})
    assert text.splitlines()[0].startswith("   1  extern") and "..." in text and "   4  " in text
    assert k.missing({"a": "loadu(", "b": "std::max("}) == ["b"]


def test_the_exercise_helpers():
    cases = [(1024, 1), (2**20, 8)]
    assert generated_gears(cases) == ["SIMD" if vec_isa().bit_width else "scalar", "SIMD+OpenMP"]
    assert predicted_gears(None, cases) is None
    assert predicted_gears(lambda n, t: "SIMD", cases) == ["SIMD", "SIMD"]
    assert predicted_gears(lambda n, t: 1 / 0, cases).startswith("raised ZeroDivisionError")
    m = 4096 // 4
    assert chunk_check(m) == (True, False) and chunk_check(m // 2) == (True, True)
    assert chunk_check(None) is None and "not a positive integer" in chunk_check(0)


def test_command_parsing():
    c = Command("g++ /c/a.main.cpp -O3 -include /h/precompiled_headers/x.h -mavx2 -o /c/a.main.so -lgomp", 1.5)
    assert c.output == "/c/a.main.so" and c.source == "/c/a.main.cpp"
    b = Build([Command("g++ -E /t/header.hpp -o /t/header.i", 0.1), c], ["a.main.cpp", "a.main.so", "b.py"], True)
    assert b.kernel is c and b.compiler == "g++" and b.has_flag("-O3") and not b.has_flag("-O2")
    assert b.header == "/h/precompiled_headers/x.h" and b.seconds == 1.5
    assert b.short_command().startswith("g++ .../a.main.c") and "-mavx2" in b.short_command()


def test_build_records_the_command():
    x, y = torch.randn(64), torch.randn(64)
    out, build = build_and_capture(elementwise, x, y)
    assert torch.allclose(out, elementwise(x, y))
    assert build.command and any(f.endswith(".cpp") for f in build.cache_files)
    assert any(f.endswith(".so") for f in build.cache_files) and build.has_flag("-shared")
    assert all(build.has_flag(f) for f in vec_isa().arch_flags)
    assert build.header and build.header_binary is not None and build.seconds > 0
    _, plain = build_and_capture(lambda a, b: torch.relu(a + b) * 5, x, y, precompiled_headers=False)
    assert plain.header is None and plain.command


def test_compiled_gears_are_separate_builds():
    gears = compiled_gears(sin_plus, example_n=1024)
    codes = {name: f._torchdynamo_orig_callable.__code__ for name, f in gears.items()}
    assert len(set(map(id, codes.values()))) == len(gears) == 2
    x, y = torch.randn(300), torch.randn(300)
    for f in gears.values():
        assert torch.allclose(f(x, y), sin_plus(x, y), atol=1e-5)
    t = time_gears(gears, [256], repeats=2)
    assert set(t) == {"scalar", "SIMD"} and t["SIMD"][256].median > 0
    on = time_gears_on(gears, {"all positive": (torch.rand(256) + 0.5, torch.rand(256) + 0.5)}, repeats=1)
    assert set(on["scalar"]) == {"all positive"} and on["scalar"]["all positive"].median > 0 and on.compiles == 0


def test_gears_keep_their_own_kernels_and_time_without_recompiling():
    """Compiled under threads(1), the count they are timed at: the scalar slot holds the scalar kernel, and
    timing compiles nothing (Dynamo's num_threads guard holds)."""
    with threads(2):  # the caller's count (16 on the GPU host) must not leak into the gears
        gears = compiled_gears(elementwise, example_n=1024)
        t = time_gears(gears, [512], repeats=1)
    assert gears.kernels["scalar"].gear == "scalar"
    assert gears.kernels["SIMD"].gear == ("SIMD" if vec_isa().bit_width else "scalar")
    assert gears.torch_threads == {"scalar": 1, "SIMD": 1} and t.compiles == 0


def test_a_thread_count_change_recompiles_with_the_config_of_the_call():
    from helpers.inductor.cpp_backend import thread_count_recompile

    guard = thread_count_recompile(compile_threads=2, call_threads=1, n=1024)
    assert "num_threads" in guard.guard_fields
    assert guard.graphs == 2 and "num_threads" in guard.reason
    assert [k.gear for k in guard.kernels] == ["scalar", "SIMD" if vec_isa().bit_width else "scalar"]


def test_legality_fallbacks():
    from helpers.inductor.cpp_backend import lane_loops, legality_kernels, wrapper_source

    k = legality_kernels()
    assert k["int16"].gear == "scalar"
    if vec_isa().bit_width:
        assert k["erfcx"].gear == "SIMD" and lane_loops(k["erfcx"]) == 1 and k["erfcx"].lines("calc_erfcx(")
        assert k["transpose"].lines("transpose_mxn")
    assert "def call(" in wrapper_source(False) and "inductor_entry_impl" in wrapper_source(True)
