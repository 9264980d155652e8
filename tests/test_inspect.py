import pytest
import torch

from helpers import inspect as hi
from helpers.env import CourseError


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


def test_explain_counts():
    e = hi.explain(f, torch.randn(64))
    assert (e.graph_count, e.graph_break_count, e.op_count) == (1, 0, 5)
    assert "TENSOR_MATCH" in e.guard_kinds


def test_explain_sees_a_graph_break():
    def broken(x):
        y = x + 1
        print("side effect")
        return y * 2

    e = hi.explain(broken, torch.randn(4))
    assert e.graph_count == 2 and e.graph_break_count == 1 and e.break_reasons


def test_capture_and_aot_graphs():
    _, cap = hi.capture_graphs(f, torch.randn(8))
    assert isinstance(cap, hi.GraphRecorder) and cap.runs == 1
    assert cap.count == cap.compiles == 1 and cap.op_nodes() == ["sin", "cos", "mul", "tanh", "add"]
    _, aot = hi.aot_graphs(f, torch.randn(8, requires_grad=True))
    assert len(aot.forward) == 1 and len(aot.backward) == 1
    assert "aten.sin.default" in aot.op_nodes("forward")


def test_inductor_code_finds_one_fused_cpp_kernel():
    out, code = hi.inductor_code(f, torch.randn(256))
    assert torch.allclose(out, f(torch.randn(256)) * 0 + out)
    assert code.kernels == ["cpp_fused_add_cos_mul_sin_tanh_0"] and code.launches == 1
    assert code.kernel_language == "c++" and "sin()" in code.kernel_source()
    assert "def call" not in code.call_function() and "cpp_fused" in code.call_function()


def test_private_api_missing_is_a_clear_error():
    with pytest.raises(CourseError, match=r"private torch API `torch._dynamo.no_such_thing`.*2\.11"):
        hi.private("torch._dynamo.no_such_thing")


def test_dispatched_ops_and_planted_bug():
    _, ops = hi.dispatched_ops(f, torch.randn(4))
    assert ops == ["sin", "cos", "mul", "tanh", "add"]
    g = lambda t: torch.relu(t) + 1  # noqa: E731
    v = torch.randn(100)
    with hi.inject_codegen_bug():
        assert not torch.allclose(torch.compile(g)(v), g(v))
    assert torch.allclose(torch.compile(g)(v), g(v))


def helper(t):
    return t.cos()


def uses_helper(x):
    return helper(x) + 1


def test_graph_recorder_counts_graphs_and_runs():
    hi.clear_compile_state()
    rec = hi.GraphRecorder()
    cf = torch.compile(uses_helper, backend=rec)
    x = torch.randn(3)
    for _ in range(3):
        assert torch.allclose(cf(x), uses_helper(x))
    assert rec.compiles == rec.count == 1 and rec.runs == 3
    assert rec.placeholders() == ["L_x_"]
    assert rec.op_nodes() == ["cos", "add"]
    assert [t for t, _ in rec.call_targets()][1].__name__ == "add"
    assert rec.source_functions() == ["helper", "uses_helper"]
    assert "cos" in rec.code() and "def forward" in rec.code()
    short, full = rec.readable(), rec.readable(short_paths=False)
    assert "# File: test_inspect.py:" in short and "/tests/test_inspect.py" in full
    rec.reset()
    assert rec.compiles == 0 and rec.runs == 0


def test_graph_recorder_index_defaults_to_the_newest_graph():
    def g(x, n):
        return x * n

    hi.clear_compile_state()
    rec = hi.GraphRecorder()
    cg = torch.compile(g, backend=rec, dynamic=False)
    cg(torch.randn(2), 2)
    cg(torch.randn(2, 2), 2)
    assert rec.compiles == 2 and rec.placeholders() == rec.placeholders(1) == ["L_x_"]
    assert "f32[2, 2]" in rec.readable() and "f32[2, 2]" not in rec.readable(0)


def make_adder(k):
    def add(x):
        return x + k
    return add


def test_code_of_unwraps_compiled_functions_modules_and_code():
    fn = make_adder(2)
    assert hi.code_of(fn) is fn.__code__ and hi.code_of(fn.__code__) is fn.__code__
    assert hi.code_of(torch.compile(fn, backend="eager")) is fn.__code__
    lin = torch.nn.Linear(2, 2)
    assert hi.code_of(lin) is type(lin).forward.__code__
    assert hi.code_of(torch.compile(lin, backend="eager")) is type(lin).forward.__code__
    with pytest.raises(TypeError):
        hi.code_of(42)


