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




def test_gemm_paths_are_one_product_written_four_ways():
    from helpers.runtime.cudagraphs import gemm_paths

    layer, x = torch.nn.Linear(8, 8), torch.randn(3, 8)
    with torch.no_grad():
        out = {label: f() for label, f in gemm_paths(layer, x).items()}
        want = layer(x)
    assert len(out) == 4 and list(out)[0] == "F.linear(x, w, b)"
    for label, y in out.items():
        assert torch.allclose(y + (layer.bias if label.startswith("mm") else 0), want, atol=1e-6), label


def test_item_breaks_the_graph_unless_scalar_outputs_are_captured():
    from helpers.dynamo.state import clear_compile_state
    from helpers.runtime.cudagraphs import compiled_graphs

    clear_compile_state()

    def with_item(x):
        y = x * 2
        return y + y.sum().item()

    def with_item_captured(x):
        y = x * 2
        return y + y.sum().item()

    broken = compiled_graphs(with_item, torch.randn(4))
    captured = compiled_graphs(with_item_captured, torch.randn(4), capture_scalar_outputs=True)
    assert broken.graphs == 2 and any("Tensor.item()" in b for b in broken.breaks)
    assert captured.graphs == 1 and captured.breaks == []


def test_mark_static_and_the_tf32_warning_without_cuda():
    from helpers.runtime.cudagraphs import mark_static, tf32_warning

    t = torch.zeros(2)
    assert mark_static(t) is t and t._dynamo_static_input_type == "unguarded"
    if not torch.cuda.is_available():
        assert tf32_warning() == ""


@cuda
def test_blas_library_is_restored_and_record_with_blas_compiles_anew():
    from helpers.runtime.cudagraphs import blas_library, record_with_blas

    before = torch.backends.cuda.preferred_blas_library()
    with blas_library("cublaslt"):
        assert torch.backends.cuda.preferred_blas_library() == torch._C._BlasBackend.Cublaslt
    assert torch.backends.cuda.preferred_blas_library() == before
    model, x = mlp(depth=2, width=16, device="cuda"), torch.randn(4, 16, device="cuda")
    with torch.no_grad():
        compiled, anew = record_with_blas(model, x)
        assert anew and torch.allclose(compiled(x), model(x), atol=1e-5)
        wrapped, anew = record_with_blas(model, x, through="wrapper")
        assert anew and torch.allclose(wrapped(x), model(x), atol=1e-5)


@cuda
def test_record_per_size_and_two_outputs_in_one_step():
    from helpers.runtime.cudagraphs import record_per_size, two_outputs_in_one_step

    r = record_per_size(mlp(depth=2, width=16, device="cuda"), 16, sizes=[2, 3, 4])
    assert r.graphs == 1 and r.recordings == 3 and not r.warned
    assert r.pool_first is not None and r.pool_growth is not None and r.pool_growth >= r.pool_first >= 0
    assert r.pool_start is not None and r.pool_start >= 0
    ro = torch.compile(mlp(depth=2, width=16, device="cuda"), mode="reduce-overhead")
    xa, xb = torch.randn(4, 16, device="cuda"), torch.randn(4, 16, device="cuda")
    with torch.no_grad():
        assert two_outputs_in_one_step(ro, xa, xb) == ("False", True)


def test_pool_segment_bytes_sums_the_segments_of_one_pool():
    from helpers.runtime.cudagraphs import pool_segment_bytes

    segments = [{"total_size": 2 << 20, "segment_pool_id": (0, 0)}, {"total_size": 1 << 20, "segment_pool_id": (1, 3)},
                {"total_size": 4 << 20, "segment_pool_id": (1, 3)}, {"total_size": 8 << 20, "segment_pool_id": (1, 4)}]
    assert pool_segment_bytes(segments, (1, 3)) == 5 << 20
    assert pool_segment_bytes(segments, [1, 4]) == 8 << 20
    assert pool_segment_bytes([], (1, 3)) == 0


def test_tree_pool_bytes_without_cuda_is_none_or_zero():
    from helpers.runtime.cudagraphs import tree_pool_bytes

    if not torch.cuda.is_available():
        assert tree_pool_bytes() is None      # no device to ask: a missing figure, not a crash


def test_cpu_us_per_call_times_the_call_and_record_with_blas_checks_its_argument():
    from helpers.runtime.cudagraphs import cpu_us_per_call, record_with_blas

    calls = []
    us = cpu_us_per_call(lambda x: calls.append(x), 1, calls=10, warmup=2)
    assert len(calls) == 12 and us > 0
    with pytest.raises(ValueError):
        record_with_blas(mlp(1, 4), torch.randn(2, 4), through="elsewhere")


def test_linear_gemm_in_child_names_the_kernel_or_says_why_not():
    from helpers.runtime.cudagraphs import linear_gemm_in_child

    found = linear_gemm_in_child({"DISABLE_ADDMM_CUDA_LT": "1"})
    if torch.cuda.is_available():
        assert found and not found.startswith("error")
    else:
        assert found.startswith("error: ")      # no CUDA in the child: a figure that says so, not a crash
