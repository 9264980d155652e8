"""Reading a generated Triton kernel and its launch: the kernel's lines by role, the wrapper's launches,
the configurations the heuristics propose and the one the autotuner keeps, the grid, and what a machine
without a GPU can compute of all that (chapter 21).

On a CUDA GPU, ``compile_triton(fn, *args)`` compiles ``fn`` with Inductor and records, for every kernel
the wrapper launches, the ``CachingAutotuner`` that launched it: its heuristic, ``size_hints``, the
candidate configurations, the one it kept (after benchmarking, when there were several), the timings of
that benchmark and the launch grid. ``kernel_times`` reads the grid and each kernel's GPU time back from
a profiler trace. On any machine, ``KernelSource`` finds the lines of a kernel's source by role
(``tl.program_id``, the mask, the loads and stores, the reduction loop), and the heuristics themselves
(``pointwise_candidates``, ``grid``, ``split_factor``, ``persistent_or_looped``) are torch's own functions
called with a GPU's recorded properties (``H200``, ``L40S``), so a CPU can work out what a GPU would be
given.

Private names used, each through ``helpers.core.private.private`` and present on torch 2.11, 2.13 and
2.15 (and 2.14.1): ``torch._inductor.runtime.triton_heuristics`` (``CachingAutotuner.run`` and
``.benchmark_all_configs``, wrapped to record; ``pointwise``; ``GridExpr``; ``Config``),
``torch._inductor.runtime.hints`` (``DeviceProperties``, ``ReductionHint``), ``torch._inductor.choices``
(``InductorChoices.reduction_split_factor`` and ``.should_use_persistent_reduction``, asked of torch's own
``torch._inductor.codegen.simd_kernel_features.SIMDKernelFeatures`` with a
``torch._inductor.sizevars.SizeVarAllocator``), ``torch._inductor.virtualized.V``, ``torch._inductor.config`` and ``torch._inductor.utils``
(``run_and_get_code``, ``get_code``). The functions that call torch's heuristics are ``private_step``s: on a
torch outside the verified ones, a heuristic whose private signature moved gives an unverified figure.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field
from unittest import mock

from ..core.exercises import equal
from ..core.private import private, private_step
from ..dynamo.state import clear_compile_state
from .code import InductorOutput


# ---------------------------------------------------------------------------------------------------
# GPUs the heuristics are asked about (published specifications; the GPU run checks the H200's)


@dataclass(frozen=True)
class DeviceSpec:
    """What Inductor's heuristics read about a GPU (its ``DeviceProperties``), from the vendor's data sheet (ch21)."""

    name: str
    sms: int                    # streaming multiprocessors
    cc: int                     # compute capability, major * 10 + minor
    regs_per_sm: int = 65536
    threads_per_sm: int = 2048
    threads_per_block: int = 1024
    warp_size: int = 32

    def properties(self):
        """This GPU as torch's ``DeviceProperties`` (what ``triton_meta["device"]`` carries) (ch21)."""
        props = private("torch._inductor.runtime.hints.DeviceProperties")
        values = dict(type="cuda", index=0, multi_processor_count=self.sms, cc=self.cc, major=self.cc // 10,
                      regs_per_multiprocessor=self.regs_per_sm, max_threads_per_multi_processor=self.threads_per_sm,
                      max_threads_per_block=self.threads_per_block, warp_size=self.warp_size)
        return props(**{k: v for k, v in values.items() if k in props._fields})


# NVIDIA H200 (Hopper, sm_90): 132 SMs, 2048 threads per SM. NVIDIA L40S (Ada, sm_89): 142 SMs (the
# series' triton_meta says so), 1536 threads per SM (CUDA programming guide, compute capability 8.9).
H200 = DeviceSpec("NVIDIA H200", sms=132, cc=90)
L40S = DeviceSpec("NVIDIA L40S", sms=142, cc=89, threads_per_sm=1536)


# ---------------------------------------------------------------------------------------------------
# Can this machine write Triton at all?


@dataclass
class TritonHere:
    """Whether Inductor wrote Triton source on this machine, and if not, where and why it stopped (ch21)."""

    works: bool
    how: str                 # what was compiled
    error: str = ""          # "ExceptionType: first line"
    raised_in: str = ""      # the innermost torch function on the way, "torch/...py: function"
    kernels: list[str] = field(default_factory=list)

    def line(self) -> str:
        if self.works:
            return f"{self.how}: wrote {len(self.kernels)} Triton kernel(s) {self.kernels}"
        return f"{self.how}: no Triton source; {self.error} (raised on the way through {self.raised_in})"


def _innermost_torch_frame(exc: BaseException) -> str:
    inner = exc
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__
    from ..aot.decompositions import torch_relative

    frames = [(torch_relative(f.filename), f.name) for f in traceback.extract_tb(inner.__traceback__)]
    frames = [(path, name) for path, name in frames if path.startswith("torch/")]  # not triton/, not the course
    if not frames:
        return "(outside torch)"
    path, name = frames[-1]
    return f"{path}: {name}"


def _root_error(exc: BaseException) -> str:
    inner = exc
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__
    first = (str(inner).strip().splitlines() or [""])[0][:160]
    return f"{type(inner).__name__}: {first}"


