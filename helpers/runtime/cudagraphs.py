"""CUDA graphs and ``mode="reduce-overhead"``: launches per step, capture and replay, the output pool (ch25).

What runs without CUDA (the model, counting the ATen operators an eager step dispatches, the
launch-overhead arithmetic) is tested on CPU; the rest needs a CUDA device. Private torch names
(``torch.utils._python_dispatch.TorchDispatchMode``, ``torch._dynamo.utils.counters``,
``torch._inductor.cudagraph_utils``, ``torch._inductor.config``, ``torch._dynamo.mark_static_address``,
``torch._dynamo.config``, ``torch._inductor.compile_fx._warn_tf32_disabled``,
``torch._inductor.cudagraph_trees.MarkStepBox``, ``torch._inductor.cudagraph_trees.get_manager``) go through ``helpers.core.private.private``; all exist on torch
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


# ---------------------------------------------------------------------------------------------------
# Which call path picks which GEMM kernel, and the cuBLASLt fix (ch25, issue 27)

@contextmanager
def blas_library(name: str):
    """Prefer a BLAS library (``"cublas"``, ``"cublaslt"``, ``"default"``) for the block, then restore (ch25).

    ``torch.backends.cuda.preferred_blas_library`` is public and global: it decides, at each call of a
    matrix product, whether ATen calls cuBLAS or cuBLASLt. A CUDA graph recorded inside the block keeps the
    kernels it recorded after the block.
    """
    import torch

    before = torch.backends.cuda.preferred_blas_library()
    torch.backends.cuda.preferred_blas_library(name)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_blas_library(before)


def gemm_paths(layer, x) -> dict:
    """One ``Linear`` layer's product written four ways, as zero-argument callables, label → callable (ch25).

    ``F.linear`` is what eager's ``Linear`` runs (``addmm`` with the 1-D bias); then ``addmm`` with the 1-D
    bias written out, ``addmm`` with the bias expanded to the output's shape, and ``mm`` without a bias,
    which is what Inductor's graph calls after ``unfuse_bias_add_to_pointwise``.
    """
    import torch
    import torch.nn.functional as F

    w, b = layer.weight, layer.bias
    rows = x.shape[0]
    return {
        "F.linear(x, w, b)": lambda: F.linear(x, w, b),
        "addmm(b, x, w.t()), 1-D bias": lambda: torch.addmm(b, x, w.t()),
        f"addmm(b.expand({rows}, {b.shape[0]}), x, w.t())": lambda: torch.addmm(b.expand(rows, b.shape[0]), x, w.t()),
        "mm(x, w.t()), no bias": lambda: torch.mm(x, w.t()),
    }


def record_with_blas(model, *args, library: str = "cublaslt", calls: int = 3, through: str = "model"):
    """Compile ``model`` as ``mode="reduce-overhead"`` does and record its CUDA graph while ``library`` is preferred (ch25).

    ``through="model"`` compiles the model itself, ``torch.compile(model, dynamic=False, options={"triton.cudagraphs":
    True, "pattern_matcher": True})``: the settings of reduce-overhead (``triton.cudagraphs``) plus the pattern
    matcher's default, spelled out so that the options differ from a plain ``mode="reduce-overhead"``'s
    (``_TorchCompileInductorWrapper.__eq__`` compares them) and Dynamo compiles a new entry, and the cudagraph
    tree records a new graph, whatever was compiled for ``model`` before; the same construction as
    ``compile_keeping_addmm``, so the two are timed like for like. ``through="wrapper"`` compiles a new
    function (``step``) that calls the model instead (the chapter's earlier way). The ``calls`` calls (compile,
    warm-up, record) run inside ``blas_library(library)``; the recorded graph keeps that library's kernels
    afterwards. Returns ``(compiled, compiled_anew)``.
    """
    import torch

    stats = private("torch._dynamo.utils.counters")["stats"]
    before = stats["unique_graphs"]
    if through == "model":
        compiled = torch.compile(model, dynamic=False, options={"triton.cudagraphs": True, "pattern_matcher": True})
    elif through == "wrapper":
        def step(*a):
            return model(*a)

        compiled = torch.compile(step, mode="reduce-overhead", dynamic=False)
    else:
        raise ValueError(f"through={through!r}: 'model' or 'wrapper'")
    with blas_library(library):
        for _ in range(calls):
            compiled(*args)
    return compiled, stats["unique_graphs"] > before


def cpu_us_per_call(fn, *args, calls: int = 100, warmup: int = 3) -> float:
    """The CPU side of a call: µs until ``fn(*args)`` returns, averaged over ``calls`` calls in a row (ch25).

    On CUDA the device is synchronised before the loop and after it, not inside it: a call that only enqueues
    GPU work returns before that work runs, so this is the time the CPU spends per call (Python, Dynamo's
    guards, the cudagraph tree's bookkeeping, the launches), not the GPU's. If it is close to the wall time per
    step, the step is bound by its CPU side. On a CPU it is simply the time per call.
    """
    import time

    import torch

    cuda = torch.cuda.is_available()
    for _ in range(warmup):
        fn(*args)
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    elapsed = time.perf_counter() - start
    if cuda:
        torch.cuda.synchronize()
    return elapsed / calls * 1e6


_CHILD_LINEAR = """
import torch
from helpers.core.timing import kernel_times
x = torch.randn(8, 256, device="cuda")
layer = torch.nn.Linear(256, 256).cuda()
with torch.no_grad():
    table = kernel_times(layer, x)
print("GEMM:" + next(iter(table)))
"""


def linear_gemm_in_child(env: dict, timeout: float = 120) -> str:
    """The slowest kernel of eager ``Linear(256, 256)`` at batch 8, in a fresh Python with ``env`` added (ch25).

    For settings read once per process, such as ``DISABLE_ADDMM_CUDA_LT`` (ATen's
    ``isGloballyDisabledAddmmCudaLt`` caches it): the child sees them from its start. Returns the kernel's
    name, or ``"error: ..."`` with the child's last line if it failed (CUDA only).
    """
    import os
    import subprocess
    import sys

    from ..core.env import REPO_ROOT

    try:
        run = subprocess.run([sys.executable, "-c", _CHILD_LINEAR], env=dict(os.environ, **env), cwd=str(REPO_ROOT),
                             capture_output=True, text=True, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - a figure that says why, not a crash
        return f"error: {type(exc).__name__}"
    found = [ln[len("GEMM:"):] for ln in run.stdout.splitlines() if ln.startswith("GEMM:")]
    if found:
        return found[-1]
    tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
    return f"error: {tail[:120]}"


def gemm_of(table: dict) -> str:
    """The slowest kernel of a ``timing.kernel_times`` table, which for these models is the matrix product (ch25)."""
    return next(iter(table)) if table else ""


def gpu_total_us(table: dict) -> float:
    """The GPU µs per call of a ``timing.kernel_times`` table, all kernels together (ch25)."""
    return sum(us for _, us in table.values())


# ---------------------------------------------------------------------------------------------------
# Cudagraph trees: static inputs, re-recording per shape, .item(), mark_step_begin, cudagraph_or_error

def mark_static(t):
    """``torch._dynamo.mark_static_address(t)``: the tensor's address is fixed across calls, so cudagraph trees
    use it in place instead of copying it into a static buffer on every replay (ch25). Returns ``t``."""
    private("torch._dynamo.mark_static_address")(t)
    return t


@dataclass
class Compiled:
    """What compiling and calling a function as reduce-overhead gave: graphs, skips, breaks (ch25)."""

    graphs: int                                   # graphs Dynamo compiled (a graph break makes two)
    skips: int                                    # counters["inductor"]["cudagraph_skips"]'s growth
    skip_messages: list = field(default_factory=list)   # the cudagraphs log's skip messages (CUDA graphs only)
    breaks: list = field(default_factory=list)          # the graph breaks' reasons (first lines)


def compiled_graphs(fn, *args, mode: str = "reduce-overhead", calls: int = 3, **dynamo_settings) -> Compiled:
    """Compile ``fn`` (``mode``), call it ``calls`` times, and say what happened (ch25).

    ``dynamo_settings`` are ``torch._dynamo.config`` settings for the block (e.g. ``capture_scalar_outputs``).
    The graph count is the growth of ``counters["stats"]["unique_graphs"]``; the breaks are the reasons that
    ``counters["graph_break"]`` gained (Dynamo's ``add_to_stats("graph_break")``; its warning for ``.item()``
    is logged once per process, the counter counts every break). Use a function not compiled before with the
    same mode: Dynamo would reuse its entry (its config settings are not guarded). Runs on any device; on a
    CPU there are no CUDA graphs (the skip count then counts the CPU graphs, with no message).
    """
    import logging

    import torch

    counters = private("torch._dynamo.utils.counters")
    stats, breaks_seen = counters["stats"], counters["graph_break"]
    config = private("torch._dynamo.config")
    before, breaks_before = stats["unique_graphs"], dict(breaks_seen)
    compiled = torch.compile(fn, mode=mode)
    with config.patch(**dynamo_settings), skip_log() as log, warnings.catch_warnings(), \
            capture_logs(loggers=("torch._dynamo.variables.tensor",), level=logging.CRITICAL):
        warnings.simplefilter("ignore")
        for _ in range(calls):
            compiled(*args)
    breaks = [reason.splitlines()[0] for reason, n in breaks_seen.items() if n > breaks_before.get(reason, 0)]
    return Compiled(stats["unique_graphs"] - before, log.count, log.messages, breaks)


@dataclass
class Recordings:
    """What recording one compiled graph at several input sizes cost (ch25)."""

    sizes: int            # distinct batch sizes called
    graphs: int           # graphs Dynamo compiled for them
    recordings: int       # CUDA graphs the tree recorded (its "Recording cudagraph tree for ..." log lines)
    warned: bool          # the cudagraph_dynamic_shape_warn_limit warning appeared
    pool_first: int | None = None   # bytes the cudagraph tree's pool grew by at the first size (None: not readable)
    pool_growth: int | None = None  # bytes it grew by over all the sizes
    pool_start: int | None = None   # bytes the pool held before the first size (what earlier graphs left in it)


def pool_segment_bytes(segments, pool_id) -> int:
    """Bytes of the ``torch.cuda.memory_snapshot()`` segments that belong to the memory pool ``pool_id`` (ch25).

    Each segment names its pool in ``segment_pool_id`` (a pair; torch's own ``get_cudagraph_segments`` in
    ``cudagraph_trees.py`` filters the same way)."""
    want = tuple(pool_id)
    return sum(int(s["total_size"]) for s in segments if tuple(s.get("segment_pool_id", ())) == want)


def tree_pool_bytes() -> int | None:
    """Bytes the caching allocator holds in the cudagraph tree's memory pool on the current CUDA device (ch25).

    The tree (``CUDAGraphTreeManager``, one per device) allocates every warm-up, recording and output of every
    reduce-overhead function in one pool, ``cuda_graphs_thread_pool``; this sums that pool's segments in
    ``torch.cuda.memory_snapshot()`` (memory the pool holds, used or free within it). 0 before any tree exists,
    None if the snapshot cannot be read.
    """
    import torch

    try:
        manager = private("torch._inductor.cudagraph_trees.get_manager")(torch.cuda.current_device(),
                                                                         create_if_none_exists=False)
        if manager is None:
            return 0
        return pool_segment_bytes(torch.cuda.memory_snapshot(), manager.cuda_graphs_thread_pool)
    except Exception:  # noqa: BLE001 - a figure the chapter records as missing, not a crash
        return None


def record_per_size(model, width: int, sizes, calls: int = 3) -> Recordings:
    """Compile ``model`` as reduce-overhead with a dynamic batch, call it at each size, and count recordings (ch25).

    With symbolic sizes one compiled graph serves every batch, but a CUDA graph fixes its shapes: cudagraph
    trees record one graph per distinct size (``cudagraphify_impl``'s ``deferred_cudagraphify`` keys them by
    the input's integer sizes, logging "Recording cudagraph tree for symint key"), and warn once the count
    passes ``cudagraph_dynamic_shape_warn_limit`` (``maybe_warning_due_to_dynamic_shape``). The memory is the
    growth of the tree's pool (``tree_pool_bytes``) after the first size and after all of them; the inputs are
    made before the first reading, outside the pool. CUDA only.
    """
    import logging

    import torch

    stats = private("torch._dynamo.utils.counters")["stats"]
    private("torch._inductor.cudagraph_trees.mark_step_begin")  # imports the module and its loggers
    graphs_before = stats["unique_graphs"]
    compiled = torch.compile(model, mode="reduce-overhead", dynamic=True)
    inputs = [torch.randn(b, width, device="cuda") for b in sizes]
    torch.cuda.synchronize()
    pool_before, pool_after_first = tree_pool_bytes(), None
    with capture_logs("cudagraphs", loggers=("torch._inductor.cudagraph_trees",), level=logging.INFO) as logs, \
            torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, x in enumerate(inputs):
            for _ in range(calls):
                compiled(x)
            if i == 0:
                torch.cuda.synchronize()
                pool_after_first = tree_pool_bytes()
    torch.cuda.synchronize()
    pool_after = tree_pool_bytes()
    messages = logs.messages()

    def grew(after):
        return None if after is None or pool_before is None else after - pool_before

    return Recordings(len(inputs), stats["unique_graphs"] - graphs_before,
                      sum("Recording cudagraph tree" in m for m in messages),
                      any("distinct sizes" in m for m in messages), grew(pool_after_first), grew(pool_after), pool_before)


def two_outputs_in_one_step(compiled, xa, xb, steps: int = 4) -> tuple[str, bool]:
    """Keep two outputs of one step alive, with ``torch.compiler.cudagraph_mark_step_begin()`` marking the steps (ch25).

    Once a program has called ``cudagraph_mark_step_begin``, a new generation starts only at the next mark
    (``CUDAGraphTreeManager.get_curr_generation`` reads ``MarkStepBox.mark_step_counter`` before
    ``GenerationTracker``), so two calls inside one step are two nodes of one path of the tree, with their own
    memory. Returns (same pointer: "True"/"False", the first output still holds its own values). Afterwards the
    counter is put back to the value it had before (0 if the program never marked a step; at 0
    ``get_curr_generation`` reads ``GenerationTracker`` again); that does not undo the tree the demo built (its
    two-call path stays recorded), and whether later calls then behave exactly as before was not shown: on the
    H200 (torch 2.11) a held output and the next call's output, at the same address before the demo, were at
    different addresses after it (CUDA only).
    """
    import torch

    box = private("torch._inductor.cudagraph_trees.MarkStepBox")
    saved = box.mark_step_counter
    try:
        for _ in range(steps):                     # warm-up and recording of the two-call path
            torch.compiler.cudagraph_mark_step_begin()
            ya = compiled(xa)
            yb = compiled(xb)                      # ya is alive: the second call is a child node
        del ya, yb
        torch.compiler.cudagraph_mark_step_begin()
        ya = compiled(xa)
        want = ya.clone()
        yb = compiled(xb)
        same = same_pointer(ya, yb)
        kept = touch(ya) == "ok" and bool(torch.equal(ya, want)) and not bool(torch.equal(ya, yb))
        return same, kept
    finally:
        box.mark_step_counter = saved


def skip_raises(fn, *args, calls: int = 3) -> str:
    """With ``triton.cudagraph_or_error`` on, compile ``fn`` as reduce-overhead and call it: the error's class, or
    "no error" (ch25). ``log_cudagraph_skip_and_bump_counter`` raises instead of logging a skip."""
    import torch

    config = private("torch._inductor.config")
    compiled = torch.compile(fn, mode="reduce-overhead")
    try:
        with config.patch({"triton.cudagraph_or_error": True}), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(calls):
                compiled(*args)
    except Exception as exc:  # noqa: BLE001 - the class name is the lesson
        return type(exc).__name__
    return "no error"


def tf32_warning() -> str:
    """The warning Inductor gives when TF32 could speed up float32 products but is off, or "" (ch25).

    ``_warn_tf32_disabled`` (``torch/_inductor/compile_fx.py``) warns once per process (it is cached), and
    the course's setup silences it; this calls the function behind the cache and catches what it warns.
    """
    warn = private("torch._inductor.compile_fx._warn_tf32_disabled")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(warn, "__wrapped__", warn)()
    return str(caught[0].message) if caught else ""
