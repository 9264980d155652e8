"""The C++ backend's three gears: the vector ISA and its width, scalar vs SIMD vs OpenMP loops, the parallel
threshold, per-thread reduction accumulators and the compile command (chapter 22).

Private names used (each through ``helpers.core.private``): ``torch._inductor.cpu_vec_isa.pick_vec_isa``
(and ``supported_vec_isa_list``, ``x86_isa_checker``, to run its per-ISA tests concurrently),
``torch._inductor.config`` (``cpp.simdlen``, ``cpp.threads``, ``cpp.min_chunk_size``, ``cpp.vec_isa_ok``,
``compile_threads``, ``force_disable_caches``, ``cpp_cache_precompile_headers``),
``torch._inductor.utils.parallel_num_threads``, ``torch._inductor.utils.get_code`` (code generation
without the C++ build), ``torch._inductor.cpp_builder.run_compile_cmd`` (wrapped to record the
compiler's command line), ``torch._dynamo.utils.counters`` (graphs compiled) and
``torch._C._dynamo.guards.GlobalStateGuard`` (what Dynamo's GLOBAL_STATE guard snapshots).
"""
from __future__ import annotations

import math
import os
import re
import shlex
import sys
import time
import types
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core import timing
from ..core.private import private
from ..dynamo.state import clear_compile_state, fresh_compile_cache


# --------------------------------------------------------------------------------------------- the ISA


@dataclass
class VecISA:
    """The SIMD instruction set Inductor writes C++ for on this CPU (ch22)."""

    name: str           # str(pick_vec_isa()): "avx2", "avx512", "avx512 avx512_vnni amx_tile", "asimd", ... or "none"
    kind: str           # the class torch picked: "VecAVX2", "VecAVX512", "VecAMX", "VecNEON", "VecSVE256", ...
    bit_width: int      # width of one vector register, in bits (0 when there is no vector ISA)
    lanes: int          # float32 values per vector: Inductor's tiling factor for float32 (1 without an ISA)
    macros: list[str] = field(default_factory=list)   # the -D CPU_CAPABILITY_* macros of the build
    arch_flags: list[str] = field(default_factory=list)  # the -m... flags the build adds for this ISA

    @property
    def family(self) -> str:
        """"AVX-512", "AVX2", "NEON", "SVE", ... : the register family, for sentences."""
        macro = " ".join(self.macros)
        for key, word in (("AVX512", "AVX-512"), ("AVX2", "AVX2"), ("SVE", "SVE"), ("NEON", "NEON"),
                          ("VSX", "VSX"), ("ZVECTOR", "z/Architecture vector")):
            if key in macro:
                return word
        return "no vector ISA" if not self.bit_width else self.name


_PROBED = False


def probe_vec_isas_at_once() -> None:
    """Run ``pick_vec_isa``'s per-ISA test builds concurrently, one thread per candidate, once per process.

    On x86 ``pick_vec_isa`` tests each candidate ISA in turn (``bool(isa)``: build a small program, then
    load it in a fresh Python process; torch 2.11 imports torch there, seconds per candidate on a machine
    with a CUDA build). Each result is cached per process, so testing the same candidates in parallel
    first gives the same answer sooner; ``pick_vec_isa`` then only reads the cache. Chapters 18-22 call
    this before their first CPU compile.
    """
    import platform
    from concurrent.futures import ThreadPoolExecutor

    global _PROBED
    if _PROBED or platform.machine() not in ("x86_64", "AMD64") or sys.platform != "linux":
        return
    _PROBED = True
    config = private("torch._inductor.config")
    if config.cpp.vec_isa_ok is not None or config.is_fbcode():
        return
    flags = set(private("torch._inductor.cpu_vec_isa.x86_isa_checker")())
    candidates = [isa for isa in private("torch._inductor.cpu_vec_isa.supported_vec_isa_list")
                  if all(f in flags for f in str(isa).split())]
    if len(candidates) > 1:
        with ThreadPoolExecutor(max_workers=len(candidates)) as pool:
            list(pool.map(bool, candidates))


