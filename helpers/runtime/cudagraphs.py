"""CUDA graphs and ``mode="reduce-overhead"``: launches per step, capture and replay, the output pool (ch25).

What runs without CUDA (the model, counting the ATen operators an eager step dispatches, the
launch-overhead arithmetic) is tested on CPU; the rest needs a CUDA device. Private torch names
(``torch.utils._python_dispatch.TorchDispatchMode``, ``torch._dynamo.utils.counters``,
``torch._inductor.cudagraph_utils``, ``torch._inductor.config``) go through ``helpers.core.private.private``; all exist on torch
2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import warnings
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..core.private import private
from ..dynamo.logs import capture_logs


def mlp(depth: int = 32, width: int = 256, device: str = "cpu"):
    """The chapter's model: ``depth`` × [Linear(width, width) + ReLU], in eval mode (ch25)."""
    import torch

    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(device).eval()


def eager_ops(fn, *args) -> Counter:
    """The ATen operators one eager call dispatches that compute something (views left out), by name (ch25).

    On a GPU each of them launches at least one kernel: this is the count of launches an eager step
    makes, read without a GPU.
    """
    import torch

    mode_cls = private("torch.utils._python_dispatch.TorchDispatchMode")
    seen: Counter = Counter()

    class _Count(mode_cls):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.is_view:
                seen[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), _Count():
        fn(*args)
    return seen


@dataclass
class LaunchBudget:
    """Where an eager step's time goes: launches, wall per step, GPU time per step (ch25)."""

    launches: float
    wall_s: float
    gpu_s: float

    @property
    def cpu_per_launch_us(self) -> float:
        """Wall per step ÷ launches: what the CPU spends per launch when it, not the GPU, sets the pace."""
        return self.wall_s / self.launches * 1e6

    @property
    def gpu_busy(self) -> float:
        """GPU time ÷ wall: the fraction of a step the GPU is computing (1 = no launch-bound gaps)."""
        return self.gpu_s / self.wall_s

    @property
    def bound(self) -> str:
        return "launch-bound (the GPU waits for the CPU)" if self.gpu_busy < 0.8 else "GPU-bound"


def capture(fn, *static_inputs, warmup: int = 3):
    """Record ``fn(*static_inputs)`` into a ``torch.cuda.CUDAGraph`` after a side-stream warm-up (ch25).

    Returns ``(graph, static_output)``: feed new data with ``static_input.copy_(new)``, then
    ``graph.replay()``; the result appears in ``static_output`` (the same memory every replay).
    """
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(warmup):
            fn(*static_inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_output = fn(*static_inputs)
    return graph, static_output


@dataclass
class SkipLog:
    """The CUDA-graph skips of the compiles inside a ``skip_log()`` block: messages and count (ch25)."""

    messages: list = field(default_factory=list)
    count: int = 0


@contextmanager
def skip_log():
    """Collect the CUDA-graph skip messages and the skip count of what compiles inside the block (ch25).

    The messages are what ``TORCH_LOGS="cudagraphs"`` prints (``log_cudagraph_skip_and_bump_counter`` in
    ``torch/_inductor/cudagraph_utils.py``); the count is ``counters["inductor"]["cudagraph_skips"]``'s
    growth (from zero if the counters are cleared inside the block). A graph with no CUDA tensor is
    counted but has no message: torch logs a skip only for graphs on a CUDA device.
    """
    private("torch._inductor.cudagraph_utils.format_default_skip_message")  # creates its artifact logger
    counters = private("torch._dynamo.utils.counters")
    before = counters["inductor"]["cudagraph_skips"]
    log = SkipLog()
    with capture_logs("cudagraphs", loggers=("torch._inductor.cudagraph_utils",)) as logs:
        try:
            yield log
        finally:
            after = counters["inductor"]["cudagraph_skips"]
            log.messages = [m for m in logs.messages() if "skipping cudagraphs" in m]
            log.count = after - before if after >= before else after


def skipped(fn, *args, calls: int = 3):
    """Compile ``fn`` with ``mode="reduce-overhead"``, call it, and return (skip messages, skip count) (ch25).

    The messages and the count are ``skip_log()``'s.
    """
    import torch

    compiled = torch.compile(fn, mode="reduce-overhead")
    with skip_log() as log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(calls):
            compiled(*args)
    return log.messages, log.count


def skip_reason(message: str) -> str:
    """The first line of a skip message, up to its stack trace (ch25)."""
    return message.split(". Found from")[0].splitlines()[0].strip() if message else ""


def compile_keeping_addmm(model, *args, calls: int = 3):
    """Compile ``model`` as ``mode="reduce-overhead"`` does, with Inductor's pattern matcher off, so that
    ``addmm`` stays one library call; call it ``calls`` times (compile, warm up, record) (ch25).

    Among the pattern matcher's rewrites is ``unfuse_bias_add_to_pointwise``
    (``torch/_inductor/fx_passes/post_grad.py``): on a GPU, an ``addmm`` whose users are all pointwise
    becomes ``mm`` plus a pointwise kernel that adds the bias (fused with the ReLU). The switch goes in the
    compile's ``options`` (``triton.cudagraphs`` too, which is what reduce-overhead sets), not in a patched
    global config: the options are part of the compiled function's identity
    (``_TorchCompileInductorWrapper.__eq__`` compares ``config``), so Dynamo compiles the model anew rather
    than reusing the entry it compiled with the matcher on. Returns ``(compiled, compiled_anew)``, the
    second True when Dynamo did build a new graph.
    """
    import torch

    stats = private("torch._dynamo.utils.counters")["stats"]
    before = stats["unique_graphs"]
    compiled = torch.compile(model, dynamic=False, options={"triton.cudagraphs": True, "pattern_matcher": False})
    for _ in range(calls):
        compiled(*args)
    return compiled, stats["unique_graphs"] > before


def touch(t) -> str:
    """Read a tensor's values: "ok", or the class of the error raised (an overwritten CUDA graph output) (ch25)."""
    try:
        float(t.sum())
        return "ok"
    except Exception as exc:  # noqa: BLE001 - the class name is the lesson
        return type(exc).__name__


def same_pointer(a, b) -> str:
    """ "True"/"False" for ``a.data_ptr() == b.data_ptr()``, or the error's class if reading the pointer raises (ch25)."""
    try:
        return str(a.data_ptr() == b.data_ptr())
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__


def overhead_model(launches: int, cpu_us: float, gpu_us: float, replay_us: float = 0.0) -> tuple[float, float]:
    """A step's time, eager and replayed, in the simplest launch model (µs) (ch25).

    Eager, the CPU issues ``launches`` launches at ``cpu_us`` each while the GPU runs kernels of
    ``gpu_us`` each, so the slower of the two sets the pace. A CUDA graph replay issues one launch
    (``replay_us``) and the GPU runs the same kernels back to back.
    """
    eager = max(launches * cpu_us, launches * gpu_us)
    return eager, max(replay_us, launches * gpu_us)


def leaves_input_alone(fn, x) -> bool | None:
    """Whether ``fn(x)`` leaves ``x`` unchanged and returns what ``x + 1`` times 2 gives (exercise 25.3) (ch25)."""
    if fn is None:
        return None
    import torch

    before = x.clone()
    out = fn(x)
    return bool(torch.equal(x, before) and torch.allclose(out, (before + 1) * 2))