@contextlib.contextmanager
def _quiet_torch_logs():
    """Silence torch's own error and warning logs for the block (a failure we provoke on purpose)."""
    import logging

    loggers = [logging.getLogger(n) for n in ("torch._inductor", "torch._dynamo", "torch._inductor.runtime")]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, saved):
            lg.setLevel(level)


def try_triton_codegen(cpu_tensor: bool | None = None, run: bool = False) -> TritonHere:
    """Ask Inductor for Triton source of a tiny pointwise function on this machine (ch21).

    By default the input is a CUDA tensor where there is a GPU, and otherwise a CPU tensor compiled
    with ``config.cpu_backend = "triton"`` (Inductor's Triton-for-CPU backend). ``cpu_tensor=True``
    forces the second case on any machine. Without ``run`` only the code is generated
    (``torch._inductor.utils.get_code``: nothing is built or run); with ``run`` the compiled function is
    also called, so Triton must compile the kernel. The result says whether source came out and, if
    not, the exception at the bottom of the chain and the innermost torch function it passed.
    """
    import torch

    config = private("torch._inductor.config")
    cpu = (not torch.cuda.is_available()) if cpu_tensor is None else cpu_tensor
    how = ("a CPU tensor with config.cpu_backend='triton'" if cpu else "a CUDA tensor") + (", run" if run else "")
    fn = lambda x: torch.relu(x + 1) * 2  # noqa: E731
    patches = {"force_disable_caches": True, **({"cpu_backend": "triton"} if cpu else {})}
    clear_compile_state()
    try:
        x = torch.randn(8, device="cpu" if cpu else "cuda")
        with warnings.catch_warnings(), config.patch(patches), _quiet_torch_logs():
            warnings.simplefilter("ignore")
            if run:
                _, sources = private("torch._inductor.utils.run_and_get_code")(torch.compile(fn), x)
            else:
                sources = private("torch._inductor.utils.get_code")(torch.compile(fn), x)
        code = InductorOutput(list(sources))
        kernels = [k for k in code.kernels if k.startswith("triton_")]
        return TritonHere(bool(kernels), how, "" if kernels else "no kernel in the source", "", kernels)
    except Exception as exc:  # what we want to know is exactly how it fails
        return TritonHere(False, how, _root_error(exc), _innermost_torch_frame(exc))
    finally:
        clear_compile_state()


# ---------------------------------------------------------------------------------------------------
# A kernel's source, line by line


ROLES = {
    # role: (pattern, what it is)
    "decorator": (r"^@triton_heuristics\.\w+\(", "the heuristic that will pick a configuration at launch"),
    "size_hints": (r"^\s*size_hints=", "the sizes the heuristic is given, rounded up to powers of two"),
    "jit": (r"^@triton\.jit", "Triton compiles the function below"),
    "def": (r"^def triton_\w+\(", "the kernel's arguments; the block sizes are constexpr"),
    "xnumel": (r"^\s+xnumel = ", "the number of x elements, baked in as a constant"),
    "ynumel": (r"^\s+ynumel = ", "the number of y elements (a 2-D tiled kernel)"),
    "yoffset": (r"^\s+yoffset = tl\.program_id\(1\)", "the tile's row block: the grid's second axis"),
    "r0_numel": (r"^\s+r0_numel = ", "the length of each reduction"),
    "program_id": (r"tl\.program_id\(0\)", "which tile this program instance owns"),
    "xindex": (r"^\s+xindex = ", "the XBLOCK element indices of the tile"),
    "xmask": (r"^\s+xmask = ", "lanes past xnumel are switched off"),
    "r0_block_fixed": (r"^\s+R0_BLOCK: tl\.constexpr = \d+", "the reduction block, fixed to the whole row"),
    "r0_loop": (r"^\s+for r0_offset in (?:tl\.)?range\(", "the loop over the reduction, R0_BLOCK at a time"),
    "r0_index": (r"^\s+r0_index = ", "the reduction indices of one step"),
    "r0_mask": (r"^\s+r0_mask = ", "lanes past r0_numel are switched off"),
    "accumulator": (r"= tl\.full\(\[XBLOCK, R0_BLOCK\], 0", "the running partial sums, one per lane"),
    "where": (r"tl\.where\(", "a masked lane contributes nothing"),
    "load": (r"\btl\.load\(", "a masked read from global memory"),
    "store": (r"\btl\.store\(", "a masked write to global memory"),
    "sum": (r"\btl\.sum\(", "the sum across the block's reduction axis"),
    "relu": (r"triton_helpers\.maximum\(", "relu, written as max(0, x)"),
}