def on_cpu(args) -> bool:
    """Whether a compile of these arguments writes C++: no argument is a tensor on another device."""
    return all(str(getattr(a, "device", "cpu")) == "cpu" for a in args)


def vec_isa() -> VecISA:
    """Name, bit width, float32 lanes, build macros and arch flags of the ISA ``pick_vec_isa`` chooses (ch22)."""
    import torch

    probe_vec_isas_at_once()
    isa = private("torch._inductor.cpu_vec_isa.pick_vec_isa")()
    if not isa:
        return VecISA("none", type(isa).__name__, 0, 1)
    return VecISA(str(isa), type(isa).__name__, int(isa.bit_width()), int(isa.nelements(torch.float)),
                  [m for m in isa.build_macro() if m], isa.build_arch_flags().split())


def min_chunk_size() -> int:
    """``torch._inductor.config.cpp.min_chunk_size``: the fewest elements per thread worth a parallel loop (ch22)."""
    return int(private("torch._inductor.config").cpp.min_chunk_size)


def cpp_threads_setting() -> int:
    """``torch._inductor.config.cpp.threads`` (-1: use ``torch.get_num_threads()`` at compile time) (ch22)."""
    return int(private("torch._inductor.config").cpp.threads)


def codegen_threads() -> int:
    """The thread count Inductor writes into a kernel now (``torch._inductor.utils.parallel_num_threads``) (ch22)."""
    return int(private("torch._inductor.utils.parallel_num_threads")())


@contextmanager
def threads(n: int):
    """Run the block with ``torch.set_num_threads(n)``, then restore the previous count (ch22)."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield int(n)
    finally:
        torch.set_num_threads(saved)


# ---------------------------------------------------------------------------------- the generated kernel


# Lines of the elementwise SIMD kernel that the chapter's prose discusses, each found by a marker that
# tests/inductor/test_cpp_backend.py checks is still in the generated code on every verified torch.
SIMD_MARKS = {
    "signature": 'extern "C"',
    "loop": "for(int64_t x0=",
    "guard": "C10_LIKELY(",
    "load": "at::vec::Vectorized<float>::loadu(in_ptr0",
    "relu": "at::vec::clamp_min(",
    "store": ".store(out_ptr0",
}
SCALAR_MARKS = {"ivdep": "#pragma GCC ivdep", "loop": "for(int64_t x0=", "load": "= in_ptr0[",
                "relu": "std::max(", "store": "out_ptr0["}
OMP_MARKS = {"parallel": "#pragma omp parallel", "tid": "int tid = omp_get_thread_num();",
             "for": "#pragma omp for", "loop": "for(int64_t x0="}
REDUCTION_MARKS = {"arrays": "tmp_acc0_vec_arr[", "parallel": "#pragma omp parallel", "local": "tmp_acc0_vec_local",
                   "for": "#pragma omp for", "keep": "tmp_acc0_vec_arr[tid] = ", "combine": "for (int tid = 0;",
                   "lanes": "vec_reduce_all", "out": "out_ptr0["}


@dataclass
class CppKernel:
    """One generated C++ kernel, and the loop decisions that can be read from it (ch22)."""

    source: str
    threads: int

    @property
    def vectorized(self) -> bool:
        """True when the loop body works on ``at::vec::Vectorized`` registers."""
        return "at::vec::Vectorized" in self.source

    @property
    def step(self) -> int | None:
        """The outer loop's increment: elements handled per iteration (the first ``x0`` loop)."""
        m = re.search(r"for\s*\(\s*int64_t\s+x0\s*=.*?;\s*x0\s*\+=\s*static_cast<int64_t>\((\d+)L?\)\)", self.source)
        return int(m.group(1)) if m else None

    @property
    def pragma(self) -> str | None:
        """The ``#pragma omp parallel ...`` line, or None for a single-threaded kernel."""
        m = re.search(r"^\s*(#pragma omp parallel[^\n]*)$", self.source, re.M)
        return m.group(1).strip() if m else None

    @property
    def parallel(self) -> bool:
        return self.pragma is not None

    @property
    def omp_threads(self) -> int | None:
        """T of ``num_threads(T)`` in the pragma (None: no pragma, or a pragma left to the OpenMP runtime)."""
        m = re.search(r"num_threads\((\d+)\)", self.pragma or "")
        return int(m.group(1)) if m else None

    @property
    def gear(self) -> str:
        """"scalar", "SIMD", or either with "+OpenMP"."""
        return ("SIMD" if self.vectorized else "scalar") + ("+OpenMP" if self.parallel else "")

    @property
    def tail_counts(self) -> list[int]:
        """Element counts passed to a count-limited ``loadu(ptr, count)`` (a tail shorter than a vector)."""
        return [int(c) for c in re.findall(r"::loadu\([^;]*?,\s*static_cast<int64_t>\((\d+)L\)\)", self.source)]

    def lines(self, *needles: str) -> list[str]:
        """The source lines that contain any of ``needles`` (stripped), in order."""
        return [ln.strip() for ln in self.source.splitlines() if any(n in ln for n in needles)]

    def line_of(self, needle: str) -> int | None:
        """1-based number of the first kernel line containing ``needle`` (None if absent)."""
        for i, ln in enumerate(self.source.splitlines(), 1):
            if needle in ln:
                return i
        return None

    def excerpt(self, marks: dict[str, str], context: int = 0) -> str:
        """The kernel trimmed to the first line of each mark (and ``context`` lines after it), numbered;
        a gap in the numbering is shown as ``...``."""
        src = self.source.splitlines()
        keep: set[int] = set()
        for needle in marks.values():
            at = self.line_of(needle)
            if at is not None:
                keep |= set(range(at, min(at + context, len(src)) + 1))
        out, last = [], 0
        for i in sorted(keep):
            if last and i > last + 1:
                out.append("     ...")
            out.append(f"{i:4d}  {src[i - 1].rstrip()}")
            last = i
        return "\n".join(out)

    def missing(self, marks: dict[str, str]) -> list[str]:
        """The names of ``marks`` whose marker is not in this kernel."""
        return [name for name, needle in marks.items() if self.line_of(needle) is None]


