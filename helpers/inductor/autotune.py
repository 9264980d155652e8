"""Autotuning seen from outside: the choices Inductor benchmarks for one operation, their times, the one it
keeps, what tuning costs in compile time, and coordinate descent on a kernel's launch config (ch23).

``tune(fn, *args, mode="max-autotune-no-cudagraphs")`` compiles ``fn`` once, cold, and returns a ``Tuned``:
for every ``AlgorithmSelectorCache`` call (one per matrix product Inductor lowers) the choices it was
offered and, when it benchmarked them, each choice's time (``Selection``); the benchmarking and
precompiling seconds from its ``AUTOTUNE`` report; the compile time; the generated code. ``kernel_times``
reads the kernels one call runs and their GPU time from the profiler. ``coordinate_descent`` runs
Inductor's own ``CoordescTuner`` on a cost function you give it (any device), and ``descent_log`` reads
what the tuner logged while a GPU compile ran it on a real kernel.

Private names, reached through ``helpers.core.private.private`` (all exist on torch 2.11, 2.13 and 2.15):
``torch._inductor.select_algorithm.AlgorithmSelectorCache`` (its ``__call__``) and
``get_algorithm_selector_cache`` (its ``feedback_saver_fns``, which receive every benchmark's timings),
``torch._inductor.config``, ``torch._inductor.list_mode_options``,
``torch._inductor.template_heuristics.triton.CUDAConfigHeuristic`` (the Triton GEMM configs), the hook
``collect_code`` uses (``GraphLowering.save_output_code``) and
``torch._inductor.runtime.coordinate_descent_tuner.CoordescTuner``; ``reduction_candidates`` calls
``triton_heuristics.reduction`` with ``torch._inductor.runtime.hints.ReductionHint``.
"""
from __future__ import annotations

import contextlib
import io
import logging
import math
import re
import time
import types
import warnings
from dataclasses import dataclass, field

from ..core.private import private, private_step
from ..dynamo.logs import capture_logs, silence
from .code import InductorOutput, collect_code

CD_LOGGER = "torch._inductor.runtime.coordinate_descent_tuner"

_KINDS = {"ExternKernelCaller": "ATen", "TritonTemplateCaller": "Triton template",
          "SubgraphChoiceCaller": "subgraph", "CppTemplateCaller": "C++ template",
          "DataProcessorChoiceCallerWrapper": "C++ template", "CUTLASSTemplateCaller": "CUTLASS",
          "CuteDSLTemplateCaller": "CuTeDSL", "NVUniversalGemmCaller": "NVGEMM"}


def choice_kind(caller) -> str:
    """What kind of implementation a ``ChoiceCaller`` is: "ATen", "Triton template", "C++ template", ... (ch23)."""
    cls = type(caller).__name__
    if cls in _KINDS:
        return _KINDS[cls]
    inner = getattr(caller, "_wrapped", None) or getattr(caller, "wrapped", None)
    if inner is not None and type(inner).__name__ in _KINDS:
        return _KINDS[type(inner).__name__]
    return cls