@dataclass
class KernelSource:
    """One generated Triton kernel's source, with its lines found by role (ch21)."""

    name: str
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @property
    def kind(self) -> str:
        """The name's prefix: ``poi`` (pointwise), ``per`` (persistent reduction), ``red`` (looped), ``tem``..."""
        m = re.match(r"triton_([a-z]+)_", self.name)
        return m.group(1) if m else ""

    def find(self, role_or_pattern: str) -> list[int]:
        """1-based numbers of the lines that play ``role`` (a key of ``ROLES``) or match a regex (ch21)."""
        pattern = ROLES[role_or_pattern][0] if role_or_pattern in ROLES else role_or_pattern
        return [i for i, line in enumerate(self.lines, 1) if re.search(pattern, line)]

    def line_of(self, role: str) -> int:
        """The first line playing ``role``; raises if the kernel has none (a unit test keeps them findable)."""
        found = self.find(role)
        if not found:
            raise LookupError(f"{self.name}: no line plays the role {role!r}")
        return found[0]

    def count(self, role: str) -> int:
        return len(self.find(role))

    def constant(self, name: str) -> int | None:
        """The integer a kernel assigns to ``name`` (``xnumel = 1000000``), or None if it is an argument."""
        m = re.search(rf"^\s+{re.escape(name)} = (\d+)\s*$", self.text, re.M)
        return int(m.group(1)) if m else None

    def block_constant(self, name: str) -> int | None:
        """A block size fixed in the kernel body (``R0_BLOCK: tl.constexpr = 1024``), or None."""
        m = re.search(rf"^\s+{re.escape(name)}\s*:\s*tl\.constexpr\s*=\s*(\d+)", self.text, re.M)
        return int(m.group(1)) if m else None

    def size_hints(self) -> str:
        m = re.search(r"size_hints=(\{[^}]*\})", self.text)
        return m.group(1) if m else ""

    def heuristic(self) -> str:
        m = re.search(r"^@triton_heuristics\.(\w+)\(", self.text, re.M)
        return m.group(1) if m else ""

    def body_start(self) -> int:
        """The line of ``def triton_...``: the kernel proper starts here."""
        return self.line_of("def")

    def excerpt(self, roles=(), lines=(), width: int = 110) -> str:
        """The kernel's lines that play ``roles`` (plus extra line numbers), numbered, gaps marked ``…`` (ch21)."""
        keep = set(lines)
        for role in roles:
            keep.update(self.find(role))
        out, last = [], 0
        for i in sorted(keep):
            if i > last + 1 and out:
                out.append("   …")
            text = self.lines[i - 1]
            out.append(f"{i:4d}| {text if len(text) <= width else text[:width - 1] + '…'}")
            last = i
        return "\n".join(out)

    def body(self, width: int = 110) -> str:
        """The kernel from ``def`` to its end, numbered (decorator and imports left out) (ch21)."""
        return self.excerpt(lines=range(self.body_start(), len(self.lines) + 1), width=width)


def triton_kernels(code: InductorOutput) -> list[KernelSource]:
    """The Triton kernels of a generated module, in definition order (ch21)."""
    return [KernelSource(n, code.kernel_source(n)) for n in code.kernels if n.startswith("triton_")]


@dataclass
class Launch:
    """One ``.run(`` line of the wrapper's ``call()``: the kernel and the integer arguments it passes (ch21)."""

    kernel: str
    line: str
    ints: list[int]


def launches_of(code: InductorOutput) -> list[Launch]:
    """The kernel launches in ``call()``, in order, with their integer arguments (the numels) (ch21)."""
    out = []
    for line in code.call_function().splitlines():
        m = re.match(r"\s*(triton_\w+)\.run\((.*)\)\s*$", line)
        if m:
            args = [a.strip() for a in m.group(2).split(",")]
            out.append(Launch(m.group(1), line.strip(), [int(a) for a in args if re.fullmatch(r"-?\d+", a)]))
    return out


# ---------------------------------------------------------------------------------------------------
# Compiling for the GPU and watching the launches


@dataclass
class Tuning:
    """What one kernel's ``CachingAutotuner`` was given and what it kept (ch21)."""

    kernel: str
    heuristic: str                       # POINTWISE, REDUCTION, PERSISTENT_REDUCTION, ...
    size_hints: dict
    candidates: list[str]                # configurations the heuristic proposed
    chosen: str                          # the one the launcher uses
    chosen_kwargs: dict                  # its block sizes, e.g. {"XBLOCK": 1024}
    num_warps: int
    num_stages: int
    grid: tuple                          # (x, y, z) programs, by the launcher's grid expression
    ints: list[int]                      # the integer arguments of the launch (numels)
    benchmark_ms: dict = field(default_factory=dict)   # config -> ms, when several were benchmarked
    registers: int | None = None
    device: str = ""                     # triton_meta["device"], the properties the heuristic saw


def config_text(cfg) -> str:
    """A configuration as ``XBLOCK: 1024, num_warps: 4, num_stages: 1`` (ch21)."""
    kw = ", ".join(f"{k}: {v}" for k, v in cfg.kwargs.items())
    return f"{kw}, num_warps: {cfg.num_warps}, num_stages: {cfg.num_stages}"


@contextlib.contextmanager
def watch_launches(sink: list, bench: dict):
    """Record each ``CachingAutotuner`` that launches during the block (once) and its benchmark timings (ch21)."""
    th = _heuristics()
    cls = th.CachingAutotuner
    orig_run, orig_bench = cls.run, cls.benchmark_all_configs
    seen: set = set()

    def run(self, *args, stream, **kwargs):
        first = id(self) not in seen
        if first:
            # before the first launch: one launcher per configuration that compiled (precompile has
            # already set self.configs to None), and the device properties the heuristic was given
            seen.add(id(self))
            candidates = [launcher.config for launcher in self.launchers] or list(self.configs or [])
            device = str(self.triton_meta.get("device"))
        result = orig_run(self, *args, stream=stream, **kwargs)
        if first:
            grid = _launch_grid(self, args, self.launchers[0].config)
            sink.append((self, tuple(int(g) for g in grid), [a for a in args if isinstance(a, int)],
                         candidates, device))
        return result

    def benchmark_all_configs(self, *args, **kwargs):
        timings = orig_bench(self, *args, **kwargs)
        bench[id(self)] = {config_text(k.config): float(v) for k, v in timings.items()}
        return timings

    cls.run, cls.benchmark_all_configs = run, benchmark_all_configs
    try:
        yield
    finally:
        cls.run, cls.benchmark_all_configs = orig_run, orig_bench


