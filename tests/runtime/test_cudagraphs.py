"""Unit tests of helpers/runtime/cudagraphs.py (ch25); the CUDA paths are skipped without a GPU."""
import pytest
import torch

from helpers.runtime.cudagraphs import (
    LaunchBudget,
    capture,
    compile_keeping_addmm,
    eager_ops,
    mlp,
    same_pointer,
    skip_log,
    skip_reason,
    touch,
)

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_eager_step_of_the_mlp_dispatches_one_matmul_and_one_relu_per_layer():
    model = mlp(depth=4, width=8)
    ops = eager_ops(model, torch.randn(2, 8))
    assert ops["addmm"] == 4 and ops["relu"] == 4 and sum(ops.values()) == 8  # the transposes are views


def test_launch_budget_arithmetic():
    b = LaunchBudget(launches=64, wall_s=640e-6, gpu_s=160e-6)
    assert b.cpu_per_launch_us == pytest.approx(10.0) and b.gpu_busy == pytest.approx(0.25)
    assert b.bound.startswith("launch-bound") and LaunchBudget(64, 1.0, 0.95).bound == "GPU-bound"


def test_skip_reason_and_pointer_helpers():
    msg = "skipping cudagraphs due to mutated inputs (1 instances). Found from : \n  File x.py, line 3"
    assert skip_reason(msg) == "skipping cudagraphs due to mutated inputs (1 instances)"
    a = torch.zeros(3)
    assert same_pointer(a, a) == "True" and same_pointer(a, a.clone()) == "False" and touch(a) == "ok"



def test_skip_log_collects_what_inductor_logs_and_counts():
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

    with skip_log() as log:
        log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to mutated inputs (1 instances)")
    assert log.count == 1 and [skip_reason(m) for m in log.messages] == [
        "skipping cudagraphs due to mutated inputs (1 instances)"]
    with skip_log() as quiet:
        pass
    assert (quiet.messages, quiet.count) == ([], 0)


@cuda
def test_capture_and_replay_follow_new_inputs():
    model = mlp(depth=2, width=16, device="cuda")
    x = torch.randn(4, 16, device="cuda")
    graph, out = capture(model, x)
    new = torch.randn(4, 16, device="cuda")
    x.copy_(new)
    graph.replay()
    with torch.no_grad():
        assert torch.allclose(out, model(new))


def test_compile_keeping_addmm_compiles_anew_beside_an_entry_compiled_with_the_matcher_on():
    """The review's catch: a pattern_matcher patched around torch.compile reused the entry compiled with it on."""
    from helpers.dynamo.state import clear_compile_state

    clear_compile_state()
    model, x = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()), torch.randn(4, 8)
    with torch.no_grad():
        default = torch.compile(model, dynamic=False)
        default(x)
        kept, anew = compile_keeping_addmm(model, x, calls=1)
        assert anew and torch.allclose(kept(x), model(x))