def test_cache_entries_and_transformed_code_newest_first():
    hi.clear_compile_state()
    fn = make_adder(1)
    with pytest.raises(ValueError, match="no cache entry"):
        hi.transformed_code(fn)
    assert hi.cache_entries(fn) == []
    before = fn.__code__
    cf = torch.compile(fn, backend="eager", dynamic=False)
    cf(torch.randn(3))
    first = hi.transformed_code(fn)
    cf(torch.randn(3).double())  # a dtype guard fails: a second entry, checked first
    entries = hi.cache_entries(fn)
    assert fn.__code__ is before and len(entries) == 2
    assert hi.transformed_code(fn, 1) is first and hi.transformed_code(fn) is entries[0].code is not first
    assert any(name.startswith("__compiled_fn") for name in first.co_names)


def test_operator_counts_come_from_the_dispatcher_not_from_lazy_packets():
    first = hi.operator_counts()
    assert first["aten_packets"] < first["aten_overloads"]
    assert 0 < first["core_aten_packets"] <= first["core_aten_overloads"] < first["aten_packets"]
    assert first["prims"] > 0
    # touching every packet changes what dir(torch.ops.aten) lists, not what the dispatcher has
    second = hi.operator_counts()
    assert second["aten_listed"] >= second["aten_packets"] > first["aten_listed"]
    assert {k: v for k, v in second.items() if k != "aten_listed"} == \
        {k: v for k, v in first.items() if k != "aten_listed"}
    fresh = hi.operator_counts(fresh_process=True)
    assert fresh["aten_overloads"] == first["aten_overloads"] and fresh["prims"] <= first["prims"]


# ---------------------------------------------------------------- ch02: compile times, kernels, guards


def test_compile_times_keeps_only_the_block_and_survives_a_reset():
    hi.clear_compile_state()
    torch.compile(f, backend="eager")(torch.randn(4))  # before the block: not counted
    with hi.compile_times() as t:
        torch._dynamo.reset()  # clears torch's table inside the block
        torch.compile(f, backend="eager")(torch.randn(5))
    assert t["_compile.compile_inner"] > 0 and 0 < t["bytecode_tracing"] <= t["_compile.compile_inner"]
    assert t["build_guards"] > 0 and t["no such timer"] == 0.0
    with hi.compile_times() as nothing:
        pass
    assert nothing.seconds == {}


def test_stations_split_nested_timers_into_disjoint_parts():
    t = hi.CompileTimes({"_compile.compile_inner": 10.0, "OutputGraph.call_user_compiler": 8.0,
                         "bytecode_tracing": 1.0, "build_guards": 0.5, "create_aot_dispatcher_function": 7.0,
                         "compile_fx.<locals>.fw_compiler_base": 6.0, "compile_file": 4.0,
                         "async_compile.wait": 3.0})
    s = t.stations(total=11.0)
    assert s == {"Dynamo: trace bytecode": 1.0, "Dynamo: build guards": 0.5, "Dynamo: the rest": 0.5,
                 "AOTAutograd": 1.0, "Inductor: lower, schedule, write code": 3.0,
                 "kernel compiler (C++ or Triton)": 4.0, "after compiling: wrappers, first run": 1.0}
    assert sum(s.values()) == 11.0 and t.dynamo_seconds() == 2.0
    triton = hi.CompileTimes({"async_compile.precompile": 0.5, "async_compile.wait": 0.25})
    assert triton.compiler_seconds() == 0.75  # no g++ run: Triton's timers


def test_explain_with_times_reads_the_timers_explain_resets():
    e, t = hi.explain_with_times(f, torch.randn(8))
    assert (e.graph_count, e.op_count) == (1, 5)
    assert t["_compile.compile_inner"] > 0 and 0 < t["bytecode_tracing"] <= t["_compile.compile_inner"]


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


def test_kernel_summary_reads_triton_and_cpp_kernels():
    k = hi.kernel_summary(hi.InductorOutput([TRITON_KERNEL]))
    assert (k.name, k.language, k.numel, k.loads, k.stores) == ("triton_poi_fused_add_0", "triton", 4096, 2, 1)
    _, code = hi.inductor_code(lambda a, b: a * b + a, torch.randn(1024), torch.randn(1024))
    k = hi.kernel_summary(code)
    assert k.language == "c++" and k.name.startswith("cpp_fused_add_mul") and k.numel == 1024
    assert (k.loads, k.stores) == (2, 1)


def test_noop_guard_kinds_are_the_ones_whose_builder_is_pass():
    kinds = ["TENSOR_MATCH", "GRAD_MODE", "GLOBAL_STATE", "DETERMINISTIC_ALGORITHMS", "GRAD_MODE", "NO_SUCH_KIND"]
    assert hi.noop_guard_kinds(kinds) == ["GRAD_MODE", "DETERMINISTIC_ALGORITHMS"]


def test_inductor_vec_isa_names_an_instruction_set():
    isa = hi.inductor_vec_isa()
    assert isinstance(isa, str) and isa and isa == isa.lower()