def _launch_grid(autotuner, args, cfg) -> tuple:
    """The grid the launcher computes for ``cfg``: its own ``_interpret_args_grid``, else the kernel's
    ``GridExpr`` evaluated on the non-constexpr arguments and the constants; () if neither works."""
    try:
        _, grid = autotuner._interpret_args_grid(args, cfg)
        return tuple(int(g) for g in grid)
    except Exception:  # noqa: BLE001 -- fall back to evaluating the grid expression directly
        pass
    try:
        sig = autotuner.triton_meta.get("signature", {})
        names = [k for k, v in sig.items() if v != "constexpr"]
        meta = {**dict(autotuner.triton_meta.get("constants", {})), **dict(zip(names, args))}
        with _config_class():
            expr = _heuristics().GridExpr.from_meta(autotuner.inductor_meta, cfg)
        return tuple(int(g) for g in expr.eval_slow(meta))
    except Exception:  # noqa: BLE001 -- a grid type this helper does not evaluate
        return ()


@dataclass
class TritonRun:
    """A function compiled for the GPU: its code, kernels, launches and each kernel's tuning (ch21)."""

    code: InductorOutput
    kernels: list[KernelSource]
    launches: list[Launch]
    tunings: list[Tuning]
    compiled: object
    first_call_s: float

    def kernel(self, prefix: str = "") -> KernelSource:
        """The first kernel whose name starts with ``triton_<prefix>``."""
        return next(k for k in self.kernels if k.name.startswith("triton_" + prefix))

    def tuning(self, kernel: str) -> Tuning:
        return next(t for t in self.tunings if t.kernel == kernel)


def compile_triton(fn, *args, dynamic: bool = False, **config_patches) -> TritonRun:
    """Compile ``fn(*args)`` (CUDA tensors) with Inductor, caches off, and record its launches (ch21).

    ``force_disable_caches`` keeps the autotuner from reusing a configuration an earlier compile of the
    same kernel chose, so the candidates and the benchmark are really this compile's.
    """
    import time

    import torch

    config = private("torch._inductor.config")
    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    sink: list = []
    bench: dict = {}
    clear_compile_state()
    compiled = torch.compile(fn, dynamic=dynamic)
    patches = {"force_disable_caches": True, **{k.replace("__", "."): v for k, v in config_patches.items()}}
    with warnings.catch_warnings(), config.patch(patches), watch_launches(sink, bench):
        warnings.filterwarnings("ignore", message=".*force disabled by torch.compiler.config.force_disable_caches")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        _, sources = run_and_get_code(compiled, *args)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
    code = InductorOutput(list(sources))
    tunings = []
    for at, grid, ints, candidates, device in sink:
        launcher = at.launchers[0]
        cfg = launcher.config
        tunings.append(Tuning(
            kernel=at.inductor_meta.get("kernel_name", getattr(at.fn, "__name__", "?")),
            heuristic=str(getattr(at.heuristic_type, "name", at.heuristic_type)),
            size_hints=dict(at.size_hints or {}),
            candidates=[config_text(c) for c in candidates],
            chosen=config_text(cfg), chosen_kwargs=dict(cfg.kwargs), num_warps=int(cfg.num_warps),
            num_stages=int(cfg.num_stages), grid=grid, ints=ints, benchmark_ms=bench.get(id(at), {}),
            registers=getattr(launcher, "n_regs", None), device=device))
    return TritonRun(code, triton_kernels(code), launches_of(code), tunings, compiled, first)


def kernel_time(times: dict, name: str) -> dict | None:
    """The entry of ``kernel_times`` for kernel ``name`` (exact name, else the one containing it), or None."""
    if name in times:
        return times[name]
    return next((d for n, d in times.items() if name in n), None)