def _kernel_text(module_source: str) -> str:
    m = re.search(r"extern \"C\".*?^\}\s*$", module_source, re.S | re.M)
    return m.group(0) if m else ""


def cpp_kernel(fn, *args, threads: int | None = None, simdlen: int | None = None,
               min_chunk: int | None = None) -> CppKernel:
    """Generate (not build, not run) the C++ kernel of ``fn(*args)`` (ch22).

    ``threads``: the thread count Inductor generates for (``config.cpp.threads``; None leaves Inductor's
    default, ``torch.get_num_threads()`` now). ``simdlen=1`` forces scalar loops (``config.cpp.simdlen``);
    ``min_chunk`` sets ``config.cpp.min_chunk_size``. The on-disk caches are off for the call (a cached
    graph would skip code generation) and nothing is compiled by g++: code generation alone takes a
    fraction of a second, a build about a second or more.
    """
    import torch

    config = private("torch._inductor.config")
    get_code = private("torch._inductor.utils.get_code")
    patches: dict = {"force_disable_caches": True}
    if threads is not None:
        patches["cpp.threads"] = int(threads)
    if simdlen is not None:
        patches["cpp.simdlen"] = simdlen
    if min_chunk is not None:
        patches["cpp.min_chunk_size"] = int(min_chunk)
    clear_compile_state()
    try:
        with config.patch(patches), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "dynamo_pgo force disabled by force_disable_caches"
            n = codegen_threads()
            sources = get_code(torch.compile(fn), *args)
    finally:
        clear_compile_state()
    return CppKernel(_kernel_text("\n".join(sources)), n)


def elementwise(x, y):
    """The chapter's running example: relu(x + y) * 2."""
    import torch

    return torch.relu(x + y) * 2


