"""Unit tests of helpers/runtime/toolbox.py (chapter 27). The child processes are exercised by the chapter."""
import torch

from helpers.runtime.toolbox import TOOLS, TRIAGE, Minified, diagnose, log_artifacts, log_components, tool_for


def test_map_and_registry():
    assert tool_for("crash") == "minifier" and tool_for("not faster") == "graph_breaks"
    assert TRIAGE == ["graph_breaks", "recompiles", "output_code"] and len({t.tool for t in TOOLS}) == len(TOOLS)
    assert TOOLS[0].tool == "tlparse" and tool_for("wrong result") == "CompilerBisector"
    assert {"graph_breaks", "recompiles", "output_code", "guards"} <= set(log_artifacts())
    assert {"dynamo", "inductor", "aot"} <= set(log_components())


def test_diagnose_follows_the_triage():
    def breaks(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    def fine(x):
        return x.sin() + 1

    def crashes(x):
        return torch.relu(x)

    x = torch.ones(4)
    assert diagnose(breaks, [(x,)]) == "graph_breaks"
    assert diagnose(fine, [(torch.ones(n),) for n in (2, 3, 4)]) == "recompiles"
    assert diagnose(fine, [(x,)]) == "output_code"
    assert diagnose(crashes, [(x,)], backend="relu_compile_error_TESTING_ONLY") == "minifier"


def test_minified_reads_the_repro():
    repro = ("class Repro(torch.nn.Module):\n    def forward(self, add):\n"
             "        relu = torch.relu(add);  add = None\n        return (relu,)\n\n")
    m = Minified("BackendCompilerFailed", "", None, [(7, 6)], 17, repro, 1.0, 2.0)
    assert m.forward_lines() == ["relu = torch.relu(add);  add = None"] and m.targets() == ["torch.relu"]
    assert m.saved_inputs() == 0


def test_minified_counts_the_saved_inputs(tmp_path):
    launcher = tmp_path / "minifier_launcher.py"
    launcher.write_text("def load_args(reader):\n    buf0 = reader.storage('ab12', 32)\n"
                        "    buf1 = reader.storage('cd34', 32)\n    buf2 = reader.storage(None, 32)\n")
    (tmp_path / "checkpoints" / "storages").mkdir(parents=True)
    (tmp_path / "checkpoints" / "storages" / "ab12").write_bytes(b"x")
    m = Minified("BackendCompilerFailed", "", launcher, [], None, "", 1.0, 2.0)
    assert m.saved_inputs() == 1


def test_everyday_artifacts_are_registered():
    from helpers.runtime.toolbox import EVERYDAY
    assert set(EVERYDAY) <= set(log_artifacts()) | set(log_components())


def test_read_trace_counts_events_and_compile_ids(tmp_path):
    from helpers.runtime.toolbox import read_trace
    (tmp_path / "dedicated_log_torch_trace_x.log").write_text(
        'V1203 11:27:15.986000 4066 torch/_dynamo/convert_frame.py:1] {"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}\n'
        '\t{"payload": 1}\n'
        'V1203 11:27:15.987000 4066 torch/_dynamo/x.py:2] {"artifact": {"name": "fx_graph_cache_miss", "encoding": "json"}, "frame_id": 1, "frame_compile_id": 0}\n')
    t = read_trace(tmp_path)
    assert t.compiles == ["0/0", "1/0"] and t.kinds == {"artifact:fx_graph_cache_miss": 1, "dynamo_start": 1}
    assert t.has("dynamo_start") and not t.has("compilation_metrics")


def test_kernel_pointer_args_reads_cpp_and_triton_signatures():
    from helpers.runtime.toolbox import kernel_pointer_args
    cpp = ("k_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''\n"
           'extern "C"  void  kernel(const float* in_ptr0,\n                       float* out_ptr0)\n{')
    tri = "@triton.jit\ndef t_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n    pass"
    assert kernel_pointer_args(cpp, "k_0") == 2 and kernel_pointer_args(tri, "t_0") == 3
    assert kernel_pointer_args("nothing here", "k_0") == 0