def kernel_times(fn, *args, calls: int = 20) -> dict:
    """Per kernel name: launches per call, GPU µs per launch, grid and block, from a profiler trace (ch21).

    The grid and block are what the CUDA runtime recorded for the launch (the profiler's kernel events),
    so they check the launcher's own arithmetic.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:  # no "clears events" warning
        for _ in range(calls):
            fn(*args)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    out: dict = {}
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        d = out.setdefault(e["name"], {"launches": 0, "us": 0.0, "grid": tuple(a.get("grid") or ()),
                                       "block": tuple(a.get("block") or ())})
        d["launches"] += 1
        d["us"] += float(e.get("dur", 0.0))
    for d in out.values():
        d["us_per_launch"] = d["us"] / d["launches"]
        d["launches_per_call"] = d["launches"] / calls
    return out


# ---------------------------------------------------------------------------------------------------
# The heuristics, called on any machine


def next_power_of_2(n: int) -> int:
    """The ``size_hints`` rounding: the smallest power of two at least ``n`` (``torch._inductor.runtime.runtime_utils``)."""
    return private("torch._inductor.runtime.runtime_utils.next_power_of_2")(int(n))


def _heuristics():
    """The module ``torch._inductor.runtime.triton_heuristics`` (reached through one of its names)."""
    import sys

    return sys.modules[private("torch._inductor.runtime.triton_heuristics.CachingAutotuner").__module__]


class _Config:
    """A stand-in for ``triton.Config`` (block sizes, warps, stages) where triton is not installed."""

    def __init__(self, kwargs, num_warps=4, num_stages=2, **extra):
        self.kwargs, self.num_warps, self.num_stages = dict(kwargs), num_warps, num_stages
        for k, v in extra.items():
            setattr(self, k, v)


class _InductorConfig(_Config):
    """A stand-in for ``triton_heuristics.InductorConfig`` (a ``Config`` subclass) without triton."""

    def __init__(self, *args, dynamic_scale_rblock=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.dynamic_scale_rblock = dynamic_scale_rblock


@contextlib.contextmanager
def _config_class():
    th = _heuristics()
    if th.Config is object:  # triton is not installed: torch's triton_compat left a placeholder
        with contextlib.ExitStack() as stack:
            stack.enter_context(mock.patch.object(th, "Config", _Config))
            if hasattr(th, "InductorConfig"):
                stack.enter_context(mock.patch.object(th, "InductorConfig", _InductorConfig))
            yield
    else:
        yield


@dataclass(frozen=True)
class Candidate:
    """One configuration a heuristic proposes: block sizes, warps, stages (ch21)."""

    blocks: tuple          # (("XBLOCK", 1024),)
    num_warps: int
    num_stages: int

    @property
    def xblock(self) -> int:
        return dict(self.blocks)["XBLOCK"]

    def text(self) -> str:
        kw = ", ".join(f"{k}: {v}" for k, v in self.blocks)
        return f"{kw}, num_warps: {self.num_warps}, num_stages: {self.num_stages}"


@private_step("triton_heuristics.pointwise (called with return_configs=True)")
def pointwise_candidates(numel: int, device: DeviceSpec = H200) -> list[Candidate]:
    """The configurations ``triton_heuristics.pointwise`` proposes for a 1-D pointwise kernel of ``numel`` (ch21).

    Called as Inductor's generated decorator calls it (``size_hints={"x": next_power_of_2(numel)}``,
    the ``autotune_pointwise``/``max_autotune*`` settings of ``torch._inductor.config``), with
    ``return_configs=True`` so that nothing is compiled: this runs on a machine without a GPU or triton.
    """
    th = _heuristics()
    config = private("torch._inductor.config")
    meta = {"autotune_pointwise": config.triton.autotune_pointwise, "max_autotune": config.max_autotune,
            "max_autotune_pointwise": config.max_autotune_pointwise}
    with _config_class():
        configs = th.pointwise({"x": next_power_of_2(numel)}, triton_meta={"device": device.properties()},
                               inductor_meta=meta, return_configs=True)
    return [Candidate(tuple(c.kwargs.items()), int(c.num_warps), int(c.num_stages)) for c in configs]


@private_step("triton_heuristics.pointwise with a 2-D size_hints and tile_hint (called with return_configs=True)")
def tiled_pointwise_candidates(ynumel: int, xnumel: int, device: DeviceSpec = H200, square: bool = True) -> list[Candidate]:
    """The configurations ``triton_heuristics.pointwise`` proposes for a 2-D tiled pointwise kernel (ch21):
    ``size_hints={"y": ..., "x": ...}`` and the ``tile_hint`` Inductor writes (``select_tile_hint``: SQUARE
    for a kernel with one input, one output and the two numels as its only arguments, else DEFAULT);
    ``return_configs=True``, so this runs without a GPU."""
    th = _heuristics()
    config = private("torch._inductor.config")
    meta = {"autotune_pointwise": config.triton.autotune_pointwise, "max_autotune": config.max_autotune,
            "max_autotune_pointwise": config.max_autotune_pointwise}
    hint = th.TileHint.SQUARE if square else th.TileHint.DEFAULT
    with _config_class():
        configs = th.pointwise({"y": next_power_of_2(ynumel), "x": next_power_of_2(xnumel)}, tile_hint=hint,
                               triton_meta={"device": device.properties()}, inductor_meta=meta, return_configs=True)
    return [Candidate(tuple(c.kwargs.items()), int(c.num_warps), int(c.num_stages)) for c in configs]


@private_step("triton_heuristics.GridExpr.from_meta")
def grid(numel: int, xblock: int) -> int:
    """Programs in a 1-D launch: torch's ``Grid1D`` expression (``ceildiv(xnumel, XBLOCK)``) evaluated (ch21)."""
    th = _heuristics()
    with _config_class():  # from_meta asks isinstance(cfg, Config); without triton, Config is object
        expr = th.GridExpr.from_meta({"grid_type": "Grid1D"}, {"XBLOCK": int(xblock)})
    return int(expr.eval_slow({"xnumel": int(numel)})[0])