def gear_of(n: int, threads: int | None = 1, simdlen: int | None = None, min_chunk: int | None = None) -> CppKernel:
    """The kernel of ``elementwise`` on two float32 vectors of ``n`` elements, generated for ``threads`` (ch22)."""
    import torch

    x, y = torch.randn(n), torch.randn(n)
    return cpp_kernel(elementwise, x, y, threads=threads, simdlen=simdlen, min_chunk=min_chunk)


def smallest_vectorized(limit: int) -> int | None:
    """The smallest n in 1..limit whose ``elementwise`` kernel is SIMD (one thread), or None (ch22)."""
    for n in range(1, int(limit) + 1):
        if gear_of(n).vectorized:
            return n
    return None


def is_parallel_threshold(n, threads: int, min_chunk: int | None = None) -> bool:
    """True when ``n`` elements go parallel with ``threads`` threads and ``n - 1`` do not (ch22)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        return False
    return gear_of(n, threads, min_chunk=min_chunk).parallel and not gear_of(n - 1, threads, min_chunk=min_chunk).parallel


def parallel_threshold(threads: int, lo: int = 1, hi: int = 1 << 24, min_chunk: int | None = None) -> int | None:
    """The smallest n in (lo, hi] at which ``elementwise`` gets an OpenMP region for ``threads`` threads,
    found by bisection on the generated code; None unless ``lo`` is single-threaded and ``hi`` parallel
    (the window must hold the threshold) (ch22)."""
    if gear_of(lo, threads, min_chunk=min_chunk).parallel or not gear_of(hi, threads, min_chunk=min_chunk).parallel:
        return None
    while hi - lo > 1:  # invariant: lo single-threaded, hi parallel
        mid = (lo + hi) // 2
        if gear_of(mid, threads, min_chunk=min_chunk).parallel:
            hi = mid
        else:
            lo = mid
    return hi


def predicted_gears(predict, cases) -> list | None:
    """``predict(n, threads)`` for each ``(n, threads)`` of ``cases``, as a list (None while ``predict`` is None)
    (exercise 22.1); a raised exception becomes a one-line message."""
    if predict is None:
        return None
    try:
        return [predict(n, t) for n, t in cases]
    except Exception as exc:  # the reader's code may fail in any way; the check says how
        return f"raised {type(exc).__name__}: {str(exc)[:80]}"


def generated_gears(cases) -> list[str]:
    """The gear Inductor generates for ``elementwise`` at each ``(n, threads)`` of ``cases`` (exercise 22.1)."""
    return [gear_of(n, t).gear for n, t in cases]


def chunk_check(chunk, n: int = 4096, threads: int = 4) -> tuple | None:
    """(parallel at ``chunk``, parallel at ``chunk + 1``) for ``elementwise`` at n elements, T threads, with
    ``config.cpp.min_chunk_size`` set to the reader's value (exercise 22.3)."""
    if chunk is None:
        return None
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        return f"not a positive integer: {chunk!r}"
    return (gear_of(n, threads, min_chunk=chunk).parallel, gear_of(n, threads, min_chunk=chunk + 1).parallel)


# ------------------------------------------------------------------------------------------ reductions


@dataclass
class Reduction:
    """The accumulators of a parallel reduction kernel (ch22)."""

    arrays: dict[str, int]      # per-thread accumulator array -> its length
    combine_loops: list[int]    # bound of each ``for (int tid = 0; tid < T; tid++)`` loop after the region
    vec_reduce_all: bool        # lanes folded with at::vec::vec_reduce_all
    omp_reduction_clause: bool  # an OpenMP reduction(...) clause (Inductor does not use one)
    cascade: bool               # partial sums kept by a CascadeSumHelper (pairwise summation of chunks)

    @property
    def slots(self) -> int:
        """Per-thread partial results in all: the sum of the arrays' lengths."""
        return sum(self.arrays.values())


