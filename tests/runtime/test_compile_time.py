"""Unit tests of helpers/runtime/compile_time.py."""
import torch

from helpers.dynamo.state import clear_compile_state
from helpers.runtime.compile_time import CompileTimes, compile_times, explain_with_times


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


def test_compile_times_keeps_only_the_block_and_survives_a_reset():
    clear_compile_state()
    torch.compile(f, backend="eager")(torch.randn(4))  # before the block: not counted
    with compile_times() as t:
        torch._dynamo.reset()  # clears torch's table inside the block
        torch.compile(f, backend="eager")(torch.randn(5))
    assert t["_compile.compile_inner"] > 0 and 0 < t["bytecode_tracing"] <= t["_compile.compile_inner"]
    assert t["build_guards"] > 0 and t["no such timer"] == 0.0
    with compile_times() as nothing:
        pass
    assert nothing.seconds == {}


def test_stations_split_nested_timers_into_disjoint_parts():
    t = CompileTimes({"_compile.compile_inner": 10.0, "OutputGraph.call_user_compiler": 8.0,
                         "bytecode_tracing": 1.0, "build_guards": 0.5, "create_aot_dispatcher_function": 7.0,
                         "compile_fx.<locals>.fw_compiler_base": 6.0, "compile_file": 4.0,
                         "async_compile.wait": 3.0})
    s = t.stations(total=11.0)
    assert s == {"Dynamo: trace bytecode": 1.0, "Dynamo: build guards": 0.5, "Dynamo: the rest": 0.5,
                 "AOTAutograd": 1.0, "Inductor: lower, schedule, write code": 3.0,
                 "kernel compiler (C++ or Triton)": 4.0, "after compiling: wrappers, first run": 1.0}
    assert sum(s.values()) == 11.0 and t.dynamo_seconds() == 2.0
    triton = CompileTimes({"async_compile.precompile": 0.5, "async_compile.wait": 0.25})
    assert triton.compiler_seconds() == 0.75  # no g++ run: Triton's timers


def test_explain_with_times_reads_the_timers_explain_resets():
    e, t = explain_with_times(f, torch.randn(8))
    assert (e.graph_count, e.op_count) == (1, 5)
    assert t["_compile.compile_inner"] > 0 and 0 < t["bytecode_tracing"] <= t["_compile.compile_inner"]