@dataclass(frozen=True)
class Tiling:
    """How ``numel`` elements fall into tiles of ``xblock`` lanes (ch21)."""

    numel: int
    xblock: int
    programs: int
    active_in_last: int     # lanes of the last program whose index is below numel
    masked: int             # lanes switched off by the mask, all in the last program

    @property
    def masked_share(self) -> float:
        return self.masked / (self.programs * self.xblock)


@private_step("triton_heuristics.GridExpr.from_meta")
def tiling(numel: int, xblock: int) -> Tiling:
    """Programs, active lanes of the last program and masked lanes for ``numel`` at ``XBLOCK`` (ch21)."""
    programs = grid(numel, xblock)
    return Tiling(int(numel), int(xblock), programs, int(numel) - (programs - 1) * int(xblock),
                  programs * int(xblock) - int(numel))


@contextlib.contextmanager
def _device_properties(device: DeviceSpec):
    hints = private("torch._inductor.runtime.hints")
    props = device.properties()
    with mock.patch.object(hints.DeviceProperties, "create", staticmethod(lambda _device: props)):
        yield


@private_step("InductorChoices.reduction_split_factor and DeviceProperties.create")
def split_factor(rnumel: int, outputs: int = 1, device: DeviceSpec = H200, inner: bool = True) -> int:
    """How many pieces Inductor splits a reduction into for ``device`` (``InductorChoices.reduction_split_factor``) (ch21).

    ``rnumel`` elements reduced into each of ``outputs`` results; 1 means no split. Torch's own function,
    given the GPU's recorded properties instead of asking the CUDA driver.
    """
    import torch

    choices = private("torch._inductor.choices.InductorChoices")()
    with _device_properties(device):
        return int(choices.reduction_split_factor(torch.device("cuda"), int(rnumel), int(outputs), bool(inner)))


def _features(outputs: int, rnumel: int, hint):
    """Torch's own ``SIMDKernelFeatures`` for a reduction kernel of no nodes, whose reduction hint is ``hint``.

    The real class, so every question a release adds to it (torch 2.15's ``strict_reduction_rblock``,
    2.14's ``strict_sum_rblock``) is answered by torch's code: with no nodes, no reduction is strict. Only
    ``get_reduction_hint`` (which reads the hint off the kernel's reduction nodes) is told the answer.
    """
    import sympy

    base = private("torch._inductor.codegen.simd_kernel_features.SIMDKernelFeatures")

    class Features(base):
        def get_reduction_hint(self, *args, **kwargs):
            return hint

    return Features([], sympy.Integer(int(outputs)), sympy.Integer(int(rnumel)))


class _Graph:
    """A stand-in for ``V.graph`` that carries only torch's own ``SizeVarAllocator`` (static sizes)."""

    def __init__(self):
        self.sizevars = private("torch._inductor.sizevars.SizeVarAllocator")()


@private_step("InductorChoices.should_use_persistent_reduction and its SIMDKernelFeatures")
def persistent_or_looped(rnumel: int, outputs: int = 1024, hint: str = "INNER") -> str:
    """``per`` or ``red``: torch's ``InductorChoices.should_use_persistent_reduction`` for a static reduction (ch21).

    ``hint`` is the ``ReductionHint`` lowering gave the reduction (``INNER`` for a sum along contiguous
    rows). Asked with the current ``torch._inductor.config`` and no cooperative reduction, of torch's own
    ``SIMDKernelFeatures`` for a kernel of ``outputs`` rows of ``rnumel``, sizes by ``SizeVarAllocator``.
    """
    choices = private("torch._inductor.choices.InductorChoices")
    hints = private("torch._inductor.runtime.hints.ReductionHint")
    v = private("torch._inductor.virtualized.V")
    with v.set_graph_handler(_Graph()):
        per = choices.should_use_persistent_reduction(_features(outputs, rnumel, getattr(hints, hint)), False)
    return "per" if per else "red"


@private_step("InductorChoices.should_use_persistent_reduction and its SIMDKernelFeatures")
def persistent_threshold(outputs: int = 1024, hint: str = "INNER", limit: int = 1 << 20) -> int:
    """The largest power-of-two reduction length that is still persistent (``per``) (ch21)."""
    r = 1
    while r * 2 <= limit and persistent_or_looped(r * 2, outputs, hint) == "per":
        r *= 2
    return r


def dynamic_numel(code: InductorOutput) -> bool | None:
    """Whether the element count is a runtime argument in the generated kernel rather than a constant (ch21).

    Triton: ``xnumel = <int>`` is missing from the kernel. C++: the loop bound is a symbol (``ks0``) rather
    than a literal. None when there is no kernel.
    """
    if not code.kernels:
        return None
    src = code.kernel_source()
    if code.kernel_language == "triton":
        return re.search(r"^\s+xnumel = \d+\s*$", src, re.M) is None
    bounds = re.findall(r"for\s*\(\s*int64_t\s+x0\s*=[^;]*;\s*x0\s*<\s*([^;]+);", src)
    return bool(bounds) and not all(re.fullmatch(r"static_cast<int64_t>\(\d+L?\)", b.strip()) for b in bounds)