def reduction_accumulators(kernel: CppKernel) -> Reduction:
    """Read the per-thread accumulator arrays and the combine loops out of a reduction kernel (ch22)."""
    src = kernel.source
    arrays = {m.group(1): int(m.group(2)) for m in re.finditer(r"\b(\w+_arr)\[(\d+)\];", src)}
    loops = [int(b) for b in re.findall(r"for \(int tid = 0; tid < (\d+); tid\+\+\)", src)]
    return Reduction(arrays, loops, "vec_reduce_all" in src, bool(re.search(r"#pragma omp[^\n]*reduction\(", src)),
                     "CascadeSumHelper" in src)


def sum_of_squares(x):
    """The chapter's reduction: (x * x).sum()."""
    return (x * x).sum()


def lane_steps(lanes: int) -> int:
    """Shuffle-and-combine steps that fold ``lanes`` lanes into one (a tree: log2 of the lanes) (ch22)."""
    return int(math.log2(lanes)) if lanes > 1 else 0


# ------------------------------------------------------------------------------------------ the build


@dataclass
class Command:
    """One compiler run: its command line and how long it took (wall seconds)."""

    line: str
    seconds: float

    @property
    def words(self) -> list[str]:
        try:
            return shlex.split(self.line)
        except ValueError:
            return self.line.split()

    @property
    def output(self) -> str:
        w = self.words
        return w[w.index("-o") + 1] if "-o" in w and w.index("-o") + 1 < len(w) else ""

    @property
    def source(self) -> str:
        return next((w for w in self.words if w.endswith((".cpp", ".hpp", ".h")) and not w.startswith("-")), "")


@dataclass
class Build:
    """One real C++ build: the commands Inductor ran and the files it left in the cache dir (ch22)."""

    commands: list[Command]
    cache_files: list[str]  # relative paths of .cpp / .so / .py files in the cache dir
    precompiled_headers: bool

    @property
    def kernel(self) -> Command | None:
        """The command that built the kernel's shared library (the last one writing a .so outside the
        precompiled-header folder)."""
        builds = [c for c in self.commands if c.output.endswith(".so") and "precompiled_headers" not in c.output]
        return builds[-1] if builds else None

    @property
    def command(self) -> str:
        return self.kernel.line if self.kernel else ""

    @property
    def seconds(self) -> float:
        return self.kernel.seconds if self.kernel else float("nan")

    @property
    def compiler(self) -> str:
        return Path(self.kernel.words[0]).name if self.kernel else ""

    def has_flag(self, flag: str) -> bool:
        return bool(self.kernel) and flag in self.kernel.words

    @property
    def header(self) -> str | None:
        """The header given with ``-include`` (the precompiled one), or None."""
        w = self.kernel.words if self.kernel else []
        return w[w.index("-include") + 1] if "-include" in w and w.index("-include") + 1 < len(w) else None

    @property
    def header_binary(self) -> Path | None:
        """The compiled header next to it (``.gch`` for g++, ``.pch`` for clang), if it exists."""
        if not self.header:
            return None
        for ext in (".gch", ".pch"):
            p = Path(self.header + ext)
            if p.exists():
                return p
        return None

    def short_command(self) -> str:
        """The kernel command with paths shortened and include, define and library-path noise left out."""
        if not self.kernel:
            return ""
        words = self.kernel.words
        out = [self.compiler]
        skip = False
        for i, w in enumerate(words[1:], 1):
            if skip:
                skip = False
                continue
            if w.endswith(".cpp"):
                out.append(".../" + Path(w).name[:8] + "…cpp")
            elif w == "-o" and i + 1 < len(words):
                out += ["-o", ".../" + Path(words[i + 1]).name[:8] + "…so"]
                skip = True
            elif w == "-include" and i + 1 < len(words):
                out += ["-include", ".../precompiled_headers/" + Path(words[i + 1]).name[:8] + "….h"]
                skip = True
            elif w == "-D" and i + 1 < len(words) and words[i + 1].startswith("CPU_CAPABILITY"):
                out += ["-D", words[i + 1]]
                skip = True
            elif w in ("-O3", "-shared", "-fPIC", "-fopenmp", "-lgomp", "-lomp", "-fno-tree-loop-vectorize") \
                    or w.startswith(("-march", "-mcpu", "-std=")) \
                    or re.fullmatch(r"-m(avx\w*|fma|f16c|amx[\w-]*|sve\w*|vsx|vx|zvector|msve-vector-bits=\d+)", w):
                out.append(w)
        return " ".join(out)