def parse_description(text: str) -> dict:
    """The ``KEY=value`` pairs of a choice's description (``BLOCK_M=64, num_stages=3, ...``) as a dict (ch23)."""
    out = {}
    for key, value in re.findall(r"(\w+)=('[^']*'|[^,\s]+)", text or ""):
        value = value.strip("'")
        out[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return out


@dataclass
class Choice:
    """One implementation ``AlgorithmSelectorCache`` was offered, and its benchmark time (ch23)."""

    name: str                 # "mm" (ATen), "triton_mm_16", "cpp_CppMicroGemmFP32Vec_0", ...
    kind: str                 # "ATen", "Triton template", "C++ template", "subgraph", ...
    ms: float | None          # benchmarked time (None: not benchmarked; inf: failed to compile or run)
    description: str = ""

    @property
    def params(self) -> dict:
        return parse_description(self.description)

    @property
    def family(self) -> str:
        """The name without its running number: ``triton_mm_16`` -> ``triton_mm`` (ch23)."""
        return re.sub(r"_\d+$", "", self.name)

    @property
    def tile(self) -> str:
        """``BLOCK_M×BLOCK_N×BLOCK_K, s stages, w warps`` for a template with those parameters, else "" (ch23)."""
        p = self.params
        if not all(k in p for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")):
            return ""
        return (f"{p['BLOCK_M']}×{p['BLOCK_N']}×{p['BLOCK_K']}, {p.get('num_stages', '?')} stages, "
                f"{p.get('num_warps', '?')} warps")

    @property
    def failed(self) -> bool:
        return self.ms is not None and not math.isfinite(self.ms)

    def label(self) -> str:
        return f"{self.name} ({self.tile})" if self.tile else self.name


@dataclass
class Selection:
    """One ``AlgorithmSelectorCache`` call: the operation, its inputs, its choices and their times (ch23)."""

    op: str                    # "mm", "addmm", "packed_linear", ...
    sizes: list[str]           # input sizes, e.g. ["2048x2048", "2048x2048"]
    offered: list[Choice]      # every choice, in the order it was offered
    benchmarked: bool = False  # False when there was nothing to choose from (one choice)

    @property
    def ranked(self) -> list[Choice]:
        """The benchmarked choices, fastest first (failed ones last) (ch23)."""
        timed = [c for c in self.offered if c.ms is not None]
        return sorted(timed, key=lambda c: (not math.isfinite(c.ms), c.ms))

    @property
    def winner(self) -> Choice:
        return self.ranked[0] if self.benchmarked and self.ranked else self.offered[0]

    @property
    def aten(self) -> Choice | None:
        return next((c for c in self.offered if c.kind == "ATen"), None)

    @property
    def failed(self) -> list[Choice]:
        """Choices dropped: failed to compile or run (timed ``inf``), or removed before the benchmark (ch23)."""
        return [c for c in self.offered if c.failed or (self.benchmarked and c.ms is None)]

    def kinds(self) -> dict[str, int]:
        """Choices per kind, e.g. ``{"ATen": 1, "Triton template": 19}`` (ch23)."""
        out: dict[str, int] = {}
        for c in self.offered:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out

    def table(self, top: int = 8) -> str:
        """The benchmark as ``AUTOTUNE`` prints it: name, time, speed relative to the winner, tile (ch23)."""
        head = f"{self.op}({', '.join(self.sizes)}): {len(self.offered)} choice(s) {self.kinds()}"
        if not self.benchmarked:
            return head + f"\n  nothing to benchmark: {self.offered[0].name} is used"
        best = self.winner.ms
        rows = [f"  {c.name:<34} {c.ms:8.4f} ms {best / c.ms:7.1%}  {c.kind}{', ' + c.tile if c.tile else ''}"
                if not c.failed else f"  {c.name:<34}      inf     (failed: dropped)"
                for c in self.ranked[:top]]
        more = len(self.ranked) - top
        return "\n".join([head] + rows + ([f"  ... {more} more"] if more > 0 else []))


@dataclass
class Tuned:
    """One cold compile of a function, with what autotuning chose on the way (ch23)."""

    compiled: object                 # the torch.compile'd function (call it to run the chosen kernels)
    compile_s: float                 # first call: compile + one run (synchronised)
    selections: list[Selection]
    code: InductorOutput
    report: str = ""                 # what select_algorithm wrote to stderr (the AUTOTUNE tables)
    descent: list[str] = field(default_factory=list)   # coordinate-descent log lines, if it ran
    coordesc_benchmarks: int = 0     # configs coordinate descent benchmarked during the first call
    pool_ready: bool | None = None   # was Inductor's compile-worker pool ready when the compile began (None: unknown)
    lazy_compile_s: float | None = None  # seconds this process compiled Triton choices at their first benchmark call

    @property
    def benchmarked(self) -> list[Selection]:
        return [s for s in self.selections if s.benchmarked]

    @property
    def selection(self) -> Selection:
        """The first (usually the only) selection (ch23)."""
        return self.selections[0]

    @property
    def bench_s(self) -> float:
        """Seconds ``AUTOTUNE`` says it spent benchmarking, summed over selections (0 if none ran) (ch23)."""
        return sum(float(m) for m in re.findall(r"benchmarking takes ([\d.]+) seconds", self.report))

    @property
    def precompile_s(self) -> float:
        """Seconds ``AUTOTUNE`` says it spent precompiling the choices, summed (ch23)."""
        return sum(float(m) for m in re.findall(r"and ([\d.]+) seconds precompiling", self.report))

    @property
    def kernels(self) -> list[str]:
        return self.code.kernels

    @property
    def extern_calls(self) -> list[str]:
        """Library calls in the wrapper's ``call()``: ``extern_kernels.mm``, ``torch.ops.mkl._mkl_linear`` (ch23)."""
        body = self.code.call_function()
        return re.findall(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+)(?:\.default)?\(", body)

    @property
    def templates(self) -> list[str]:
        """Generated kernels that are GEMM templates (``triton_tem_*``; a C++ GEMM template's kernel) (ch23)."""
        return [k for k in self.kernels if k.startswith("triton_tem_") or self._is_cpp_template(k)]

    def _is_cpp_template(self, name: str) -> bool:
        src = self.code.kernel_source(name) if name.startswith("cpp_") else ""
        return "micro_gemm" in src or "GEMM" in src

    def call_lines(self, skip=("assert_", "del ", "args.clear", "# ", "with torch.cuda._DeviceGuard",
                               "torch.cuda.set_device", "stream0 = ")) -> list[str]:
        """The wrapper's ``call()`` without its bookkeeping lines (argument unpacking, asserts, device guards) (ch23)."""
        return [line.strip() for line in self.code.call_function().splitlines()
                if line.strip() and not line.strip().startswith(skip) and not re.match(r"\s*(arg\d+_\d+, )+= args", line)]


_TUNED: dict = {}


def _key(fn, args, patches):
    shapes = tuple((tuple(a.shape), str(a.dtype), str(a.device)) if hasattr(a, "shape") else repr(a) for a in args)
    return (getattr(fn, "__code__", fn), id(fn), shapes, tuple(sorted((k, repr(v)) for k, v in patches.items())))


def _fresh(fn):
    """A copy of ``fn`` with a code object of its own, so that its compile is a new Dynamo cache entry.

    Dynamo keeps compiled code per code object; compiling the same function again under other settings
    would otherwise add entries to the same code object (and count towards its recompile limit), and
    resetting Dynamo between compiles would make every compiled function of the notebook compile again
    on its next call.
    """
    if isinstance(fn, types.FunctionType):
        return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)

    def call(*args):
        return fn(*args)

    return types.FunctionType(call.__code__.replace(), call.__globals__, "call", None, call.__closure__)


CHOICES_SEEN: list = []  # the choices with a benchmark request that watch_selections saw in the current tune()


def worker_pool_ready() -> bool | None:
    """Whether Inductor's compile-worker pool has answered its readiness job (``AsyncCompile._ready_future`` done):
    then ``AsyncCompile.use_process_pool()`` is true and ``make_precompile_fn`` sends a Triton choice's compile to
    the workers instead of this process's threads. None if this torch has no such attribute (ch23)."""
    try:
        future = private("torch._inductor.async_compile.AsyncCompile")._ready_future
    except Exception:  # noqa: BLE001 - another torch
        return None
    return bool(future is not None and future.done())


def lazy_compile_seconds(choices) -> float | None:
    """Seconds this process spent compiling the Triton choices ``choices`` when the benchmark first ran them (ch23).

    ``CachingAutotuner.run`` compiles a kernel that has no launcher yet and records how long that took in
    ``precompile_time_taken_ns`` (0 otherwise); a choice precompiled on this process's threads already has its
    launcher. Read from each choice's benchmark module (``bmreq.module_path``, ``PyCodeCache.modules_no_attr``),
    so it must run right after the compile. None if nothing could be read.
    """
    try:
        modules = private("torch._inductor.codecache.PyCodeCache").modules_no_attr
    except Exception:  # noqa: BLE001 - another torch
        return None
    total, seen = 0, 0
    for c in choices:
        req = getattr(c, "bmreq", None)
        mod = modules.get(getattr(req, "module_path", None)) if req is not None else None
        kernel = getattr(mod, getattr(req, "kernel_name", ""), None) if mod is not None else None
        ns = getattr(kernel, "precompile_time_taken_ns", None)
        if isinstance(ns, (int, float)):
            total, seen = total + ns, seen + 1
    return total / 1e9 if seen else None


def ptxas_versions() -> tuple[str, str]:
    """(the ptxas release in this process's Triton cache key, the release of torch's own ``torch/bin/ptxas``), e.g.
    ``("12.8", "13.0")``; ``"unknown"`` for what cannot be read (ch23, CUDA only).

    Triton keys a compiled kernel with its backend's hash, the ptxas version and the architecture
    (``CUDABackend.hash``); ``get_ptxas_version`` is an ``lru_cache``, so a process keeps the version it read first.
    On torch 2.11 Inductor's compile workers run ``_set_triton_ptxas_path`` (``runtime/compile_tasks.py``), which
    points ``TRITON_PTXAS_PATH`` at ``torch/bin/ptxas`` when that file exists.
    """
    import subprocess
    from pathlib import Path

    import torch

    def release(text) -> str:
        found = re.search(r"release (\d+\.\d+)", str(text or ""))
        return found.group(1) if found else "unknown"

    here = theirs = "unknown"
    try:
        from triton.backends.nvidia import compiler as nvidia

        major, minor = torch.cuda.get_device_capability()
        here = release(nvidia.get_ptxas_version(major * 10 + minor))
    except Exception:  # noqa: BLE001 - no Triton, no CUDA, another Triton
        pass
    try:
        ptxas = Path(torch.__file__).parent / "bin" / "ptxas"
        if ptxas.exists():
            theirs = release(subprocess.run([str(ptxas), "--version"], capture_output=True, text=True, timeout=60).stdout)
    except Exception:  # noqa: BLE001
        pass
    return here, theirs


@contextlib.contextmanager
def watch_selections(sink: list):
    """Record every ``AlgorithmSelectorCache`` call of the block into ``sink`` as ``Selection``s (ch23).

    Two hooks: a wrapper around ``AlgorithmSelectorCache.__call__`` sees the choices offered (also when
    there is only one, which is used without a benchmark), and a feedback saver receives the timings of
    every benchmark that runs.
    """
    cls = private("torch._inductor.select_algorithm.AlgorithmSelectorCache")
    cache = private("torch._inductor.select_algorithm.get_algorithm_selector_cache")()
    original = cls.__call__

    def call(self, name, choices, input_nodes, layout, *args, **kwargs):
        try:
            sizes = ["x".join(str(s) for s in n.get_size()) for n in input_nodes]
        except Exception:  # noqa: BLE001 - an input without a plain size
            sizes = []
        offered = [Choice(c.name, choice_kind(c), None, str(getattr(c, "description", ""))) for c in choices]
        sink.append((Selection(name, sizes, offered), [id(c) for c in choices]))
        CHOICES_SEEN.extend(c for c in choices if getattr(c, "bmreq", None) is not None)
        return original(self, name, choices, input_nodes, layout, *args, **kwargs)

    def feedback(timings, name, input_nodes, choices, profiled=None, precompile_times=None):
        ids = {id(c): t for c, t in timings.items()}
        for sel, cids in reversed(sink):
            if sel.op == name and set(ids) <= set(cids):
                for c, cid in zip(sel.offered, cids):
                    if cid in ids:
                        c.ms = float(ids[cid])
                sel.benchmarked = True
                return
        offered = [Choice(c.name, choice_kind(c), float(t), str(getattr(c, "description", ""))) for c, t in timings.items()]
        sink.append((Selection(name, [], offered, True), [id(c) for c in timings]))

    cls.__call__ = call
    cache.feedback_saver_fns.append(feedback)
    try:
        yield sink
    finally:
        cls.__call__ = original
        if feedback in cache.feedback_saver_fns:
            cache.feedback_saver_fns.remove(feedback)


@contextlib.contextmanager
def descent_logging():
    """Collect the coordinate-descent tuner's DEBUG log (what ``TORCH_LOGS`` would print) for the block (ch23)."""
    with capture_logs(loggers=(CD_LOGGER,), level=logging.DEBUG) as logs:
        lines: list[str] = []
        try:
            yield lines
        finally:
            lines.extend(logs.lines())


def _sync(args):
    import torch

    if any(getattr(a, "is_cuda", False) for a in args):
        torch.cuda.synchronize()


def tune(fn, *args, mode: str | None = "max-autotune-no-cudagraphs", backends: str | None = None,
         max_configs: int | None = None, freezing: bool = False, cache: bool = True, **config_patches) -> Tuned:
    """Compile ``fn(*args)`` once, cold (Inductor's caches and its autotune cache off), and report (ch23).

    ``mode``: a ``torch.compile`` mode (None is the default mode). ``backends`` sets
    ``config.max_autotune_gemm_backends`` (e.g. ``"ATEN,TRITON"``, ``"CPP"``); ``max_configs`` caps the
    Triton GEMM configs per template (``config.test_configs.max_mm_configs``, a smaller search);
    ``freezing=True`` turns on ``config.freezing`` and compiles under ``torch.no_grad()``: a module's
    weights become constants, which the C++ GEMM template needs on a CPU. ``config_patches`` are other
    ``torch._inductor.config`` settings (``a__b`` for ``a.b``). Results are cached per function, inputs and
    settings, so a notebook pays each compile once.
    """
    import torch

    patches = {"force_disable_caches": True, "autotune_local_cache": False}
    if backends is not None:
        patches["max_autotune_gemm_backends"] = backends.upper()
    if max_configs is not None:
        patches["test_configs.max_mm_configs"] = int(max_configs)
    if freezing:
        patches["freezing"] = True
    if all(str(getattr(a, "device", "cpu")) == "cpu" for a in args):
        patches["cpp.threads"] = 1  # as the course runs CPU code: one thread
    patches.update({k.replace("__", "."): v for k, v in config_patches.items()})
    key = _key(fn, args, {**patches, "mode": mode})
    if cache and key in _TUNED:
        return _TUNED[key]
    config = private("torch._inductor.config")
    sink: list = []
    err = io.StringIO()
    grad = torch.no_grad() if freezing else contextlib.nullcontext()
    compiled = torch.compile(_fresh(fn), mode=mode, dynamic=False)
    benched = coordesc_benchmarks()
    ready = worker_pool_ready()
    CHOICES_SEEN.clear()
    # the AUTOTUNE report goes to sys.stderr (captured); a dropped choice's traceback goes to select_algorithm's
    # logger, and a CUDA-less torch build warns through cpp_extension's: the table says what they say
    quiet = silence("torch._inductor.select_algorithm", "torch.utils.cpp_extension")
    with warnings.catch_warnings(), config.patch(patches), watch_selections(sink), descent_logging() as lines, \
            contextlib.redirect_stderr(err), grad, collect_code() as code, quiet:
        warnings.simplefilter("ignore")
        _sync(args)
        start = time.perf_counter()
        compiled(*args)
        _sync(args)
        seconds = time.perf_counter() - start
    if freezing:
        inner = compiled

        def compiled(*a):  # a frozen graph is only valid without autograd
            with torch.no_grad():
                return inner(*a)
    lazy = lazy_compile_seconds(CHOICES_SEEN)
    CHOICES_SEEN.clear()
    out = Tuned(compiled, seconds, [s for s, _ in sink], InductorOutput(list(code.sources)), err.getvalue(), list(lines),
                coordesc_benchmarks() - benched, ready, lazy)
    if cache:
        _TUNED[key] = out
    return out


# --------------------------------------------------------------------------- what one call runs on the GPU

@dataclass
class KernelTimes:
    """The device kernels one call runs: name -> (launches per call, GPU µs per call), from the profiler (ch23)."""

    per_call: dict[str, tuple[float, float]]

    @property
    def total_us(self) -> float:
        return sum(us for _, us in self.per_call.values())

    @property
    def launches(self) -> float:
        return sum(n for n, _ in self.per_call.values())

    @property
    def main(self) -> str:
        """The kernel that takes the most GPU time (ch23)."""
        return max(self.per_call, key=lambda k: self.per_call[k][1]) if self.per_call else ""

    def lines(self, width: int = 90) -> list[str]:
        return [f"{n:4.1f}× {us:8.2f} µs  {name[:width]}"
                for name, (n, us) in sorted(self.per_call.items(), key=lambda kv: -kv[1][1])]


def kernel_times(fn, *args, repeats: int = 20, warmup: int = 3) -> KernelTimes:
    """Profile ``repeats`` calls of ``fn(*args)`` and return each device kernel's launches and GPU time per call (ch23).

    GPU time only: the CPU's launch overhead and the gaps between kernels are not in it (``helpers.timing.wall``
    measures what a loop sees). CUDA only.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the profiler's notices would print under the cell
        with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
            for _ in range(repeats):
                fn(*args)
            torch.cuda.synchronize()
    agg: dict[str, list] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            a = agg.setdefault(e.name, [0, 0.0])
            a[0] += 1
            a[1] += e.device_time
    return KernelTimes({k: (v[0] / repeats, v[1] / repeats) for k, v in agg.items()})


def kernel_family(name: str) -> str:
    """A device kernel's family from its name: "cuBLAS" (``nvjet``, ``sm90_xmma``, ``cutlass``, ``gemm``),
    "Triton template" (``triton_tem_``), "Triton" (other ``triton_``), else "other" (ch23)."""
    low = name.lower()
    if low.startswith("triton_tem_"):
        return "Triton template"
    if low.startswith("triton_"):
        return "Triton"
    if any(t in low for t in ("nvjet", "xmma", "cutlass", "gemm", "cublas", "sgemm", "hgemm")):
        return "cuBLAS"
    return "other"


# --------------------------------------------------------------------------- coordinate descent

class LaunchConfig:
    """A stand-in for ``triton.Config`` (block sizes in ``kwargs``, ``num_warps``, ``num_stages``) that
    ``CoordescTuner`` can tune without Triton installed (ch23)."""

    def __init__(self, num_warps: int = 4, num_stages: int = 1, **kwargs):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages

    def as_dict(self) -> dict:
        return {**self.kwargs, "num_warps": self.num_warps}

    def __repr__(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in self.as_dict().items())


@dataclass
class Descent:
    """What ``CoordescTuner.autotune`` did: the start, every config it timed, the moves it kept (ch23)."""

    start: dict
    final: dict
    start_cost: float
    final_cost: float
    tried: list[tuple[dict, float]]     # every config timed, in order (the start first)
    moves: list[tuple[dict, float]]     # the improving configs, in order
    log: list[str]

    @property
    def speedup(self) -> float:
        return self.start_cost / self.final_cost

    @property
    def evaluations(self) -> int:
        return len(self.tried)


@private_step("CoordescTuner (its constructor, autotune and lookup_in_cache, given a stand-in Config)")
def coordinate_descent(cost, start: dict, *, size_hints: dict | None = None, max_warps: int = 32,
                       check_all_directions: bool = False) -> Descent:
    """Run Inductor's ``CoordescTuner.autotune`` on ``cost(config_dict) -> time`` from ``start`` (ch23).

    ``start`` holds block sizes (``XBLOCK``, ``R0_BLOCK``, ...) and ``num_warps``. The tuner changes one
    field at a time, doubling or halving it (``get_neighbour_values``), keeps a change only if it is at
    least 0.1 % faster (``has_improvement``), and stops after a full sweep with no improvement: a local
    optimum. ``size_hints`` (e.g. ``{"x": 2048, "r0_": 2048}``) caps each block at the problem size.
    """
    tuner_cls = private("torch._inductor.runtime.coordinate_descent_tuner.CoordescTuner")
    start = dict(start)
    cfg = LaunchConfig(num_warps=start.pop("num_warps", 4), **start)
    tried: list[tuple[dict, float]] = []

    def func(c):
        value = float(cost(c.as_dict()))
        tried.append((c.as_dict(), value))
        return value

    meta = {"warp_size": 32, "max_threads_per_block": 32 * max_warps,
            "coordinate_descent_check_all_directions": check_all_directions}
    tuner = tuner_cls(name="course_kernel", size_hints=size_hints, inductor_meta=meta)
    with descent_logging() as lines:
        best = tuner.autotune(func, cfg)
    final_cost = tuner.lookup_in_cache(best)
    return Descent(cfg.as_dict(), best.as_dict(), tried[0][1], final_cost, tried, _moves(lines), list(lines))


def _parse_config(text: str) -> dict:
    out = {}
    for k, v in re.findall(r"(\w+): ([\w.]+)", text):
        out[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return out


def _moves(lines: list[str]) -> list[tuple[dict, float]]:
    """The ``Tune from A t -> B t'`` lines of a descent log, as (config B, time t') (ch23)."""
    out = []
    for line in lines:
        m = re.match(r"Tune from (.*) ([\d.e-]+) -> (.*) ([\d.e-]+)$", line.strip())
        if m:
            out.append((_parse_config(m.group(3)), float(m.group(4))))
    return out


@dataclass
class KernelDescent:
    """One kernel's coordinate descent, read from the tuner's log (ch23)."""

    kernel: str
    baseline: dict
    baseline_ms: float
    tries: int
    final: dict
    final_ms: float

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.final_ms if self.final_ms else float("nan")


def descent_log(lines: list[str]) -> list[KernelDescent]:
    """Parse the coordinate-descent log lines of a compile into one ``KernelDescent`` per kernel (ch23)."""
    out, cur = [], None
    for line in lines:
        s = line.strip()
        m = re.match(r"(\S+): Baseline Config (.*), baseline timing ([\d.e-]+)$", s)
        if m:
            cur = {"kernel": m.group(1), "baseline": _parse_config(m.group(2)), "ms": float(m.group(3)), "tries": 0}
            continue
        if s.startswith("Try config") and cur is not None:
            cur["tries"] += 1
            continue
        m = re.match(r"(\S+): Improve from (.*) ([\d.e-]+) -> (.*) ([\d.e-]+), ([\d.]+)x$", s)
        if m and cur is not None:
            out.append(KernelDescent(cur["kernel"], cur["baseline"], cur["ms"], cur["tries"],
                                     _parse_config(m.group(4)), float(m.group(5))))
            cur = None
    return out


# --------------------------------------------------------------------------- the arithmetic of tuning

def break_even_calls(extra_compile_s: float, saving_per_call_s: float) -> float:
    """Calls after which a longer compile has paid for itself: extra compile ÷ saving per call (ch23).

    ``inf`` when a call saves nothing (or loses time): the tuning never pays.
    """
    if saving_per_call_s <= 0:
        return float("inf")
    return extra_compile_s / saving_per_call_s


def check_break_even(fn) -> bool | None:
    """Run a reader's ``break_even(extra_s, saving_s)`` on cases with known answers (exercise 23.1) (ch23).

    None while ``fn`` is None; True if every case is right (within 0.1 %), else False.
    """
    if fn is None:
        return None
    cases = [(1.5, 0.0096e-3), (3.0, 1e-6), (0.2, 4e-5), (2.0, 0.0), (2.0, -1e-6)]
    for extra, saving in cases:
        want = break_even_calls(extra, saving)
        try:
            got = float(fn(extra, saving))
        except Exception:  # noqa: BLE001 - the reader's code may fail any way
            return False
        if math.isinf(want):
            if not (math.isinf(got) and got > 0):
                return False
        elif not math.isclose(got, want, rel_tol=1e-3):
            return False
    return True


def tflops(m: int, n: int, k: int, seconds: float) -> float:
    """Achieved TFLOP/s of an m×k @ k×n product that took ``seconds`` (2·m·n·k operations) (ch23)."""
    return 2 * m * n * k / seconds / 1e12


def tile_cost(config: dict) -> float:
    """A made-up, deterministic cost surface with the shape of a reduction kernel's (ms; for the CPU demo) (ch23).

    It rewards a tile of 4096 elements per program (``XBLOCK × R0_BLOCK``; larger spills registers,
    smaller leaves memory idle), long contiguous rows (``R0_BLOCK`` near 2048) and one warp per 128
    elements of the tile. A change of one block size alone breaks the 4096-element tile, so coordinate
    descent, which moves one field at a time, stops at the first 4096-element tile it finds: a local
    optimum that only a diagonal move (halve ``XBLOCK`` *and* double ``R0_BLOCK``) escapes.
    """
    x, r, w = config["XBLOCK"], config["R0_BLOCK"], config["num_warps"]
    tile = math.log2(x * r)
    want_warps = min(max(tile - 7, 0), 5)
    return (1.0 + 0.3 * abs(tile - 12) + 0.05 * abs(math.log2(r) - 11)
            + 0.02 * abs(math.log2(w) - want_warps))


# --------------------------------------------------------------------------- the Triton GEMM search space

@private_step("CUDAConfigHeuristic().mm_configs")
def gemm_config_list() -> list[tuple[int, int, int, int, int]]:
    """Inductor's default Triton GEMM configs for CUDA, ``(BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps)``,
    as listed in ``CUDAConfigHeuristic().mm_configs`` (``template_heuristics/triton.py``) (ch23)."""
    heuristic = private("torch._inductor.template_heuristics.triton.CUDAConfigHeuristic")()
    return [(c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps) for c in heuristic.mm_configs]


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


@private_step("CUDAConfigHeuristic().mm_configs")
def triton_mm_configs(m: int, n: int, k: int) -> list[tuple[int, int, int, int, int]]:
    """The Triton ``mm`` configs max-autotune offers for an m×k @ k×n product of floats, by Inductor's rule (ch23).

    The rule of ``_scale_mm_configs`` and ``_finalize_mm_configs``: each block is clipped to the next power
    of two of its dimension (and at least 16), ``num_warps`` to one warp per 16×16 piece of the output tile,
    and configs that became equal are offered once. The GPU run checks the count against the choices
    ``AlgorithmSelectorCache`` really received.
    """
    hm, hn, hk = (max(_next_power_of_2(v), 16) for v in (m, n, k))
    seen: dict = {}
    for bm, bn, bk, stages, warps in gemm_config_list():
        bm, bn, bk = max(min(bm, hm), 16), max(min(bn, hn), 16), max(min(bk, hk), 16)
        warps = min(warps, bm * bn // 256)
        seen.setdefault((bm, bn, bk, stages, warps), None)
    return list(seen)


@private_step("triton_heuristics.reduction (called with return_configs=True)")
def reduction_candidates(xnumel: int, rnumel: int, *, max_autotune: bool) -> list[dict]:
    """The launch configs ``triton_heuristics.reduction`` hands a looped INNER reduction's autotuner (ch23).

    ``xnumel`` rows of ``rnumel`` elements (sizes rounded up to powers of two, as Inductor's decorator does),
    for an H200's properties, with ``max_autotune`` on or off in the kernel's ``inductor_meta``;
    ``return_configs=True``, so nothing is compiled and this runs without a GPU or triton (the stand-in config
    class of ch21's ``helpers.inductor.triton_kernels``). Returns ``{"XBLOCK": …, "R0_BLOCK": …, "num_warps": …}``
    per config.
    """
    from .triton_kernels import H200, _config_class, _heuristics

    hint = private("torch._inductor.runtime.hints.ReductionHint").INNER
    size_hints = {"x": _next_power_of_2(xnumel), "r0_": _next_power_of_2(rnumel)}
    triton_meta = {"device": H200.properties(),
                   "signature": {"in_ptr0": "*fp16", "out_ptr0": "*fp16", "xnumel": "i32", "r0_numel": "i32"}}
    with _config_class():
        configs = _heuristics().reduction(size_hints, reduction_hint=hint, triton_meta=triton_meta,
                                          inductor_meta={"max_autotune": bool(max_autotune)}, return_configs=True)
    return [{**dict(c.kwargs), "num_warps": int(c.num_warps)} for c in configs]


def mode_options(mode: str) -> dict:
    """The ``torch._inductor.config`` settings a ``torch.compile`` mode switches on (``list_mode_options``) (ch23)."""
    return dict(private("torch._inductor.list_mode_options")(mode))


def template_shared_memory(block_m: int, block_n: int, block_k: int, num_stages: int, dtype_bytes: int = 2) -> int:
    """Bytes of shared memory a Triton GEMM tile needs: ``num_stages`` buffers of an A tile (BLOCK_M×BLOCK_K)
    and a B tile (BLOCK_K×BLOCK_N) (ch23). Triton reports the same number when a config is "out of resource"."""
    return num_stages * (block_m * block_k + block_k * block_n) * dtype_bytes


def too_big_for(limit_bytes: int, m: int, n: int, k: int, dtype_bytes: int = 2) -> list[tuple]:
    """The configs of ``triton_mm_configs(m, n, k)`` whose tiles need more shared memory than ``limit_bytes`` (ch23)."""
    return [c for c in triton_mm_configs(m, n, k) if template_shared_memory(*c[:4], dtype_bytes) > limit_bytes]


def inductor_benchmark(fn) -> float:
    """Time ``fn()`` the way autotuning times a choice: Inductor's ``benchmarker.benchmark_gpu`` (ms) (ch23).

    Each timed launch is bracketed by two CUDA events, after a write of L2-cache size that evicts the
    inputs; the result is the fastest launch. CUDA only.
    """
    return float(private("torch._inductor.runtime.benchmarking.benchmarker").benchmark_gpu(fn))


def launch_us(fn, *args, calls: int = 200) -> float:
    """CPU microseconds to issue one call of ``fn(*args)`` when nothing waits for the GPU (ch23)."""
    import torch

    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    seconds = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return seconds * 1e6


def coordesc_benchmarks() -> int:
    """Configs the coordinate-descent tuner has benchmarked in this process (``counters["inductor"]``) (ch23)."""
    return int(private("torch._dynamo.utils.counters")["inductor"]["coordesc_tuning_bench"])


# --------------------------------------------------------------------------- sentences worded from the run

def glued(name: str):
    """The value of figure ``name`` as this notebook has it: measured in this run, or replayed from the book's
    canonical run (``helpers.replay``); None if neither (ch23)."""
    from ..core.figures import RECORDED, REPLAYED

    if name in RECORDED:
        return RECORDED[name].value
    return REPLAYED.get(name)


def worded(name: str, make, figures: list[str],
           fallback: str = "(not measured here, and the book's GPU run is not published yet)") -> str:
    """Glue the phrase ``make(*values)`` of the figures named, measured or replayed, as ``name`` (ch23).

    On a CPU the phrase is worded from the book's GPU run, like the figures beside it; before that run is
    published the fallback says so.
    """
    from ..core.figures import RECORDED, words

    values = [glued(f) for f in figures]
    if any(v is None for v in values):
        text, sources = fallback, list(RECORDED)[:1]
    else:
        text, sources = make(*values), figures
    words(name, text, from_figures=sources)
    return text


def replay_all(names, placeholder: str = "(not in the book's published GPU run yet)") -> dict:
    """``helpers.replay`` each GPU figure; one the published run lacks is glued as ``placeholder`` words (ch23).

    The prose cites these names; a run without a GPU, before the book's GPU run has them, then still has every
    glue the text needs, and says why the value is missing. Returns ``{name: value or None}``.
    """
    from ..core.figures import RECORDED, words
    from ..core.numbers import replay

    out = {}
    for name in names:
        out[name] = replay(name)
        if out[name] is None:
            words(name, placeholder, from_figures=list(RECORDED)[:1])
    return out


def winner_phrase(name: str) -> str:
    """'a Triton template, triton_mm_17' or 'the ATen call, mm', from a choice's name (ch23)."""
    return f"{'a Triton template' if str(name).startswith('triton_') else 'the ATen call'}, {name}"


def speed_word(ratio: float) -> str:
    """'faster' / 'slower' / 'about as fast' for a speed ratio (>1 is faster), 3 % either way counting as a tie (ch23)."""
    return "faster" if ratio > 1.03 else "slower" if ratio < 0.97 else "about as fast"
