"""Unit tests of helpers/inductor/code.py."""
import torch

from helpers.aot.operators import dispatched_ops
from helpers.inductor.code import (
    InductorOutput,
    collect_code,
    inductor_code,
    inductor_vec_isa,
    inject_codegen_bug,
    kernel_summary,
)


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


TRITON_KERNEL = '''
triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', \'\'\'
@triton.jit
def triton_poi_fused_add_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 4096
    xoffset = tl.program_id(0) * XBLOCK
    x0 = xoffset + tl.arange(0, XBLOCK)[:]
    tmp0 = tl.load(in_ptr0 + (x0), None)
    tmp1 = tl.load(in_ptr1 + (x0), None)
    tl.store(out_ptr0 + (x0), tmp0 + tmp1, None)
\'\'\', device_str='cuda')
'''


def test_inductor_code_finds_one_fused_cpp_kernel():
    out, code = inductor_code(f, torch.randn(256))
    assert torch.allclose(out, f(torch.randn(256)) * 0 + out)
    assert code.kernels == ["cpp_fused_add_cos_mul_sin_tanh_0"] and code.launches == 1
    assert code.kernel_language == "c++" and "sin()" in code.kernel_source()
    assert "def call" not in code.call_function() and "cpp_fused" in code.call_function()


def test_dispatched_ops_and_planted_bug():
    _, ops = dispatched_ops(f, torch.randn(4))
    assert ops == ["sin", "cos", "mul", "tanh", "add"]
    g = lambda t: torch.relu(t) + 1  # noqa: E731
    v = torch.randn(100)
    with inject_codegen_bug():
        assert not torch.allclose(torch.compile(g)(v), g(v))
    assert torch.allclose(torch.compile(g)(v), g(v))


def test_kernel_summary_reads_triton_and_cpp_kernels():
    k = kernel_summary(InductorOutput([TRITON_KERNEL]))
    assert (k.name, k.language, k.numel, k.loads, k.stores) == ("triton_poi_fused_add_0", "triton", 4096, 2, 1)
    _, code = inductor_code(lambda a, b: a * b + a, torch.randn(1024), torch.randn(1024))
    k = kernel_summary(code)
    assert k.language == "c++" and k.name.startswith("cpp_fused_add_mul") and k.numel == 1024
    assert (k.loads, k.stores) == (2, 1)


def test_inductor_vec_isa_names_an_instruction_set():
    isa = inductor_vec_isa()
    assert isinstance(isa, str) and isa and isa == isa.lower()


def test_collect_code_watches_a_compile_without_resetting_it():
    from torch._inductor.graph import GraphLowering

    from helpers.dynamo.state import clear_compile_state

    clear_compile_state()
    compiled = torch.compile(f)
    x = torch.randn(256)
    with collect_code() as code:
        compiled(x)
    assert [m for m in code.sources if "cpp_fused" in m] == code.sources and len(code.sources) == 1
    assert code.kernels[0].startswith("cpp_fused") and code.launches == 1
    with collect_code() as again:  # nothing compiles: the cached graph runs (collect_code reset nothing)
        compiled(x)
    assert again.sources == [] and GraphLowering.save_output_code is None


def test_extern_calls_are_the_wrappers_calls_of_code_inductor_did_not_write():
    src = ("def call(args):\n    buf0 = empty((4, 4))\n"
           "    # Original ATen: [aten.addmm]\n"
           "    extern_kernels.addmm(a, b, c, alpha=1, beta=1, out=buf0)\n"
           "    cpp_fused_relu_0(buf0)\n"
           "    buf1 = torch.ops.aten.sort.default(buf0)\n"
           "    return (buf0, )\n")
    assert InductorOutput([src]).extern_calls == ["extern_kernels.addmm", "torch.ops.aten.sort.default"]
