"""Unit tests of helpers/core/timing.py."""
import time

import torch

from helpers import timing


def test_one_thread_cpu_timing_ignores_time_not_spent_working():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        clock, what = timing.cpu_clock()
        assert clock is time.thread_time and "one thread" in what
        t = timing.wall(time.sleep, 0.002, repeats=3, warmup=1, target=0.01)
        assert t.median < 0.0005, "sleeping (like being preempted) must not count as the call's time"
        assert t.what == what
        torch.set_num_threads(2)
        assert timing.cpu_clock()[0] is time.perf_counter
    finally:
        torch.set_num_threads(before)


def test_interleaved_times_every_contender_each_round():
    calls = []
    out = timing.interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                             rounds=2, repeats=2, warmup=0, target=1e-4)
    assert set(out) == {"a", "b"} and out["a"].samples == 2
    assert calls.count("a") > 0 and calls.count("b") > 0


def test_kernel_table_counts_launches_and_time_per_call_slowest_first():
    from helpers.core.timing import kernel_table

    events = [("gemm", 29.0), ("relu", 1.0), ("gemm", 31.0), ("relu", 1.0), ("memset", 0.5)]
    table = kernel_table(events, calls=2)
    assert list(table) == ["gemm", "relu", "memset"]
    assert table["gemm"] == (1.0, 30.0) and table["relu"] == (1.0, 1.0) and table["memset"] == (0.5, 0.25)


def test_wall_can_be_asked_for_on_a_cpu_too():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        napping = timing.wall(lambda: time.sleep(0.002), repeats=3, warmup=0, clock="wall")
        working = timing.wall(lambda: time.sleep(0.002), repeats=3, warmup=0)
    finally:
        torch.set_num_threads(threads)
    assert napping.what == "wall per call" and napping.median >= 0.0015  # a sleep is wall time
    assert working.what.startswith("CPU time") and working.median < 0.001  # and no CPU time