def dynamic_check(compile_fn, fn, sizes=(1000, 3000), device: str = "cpu"):
    """Run a reader's ``compile_fn(fn)`` on two sizes: (same results, graphs compiled, numel is an argument) (ch21).

    None while ``compile_fn`` is None.
    """
    if compile_fn is None:
        return None
    import torch

    counters = private("torch._dynamo.utils.counters")
    run_and_get_code = private("torch._inductor.utils.run_and_get_code")
    clear_compile_state()
    compiled = compile_fn(fn)
    first = torch.randn(sizes[0], device=device)
    out, sources = run_and_get_code(compiled, first)   # it resets Dynamo first, then compiles once
    code = InductorOutput(list(sources))
    counters.clear()
    same = bool(torch.allclose(out, fn(first)))
    for n in sizes[1:]:                                # later sizes: served by that graph, or recompiled
        x = torch.randn(n, device=device)
        same = same and bool(torch.allclose(compiled(x), fn(x)))
    graphs = 1 + int(counters["stats"]["unique_graphs"])
    arg = dynamic_numel(code)
    clear_compile_state()
    return same, graphs, arg


@private_step("triton_heuristics.GridExpr.from_meta")
def grid_2d(ynumel: int, xnumel: int, yblock: int, xblock: int) -> tuple[int, int]:
    """Programs along x and along y of a 2-D launch: torch's ``Grid2D`` expression evaluated (ch21)."""
    th = _heuristics()
    with _config_class():
        expr = th.GridExpr.from_meta({"grid_type": "Grid2D"}, {"XBLOCK": int(xblock), "YBLOCK": int(yblock)})
    gx, gy, _ = expr.eval_slow({"xnumel": int(xnumel), "ynumel": int(ynumel)})
    return int(gx), int(gy)


TILES_2D_CASES = ((1000, 1024, 32, 64), (1000, 3000, 16, 256), (7, 5000, 8, 1024), (1, 1, 32, 32),
                  (4097, 300, 64, 64))


@private_step("triton_heuristics.GridExpr.from_meta")
def reader_tiles_2d_check(fn, cases=TILES_2D_CASES):
    """Compare a reader's ``fn(ynumel, xnumel, yblock, xblock) -> (programs, masked lanes)`` with torch's
    ``Grid2D`` (exercise 21.1): programs = the product of the grid's two axes, masked lanes = every lane of
    every program minus the ``ynumel * xnumel`` that compute. Returns the number of cases that agree, or
    None while ``fn`` is None."""
    if fn is None:
        return None
    right = 0
    for ny, nx, by, bx in cases:
        gx, gy = grid_2d(ny, nx, by, bx)     # outside the try: torch's side must not fail quietly
        want = (gx * gy, gx * gy * by * bx - ny * nx)
        try:
            if equal(tuple(fn(ny, nx, by, bx)), want):  # plain values, not the reader's __eq__
                right += 1
        except Exception:  # the reader's function may fail on some case; that case is simply wrong
            pass
    return right


PROGRAMS_SIZES = (6, 300, 3000, 33_000, 40_000, 70_000, 90_000, 5_000_000)


@private_step("triton_heuristics.pointwise (called with return_configs=True)")
def reader_programs_check(fn, sizes=PROGRAMS_SIZES, device: DeviceSpec = H200):
    """Compare a reader's ``fn(numel) -> programs`` with the grid of the first configuration torch's
    pointwise heuristic proposes for ``numel`` (exercise 21.2). Returns the number of sizes that agree,
    or None while ``fn`` is None."""
    if fn is None:
        return None
    right = 0
    for n in sizes:
        want = grid(n, pointwise_candidates(n, device)[0].xblock)  # outside the try: torch's side must not fail
        try:
            right += int(equal(fn(n), want))  # plain values, not the reader's __eq__
        except Exception:  # a wrong or failing answer for this size
            pass
    return right


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def series_programs(numel: int, xblock: int) -> int:
    """``ceil(numel / XBLOCK)`` in plain arithmetic, to set beside torch's ``Grid1D`` (ch21)."""
    return math.ceil(numel / xblock)


@dataclass
class SplitSteps:
    """The arithmetic of ``reduction_split_factor`` for one reduction into ``outputs`` results (ch21).

    Written out step by step for the middle case (between the "few elements" and "many elements" ends),
    so that a reader can follow it; ``splits`` is checked against torch's own function.
    """

    rnumel: int
    outputs: int
    threads: int                 # threads of one block in the split kernel: 8 warps
    min_per_device: int          # 32 elements for every thread the GPU can hold
    max_per_device: int          # 512 elements for every thread the GPU can hold
    branch: str                  # "few", "middle" or "many" (where rnumel * outputs falls)
    target_blocks: int | None    # half the GPU's threads, in blocks
    wanted_split_size: int | None  # elements per thread that would give target_blocks blocks
    closest_divisor: int | None  # the divisor of rnumel nearest that, preferred when within 30
    split_size: int
    splits: int


def split_arithmetic(rnumel: int, outputs: int = 1, device: DeviceSpec = H200) -> SplitSteps:
    """Follow ``InductorChoices.reduction_split_factor`` (inner reduction) step by step for ``device`` (ch21)."""
    import sympy

    warps, warp = 8, device.warp_size
    threads = warp * warps
    on_device = device.sms * device.threads_per_sm
    lo, hi = warp * on_device, 512 * on_device
    total = rnumel * outputs
    target = wanted = closest = None
    if total <= lo:
        branch, size = "few", warp
    elif total < hi:
        branch = "middle"
        target = on_device // (2 * threads)
        per_output = ceil_div(target, outputs)
        wanted = ceil_div(rnumel, threads * per_output)
        closest = min(sympy.divisors(rnumel), key=lambda d: abs(d - wanted))
        size = max(closest, warp) if abs(closest - wanted) < 30 else wanted
    else:
        branch = "many"
        closest = min(sympy.divisors(rnumel), key=lambda d: abs(d - 512))
        size = closest if abs(closest - 512) < 50 else 512
    return SplitSteps(rnumel, outputs, threads, lo, hi, branch, target, wanted,
                      None if closest is None else int(closest), int(size), ceil_div(rnumel, size * threads))


