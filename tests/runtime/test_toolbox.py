"""Unit tests of helpers/runtime/toolbox.py (chapter 27). The child processes are exercised by the chapter."""
import torch

from helpers.runtime.toolbox import TOOLS, TRIAGE, Minified, diagnose, log_artifacts, log_components, tool_for


def test_map_and_registry():
    assert tool_for("crash") == "minifier" and tool_for("not faster") == "graph_breaks"
    assert TRIAGE == ["graph_breaks", "recompiles", "output_code"] and len({t.tool for t in TOOLS}) == len(TOOLS)
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