def build_and_capture(fn, *args, precompiled_headers: bool = True) -> tuple[object, Build]:
    """Compile and run ``fn(*args)`` in an empty cache, recording each compiler command and its time (ch22).

    Builds in this process (``compile_threads=1``) so that the wrapped ``cpp_builder.run_compile_cmd``
    sees the command; ``precompiled_headers=False`` sets ``config.cpp_cache_precompile_headers`` off.
    Returns the result and a Build.
    """
    import torch

    config = private("torch._inductor.config")
    original = private("torch._inductor.cpp_builder.run_compile_cmd")
    builder = sys.modules["torch._inductor.cpp_builder"]
    commands: list[Command] = []

    def recording(cmd_line, *rest, **kw):
        t0 = time.perf_counter()
        try:
            return original(cmd_line, *rest, **kw)
        finally:
            line = cmd_line if isinstance(cmd_line, str) else " ".join(cmd_line)
            commands.append(Command(line, time.perf_counter() - t0))

    with fresh_compile_cache(prefix="course_ch22_") as cache:
        builder.run_compile_cmd = recording
        try:
            with config.patch(compile_threads=1, cpp_cache_precompile_headers=precompiled_headers):
                result = torch.compile(fn)(*args)
        finally:
            builder.run_compile_cmd = original
        files = sorted(str(p.relative_to(cache)) for p in cache.rglob("*")
                       if p.is_file() and p.suffix in (".cpp", ".so", ".py"))
    return result, Build(commands, files, precompiled_headers)


# ---------------------------------------------------------------------------------------- the timings


def sin_plus(x, y):
    """A loop with real arithmetic in it: sin(x) + y (a libm call per element when scalar) (ch22)."""
    import torch

    return torch.sin(x) + y


class Gears(dict):
    """The compiled gears, name -> compiled function, with what each one was built as (ch22).

    ``kernels``: name -> the C++ kernel Inductor generated for that gear (read from the module it wrote);
    ``torch_threads``: name -> ``torch.get_num_threads()`` during its compile (Dynamo guards it).
    """

    def __init__(self):
        super().__init__()
        self.kernels: dict[str, CppKernel] = {}
        self.torch_threads: dict[str, int] = {}


class GearTimes(dict):
    """``time_gears``' result, name -> {n: Timing}, with ``compiles``: graphs Dynamo compiled while timing
    (0 when every call ran the gear that was built; a recompile would run another kernel) (ch22)."""

    compiles: int = 0


def _unique_graphs() -> int:
    return int(private("torch._dynamo.utils.counters")["stats"]["unique_graphs"])


def _gear_threads(name: str, omp_threads: int | None) -> int:
    """The torch thread count a gear is compiled and timed at: 1, or ``omp_threads`` for the OpenMP gear."""
    return int(omp_threads) if "OpenMP" in name and omp_threads else 1


