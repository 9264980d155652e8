"""Median-of-many timing on CPU and GPU, GPU time alone, and first-call (compile) time (ch02)."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass


@dataclass
class Timing:
    """Seconds per call: median and spread of ``samples`` (each the mean over ``inner`` calls)."""

    median: float
    p10: float
    p90: float
    samples: int
    inner: int
    what: str  # "wall per call" or "GPU time per call"

    @property
    def ms(self) -> float:
        return self.median * 1e3

    @property
    def us(self) -> float:
        return self.median * 1e6

    def __str__(self) -> str:
        return f"{self.ms:.4g} ms ({self.what}, median of {self.samples}×{self.inner})"


def _is_cuda(args) -> bool:
    return any(getattr(a, "is_cuda", False) for a in args)


def _summarise(samples: list[float], inner: int, what: str) -> Timing:
    samples = sorted(samples)
    k = len(samples)
    return Timing(statistics.median(samples), samples[int(0.1 * (k - 1))], samples[int(0.9 * (k - 1))],
                  k, inner, what)


def _calibrate(run_once, target: float) -> int:
    """How many calls make one sample last about ``target`` seconds."""
    t0 = time.perf_counter()
    run_once()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(10_000, int(target / one)))


def cpu_clock():
    """The CPU timer: this thread's CPU time when torch runs on one thread, else wall time (ch02).

    ``helpers.configure`` runs torch on one thread on a CPU, so a call's work (eager kernels, Inductor's
    C++, Dynamo's Python) all happens on the calling thread, and the thread's CPU time is that work
    alone: time the operating system gave to other programs is not counted, as wall time would.
    """
    import torch

    if torch.get_num_threads() == 1:
        return time.thread_time, "CPU time per call (one thread)"
    return time.perf_counter, "wall per call"


def wall(fn, *args, repeats: int = 30, warmup: int = 3, target: float = 0.01, device: str | None = None,
         clock: str = "auto") -> Timing:
    """Time per call as a loop sees it, launch overheads included.

    On CUDA each sample is a back-to-back batch of calls between two events, so CPU-side
    overhead shows up whenever it is larger than the GPU work. On a CPU it is the calling thread's CPU
    time when torch runs on one thread (``cpu_clock``), otherwise wall time; ``clock="wall"`` asks for
    wall time on a CPU too (to set against another wall-clock time, such as a compile's).
    """
    cuda = device == "cuda" if device else _is_cuda(args)
    for _ in range(warmup):
        fn(*args)
    if cuda:
        import torch

        torch.cuda.synchronize()
        inner = _calibrate(lambda: (fn(*args), torch.cuda.synchronize()), target)
        samples = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn(*args)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3 / inner)
        return _summarise(samples, inner, "wall per call")
    timer, what = cpu_clock() if clock == "auto" else (time.perf_counter, "wall per call")
    inner = _calibrate(lambda: fn(*args), target)
    samples = []
    for _ in range(repeats):
        t0 = timer()
        for _ in range(inner):
            fn(*args)
        samples.append((timer() - t0) / inner)
    return _summarise(samples, inner, what)


def gpu_time(fn, *args, repeats: int = 20, warmup: int = 3, device: str | None = None) -> Timing:
    """GPU time alone per call: the sum of the kernels' device durations, read from the profiler.

    Gaps between kernels (launch overhead) are excluded; use ``wall`` for what a loop sees.
    On CPU this falls back to ``wall``.
    """
    if not (device == "cuda" if device else _is_cuda(args)):
        return wall(fn, *args, repeats=repeats, warmup=warmup, device="cpu")
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    per_call = []
    with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
        for _ in range(repeats):
            fn(*args)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    total_us = sum(e.device_time for e in kernels)
    if not kernels:  # profiler unavailable: fall back to events around single calls
        for _ in range(repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(*args); e.record(); e.synchronize()
            per_call.append(s.elapsed_time(e) / 1e3)
        return _summarise(per_call, 1, "GPU time per call (events)")
    mean = total_us / repeats / 1e6
    return Timing(mean, mean, mean, repeats, 1, "GPU time per call")


def kernel_times(fn, *args, repeats: int = 5) -> dict[str, tuple[float, float]]:
    """Per device kernel name: (launches per call, GPU µs per call), slowest first (CUDA only; profiler; ch25)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
        for _ in range(repeats):
            fn(*args)
        torch.cuda.synchronize()
    kernels = [(e.name, e.device_time) for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return kernel_table(kernels, repeats)


def kernel_table(kernels: list[tuple[str, float]], calls: int) -> dict[str, tuple[float, float]]:
    """(name, device µs) events of ``calls`` calls → name: (launches per call, µs per call), slowest first."""
    table: dict[str, list[float]] = {}
    for name, us in kernels:
        row = table.setdefault(name, [0.0, 0.0])
        row[0] += 1
        row[1] += us
    return {name: (n / calls, us / calls) for name, (n, us) in sorted(table.items(), key=lambda kv: -kv[1][1])}


def kernels_per_call(fn, *args, repeats: int = 5) -> float:
    """Average number of device kernels one call launches (CUDA only; profiler)."""
    return sum(n for n, _ in kernel_times(fn, *args, repeats=repeats).values())


def first_call(fn, *args) -> float:
    """Seconds for one call, synchronised: for a fresh ``torch.compile`` wrapper, compile + run."""
    import torch

    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    if cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(*args)
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def time_it(fn, *args, gpu_alone: bool = False, **kw) -> Timing:
    """The default timer of the course: wall per call, or GPU time alone when asked (and on GPU)."""
    return gpu_time(fn, *args, **kw) if gpu_alone else wall(fn, *args, **kw)


def interleaved(contenders: dict, *args, rounds: int = 3, gpu_alone: bool = False, **kw) -> dict:
    """Time several callables on the same inputs in alternating rounds; name → Timing (ch02).

    Each round times every contender once (``time_it``); a contender's result is the median of its
    round medians. Alternating keeps slow drifts of the machine (allocator state, clocks, other
    processes) from favouring whichever was timed first — on a small CPU they easily exceed 2×.
    """
    rows: dict = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            rows[name].append(time_it(fn, *args, gpu_alone=gpu_alone, **kw))
    out = {}
    for name, timings in rows.items():
        medians = sorted(t.median for t in timings)
        out[name] = Timing(statistics.median(medians), medians[0], medians[-1], len(medians),
                           timings[0].inner, timings[0].what + f", median of {rounds} alternating rounds")
    return out