def replayed_text(name: str):
    """``helpers.replay(name)`` for a long text figure (a kernel's source): glued, with a one-line note (ch21)."""
    import contextlib as _cl
    import io

    from ..core.numbers import replay

    with _cl.redirect_stdout(io.StringIO()) as said:
        value = replay(name)
    first = said.getvalue().strip().splitlines()[:1]
    if value is None:
        print(first[0] if first else f"{name}: not published yet")
    else:
        print(f"{name}: {len(str(value).splitlines())} lines  [needs a GPU: the text of the book's canonical run]")
    return value


@dataclass
class SweepPoint:
    """One size of a GPU sweep: the kernel, its chosen configuration, grid and times (ch21)."""

    size: int
    kernel: str
    kind: str
    chosen: dict
    num_warps: int
    grid: int
    gpu_us: float            # GPU time of the kernel(s) per call, from the profiler
    wall_us: float           # wall per call of the compiled function, CUDA events around a loop
    bytes: int               # bytes the kernels must read and write at least

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def sweep_point(fn, x, nbytes: int, repeats: int = 5) -> SweepPoint:
    """Compile ``fn(x)`` for the GPU and measure one sweep point (ch21)."""
    from ..core.timing import wall

    r = compile_triton(fn, x)
    k = r.kernels[0]
    t = r.tuning(k.name)
    times = kernel_times(r.compiled, x)
    gpu_us = sum(d["us_per_launch"] * d["launches_per_call"] for d in times.values())
    seen = kernel_time(times, k.name) or {}
    programs = (seen.get("grid") or t.grid or (0,))[0]
    w = wall(r.compiled, x, repeats=repeats)
    return SweepPoint(int(x.shape[-1]) if x.dim() > 1 else int(x.numel()), k.name, k.kind, dict(t.chosen_kwargs),
                      t.num_warps, int(programs), gpu_us, w.us, int(nbytes))


def points_to_text(points: list[SweepPoint]) -> str:
    """A sweep as one JSON line: a text figure the CPU run can replay and plot (ch21)."""
    return json.dumps([p.as_dict() for p in points], separators=(",", ":"))


def points_from_text(text) -> list[SweepPoint]:
    if not text:
        return []
    return [SweepPoint(**d) for d in json.loads(text)]


def decorator_arguments(text: str) -> tuple[str, dict]:
    """The heuristic a kernel's decorator names and the arguments it passes, evaluated (ch21).

    ``@triton_heuristics.reduction(size_hints=..., reduction_hint=..., triton_meta=..., inductor_meta=...)``
    is Python; it is evaluated with the names it uses (``ReductionHint``, ``DeviceProperties``,
    ``__file__``), so the heuristic can be called again with the same inputs.
    """
    m = re.search(r"^@triton_heuristics\.(\w+)\((.*?)^\)\s*\n@triton\.jit", text, re.M | re.S)
    if not m:
        raise LookupError("no @triton_heuristics decorator in this kernel")
    hints = private("torch._inductor.runtime.hints")
    scope = {"ReductionHint": hints.ReductionHint, "DeviceProperties": hints.DeviceProperties,
             "TileHint": hints.TileHint, "AutotuneHint": hints.AutotuneHint, "__file__": "", "set": set}
    kwargs = eval(f"dict({m.group(2)})", scope)  # noqa: S307 -- torch's own generated source
    kwargs.pop("filename", None)
    return m.group(1), kwargs


@private_step("a kernel's triton_heuristics decorator, called again with return_configs=True")
def candidates_from_source(text: str, device: DeviceSpec = H200, cuda_available: bool | None = None) -> list[Candidate]:
    """Call a kernel's heuristic again, with its decorator's arguments and ``device``'s properties (ch21).

    ``return_configs=True``: the configurations the autotuner would be given, computed without a GPU.
    ``cuda_available``: what ``torch.cuda.is_available()`` answers during the call (None: the truth). The
    persistent-reduction heuristic of torch 2.11 and 2.13 branches on it, not on the device properties it
    is given (``_persistent_reduction_configs``, INNER reductions of 256 elements or more).
    """
    import copy
    from unittest import mock

    import torch

    name, kwargs = decorator_arguments(text)
    kwargs = copy.deepcopy(kwargs)
    kwargs["triton_meta"]["device"] = device.properties()
    th = _heuristics()
    answer = torch.cuda.is_available() if cuda_available is None else bool(cuda_available)
    with _config_class(), mock.patch.object(torch.cuda, "is_available", lambda: answer):
        configs = getattr(th, name)(**kwargs, return_configs=True)
    return [Candidate(tuple(c.kwargs.items()), int(c.num_warps), int(c.num_stages)) for c in configs]
