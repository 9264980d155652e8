"""Unit tests of helpers/inductor/stages.py (chapter 17)."""
import torch

from helpers.inductor.code import InductorOutput
from helpers.inductor.stages import (CORE_FILES, aten_calls, cpp_loop, debug_dump, file_role, inductor_threads,
                                     precompiled_headers, read_wrapper)


def f(x, y):
    return torch.relu(x + y) * 2


CUDA_WRAPPER = '''
triton_poi_fused_add_mul_relu_0 = async_compile.triton('triton_poi_fused_add_mul_relu_0', \'\'\'
@triton.jit
def triton_poi_fused_add_mul_relu_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1024
\'\'\', device_str='cuda')

class Runner:
    def call(self, args):
        arg0_1, arg1_1 = args
        args.clear()
        assert_size_stride(arg0_1, (1024, ), (1, ), 'input')
        assert_size_stride(arg1_1, (1024, ), (1, ), 'input')
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf0 = empty_strided_cuda((1024, ), (1, ), torch.float32)
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_mul_relu_0.run(arg0_1, arg1_1, buf0, 1024, stream=stream0)
            del arg0_1
            del arg1_1
        return (buf0, )
'''


def test_debug_dump_writes_the_stage_files_and_sees_the_call_chain():
    x, y = torch.randn(64), torch.randn(64)
    dump = debug_dump(f, x, y)
    assert torch.allclose(dump.result, f(x, y))
    assert len(dump.graph_dirs) == 1 and set(CORE_FILES) <= set(dump.files())
    assert aten_calls(dump.read("fx_graph_readable.py")) == ["add.Tensor", "relu.default", "mul.Tensor"]
    chain = dump.landmarks()
    assert chain.index("compile_fx.py:compile_fx") < chain.index("aot_autograd.py:aot_module_simplified") \
        < chain.index("compile_fx.py:compile_fx_inner")
    assert dump.read("output_code.py") == dump.code.source
    assert [file_role(dump, n) for n in ("fx_graph_readable.py", "ir_pre_fusion.txt", "output_code.py", "nope")][:3] \
        == ["ATen graph", "loop IR", "generated module"]
    assert file_role(dump, "nope").startswith("no file")
    w = read_wrapper(dump.code)
    assert (w.asserts, w.allocations, w.launches, w.dels) == (2, 1, 1, 2) and w.returns.startswith("return")
    loop = cpp_loop(dump.code)
    assert not loop.omp_parallel  # 64 elements: too little work per thread to open a parallel region
    assert inductor_threads() >= 1
    assert loop.vector_step is None or loop.vector_step >= 1


def test_read_wrapper_counts_a_triton_wrapper():
    w = read_wrapper(InductorOutput([CUDA_WRAPPER]))
    assert (w.asserts, w.allocations, w.launches, w.dels) == (2, 1, 1, 2)
    assert w.text.count(".run(") == 1


def test_read_wrapper_counts_the_inputs_of_a_grouped_check():
    grouped = CUDA_WRAPPER.replace("assert_size_stride(", "# was: assert_size_stride(")
    grouped = grouped.replace("        args.clear()\n", "        args.clear()\n"
                              "        assert_size_stride_grouped((arg0_1, arg1_1), ((8, ), (8, )), ((1, ), (1, )), 'input')\n", 1)
    assert "assert_size_stride_grouped" in grouped
    assert read_wrapper(InductorOutput([grouped])).asserts == 2


def test_cpp_loop_reads_pragma_and_step():
    src = '''
k = async_compile.cpp_pybinding(['const float*'], r\'\'\'
extern "C" void kernel(const float* in_ptr0)
{
    #pragma omp parallel num_threads(8)
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(1048576L); x0+=static_cast<int64_t>(16L))
        {
            auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + x0, 16);
        }
    }
}
\'\'\')
'''
    loop = cpp_loop(InductorOutput([src]))
    assert (loop.vector_step, loop.omp_parallel, loop.omp_threads) == (16, True, 8)


def test_precompiled_headers_lists_gch_files():
    headers = precompiled_headers()
    assert isinstance(headers, list) and all(name.endswith(".gch") for name in headers)


def test_the_isa_probe_child_code_is_torchs():
    import torch

    from helpers.inductor.stages import isa_probe_child_code

    code = isa_probe_child_code()
    assert "LoadLibrary" in code
    imports_first = "import torch" in code.split("if sys.platform", 1)[0]
    assert imports_first == (torch.__version__.startswith("2.11"))