def compiled_gears(fn=None, omp_threads: int | None = None, example_n: int = 1 << 18) -> Gears:
    """``fn(x, y)`` (default ``elementwise``) compiled with dynamic shapes, so one build serves every size,
    in each gear (ch22): "scalar" (``cpp.simdlen=1``, one thread), "SIMD" (one thread) and, when
    ``omp_threads`` is given, "SIMD+OpenMP" (``cpp.threads = omp_threads``, decided at ``example_n``
    elements, so the region is entered at every size).

    Each gear is compiled under ``threads(T)`` with the T it will be timed at (1, or ``omp_threads``):
    Dynamo guards ``torch.get_num_threads()`` (the ``num_threads`` field of the GLOBAL_STATE guard), so a
    gear compiled at another count would be recompiled at its first timed call, outside the config patch
    that made it scalar. The generated kernel of each gear is kept in ``Gears.kernels``.
    """
    import torch

    from .code import collect_code

    fn = fn or elementwise
    config = private("torch._inductor.config")
    x, y = torch.randn(example_n), torch.randn(example_n)  # two tensors: one passed twice is another graph
    settings = {"scalar": {"cpp.simdlen": 1, "cpp.threads": 1}, "SIMD": {"cpp.threads": 1}}
    if omp_threads:
        settings["SIMD+OpenMP"] = {"cpp.threads": int(omp_threads)}
    out = Gears()
    clear_compile_state()
    for name, patch in settings.items():
        # a copy of fn with its own code object: Dynamo keeps compiled code per code object, so compiling
        # fn itself a second time would hand back the first gear's build
        own = types.FunctionType(fn.__code__.replace(co_name=f"{fn.__name__}_{name.replace('+', '_')}"),
                                 fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        t = _gear_threads(name, omp_threads)
        with threads(t), config.patch(patch), collect_code() as code, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "dynamo_pgo force disabled by force_disable_caches"
            f = torch.compile(own, dynamic=True)
            f(x, y)  # compile now, under the patch and at the thread count it will be timed at
        out[name] = f
        out.kernels[name] = CppKernel(_kernel_text(code.source), t)
        out.torch_threads[name] = t
    return out


def time_gears(gears: dict, sizes, omp_threads: int = 1, repeats: int = 5) -> GearTimes:
    """Seconds per call of each compiled gear at each size: name -> {n: Timing} (ch22).

    Each gear is timed at the torch thread count it was compiled at (``Gears.torch_threads``; else 1, or
    ``omp_threads`` for the OpenMP gear), so Dynamo's thread-count guard holds and the timed kernel is the
    gear's own; ``GearTimes.compiles`` counts the graphs compiled meanwhile (0 expected). Timed with
    ``helpers.timing``: on one thread the calling thread's CPU time (a busy machine does not inflate it),
    with more threads wall time (the helper threads' work is not the calling thread's).
    """
    import torch

    return time_gears_on(gears, {n: (torch.randn(n), torch.randn(n)) for n in sizes}, omp_threads, repeats)


def time_gears_on(gears: dict, inputs: dict, omp_threads: int = 1, repeats: int = 5) -> GearTimes:
    """``time_gears`` on given inputs: ``inputs`` maps a label (a size, or a name such as "all positive")
    to the ``(x, y)`` each gear is called with; the result is name -> {label: Timing} (ch22)."""
    counts = getattr(gears, "torch_threads", {})
    out = GearTimes({name: {} for name in gears})
    before = _unique_graphs()
    for label, (x, y) in inputs.items():
        for name, f in gears.items():
            with threads(counts.get(name, _gear_threads(name, omp_threads))):
                out[name][label] = timing.wall(f, x, y, repeats=repeats, target=0.005, device="cpu")
    out.compiles = _unique_graphs() - before
    return out


@dataclass
class ThreadGuard:
    """What a change of torch's thread count between compile and call does to a compiled function (ch22)."""

    compile_threads: int
    call_threads: int
    graphs: int            # graphs Dynamo compiled for the function in all (2: the call recompiled)
    reason: str            # the recompile reason Dynamo logged ("" if none)
    kernels: list[CppKernel]  # the C++ kernel of each compile, in order
    guard_fields: list[str]   # the settings the GLOBAL_STATE guard snapshots (GlobalStateGuard)
    compiled: object = None   # the compiled function (its newest entry: the recompiled one)


def thread_count_recompile(compile_threads: int = 2, call_threads: int = 1, fn=None, n: int = 1 << 16) -> ThreadGuard:
    """Compile ``fn`` (default ``elementwise``) as a scalar gear (``cpp.simdlen=1``) at ``compile_threads``
    torch threads, then call it at ``call_threads``, outside the config patch (ch22).

    Dynamo's GLOBAL_STATE guard (``GuardBuilder.GLOBAL_STATE`` installs the C++ ``GlobalStateGuard``, whose
    snapshot holds ``num_threads``) fails on the call, and Dynamo recompiles with the config in force then:
    the second kernel is the default SIMD one. This is how the book's first GPU run timed a SIMD kernel in
    the "scalar" slot.
    """
    import json

    import torch

    from ..dynamo.guards import recompile_log
    from .code import collect_code

    fn = fn or elementwise
    config = private("torch._inductor.config")
    own = types.FunctionType(fn.__code__.replace(co_name=f"{fn.__name__}_threads_guard"),
                             fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    x, y = torch.randn(n), torch.randn(n)
    state = private("torch._C._dynamo.guards.GlobalStateGuard")().__getstate__()
    fields = sorted(json.loads(state)) if isinstance(state, str) else []
    clear_compile_state()
    before = _unique_graphs()
    with collect_code() as code, recompile_log() as log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = torch.compile(own, dynamic=True)  # one entry serves every size: only the thread count can fail
        with threads(compile_threads), config.patch({"cpp.simdlen": 1, "cpp.threads": 1}):
            f(x, y)
        with threads(call_threads):
            f(x, y)
        graphs = _unique_graphs() - before
    kernels = [CppKernel(_kernel_text(src), 1) for src in code.sources]
    return ThreadGuard(compile_threads, call_threads, graphs, log.first_reason() if log.messages else "", kernels, fields, f)


# ------------------------------------------------------------------- when the vector loop is not allowed


def _int16_affine(a):
    return a * 3 + 1


def _erfcx_twice(x):
    import torch

    return torch.special.erfcx(x) * 2


def _transposed_copy(x):
    return x.t().contiguous()


def legality_kernels(n: int = 1024) -> dict[str, CppKernel]:
    """The generated kernel (one thread, code generation only) of three loops the vectorizer treats
    specially (ch22): "int16" (``a * 3 + 1`` on int16: a dtype outside ``VECTORIZABLE_DTYPES``, so
    ``TilingSelect.select_tiling`` returns no tiling and the loop is scalar), "erfcx" (``erfcx(x) * 2``:
    an op ``CppVecOverrides`` has no vector form for, computed lane by lane inside the vector loop by
    ``CppVecOverrides._scalarize``) and "transpose" (``x.t().contiguous()`` of a 64 x 64 matrix: a 2-D
    tile kernel, ``CppTile2DKernel``, that transposes 16 x 16 or lanes x lanes blocks in registers).
    """
    import torch

    side = 64
    return {
        "int16": cpp_kernel(_int16_affine, torch.randint(0, 100, (n,), dtype=torch.int16), threads=1),
        "erfcx": cpp_kernel(_erfcx_twice, torch.randn(n), threads=1),
        "transpose": cpp_kernel(_transposed_copy, torch.randn(side, side), threads=1),
    }


def lane_loops(kernel: CppKernel) -> int:
    """Scalar per-lane loops inside a vector loop (``CppVecOverrides._scalarize``: ``tmpbuf_out[i] = ...``) (ch22)."""
    return len(re.findall(r"tmpbuf_out\[i\]\s*=", kernel.source))


def wrapper_source(cpp_wrapper: bool, n: int = 256) -> str:
    """The module Inductor generates for ``elementwise`` on two vectors of ``n`` elements, with the Python
    wrapper (``def call(args)``) or with ``config.cpp_wrapper`` (a C++ ``inductor_entry_impl`` that
    allocates the output and calls the kernel); code generation only, nothing is built (ch22)."""
    import torch

    config = private("torch._inductor.config")
    get_code = private("torch._inductor.utils.get_code")
    x, y = torch.randn(n), torch.randn(n)
    clear_compile_state()
    try:
        with config.patch({"cpp_wrapper": bool(cpp_wrapper), "force_disable_caches": True, "cpp.threads": 1}), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "\n".join(get_code(torch.compile(elementwise), x, y))
    finally:
        clear_compile_state()


def os_cpu_count() -> int:
    """``os.cpu_count()``: on torch 2.13 and later the parallel region drops ``num_threads(T)`` when T equals
    it and ``config.cpp.threads`` was not set (``WorkSharing.parallel``) (ch22)."""
    return os.cpu_count() or 1
