"""How busy the machine's CPUs were during a run: ``/proc/stat`` read once a second (Linux only).

A GPU run shares 16 cores among a dozen notebooks and their compilers; whether its shared part is
bounded by the CPUs or by one long chapter decides what makes it faster. ``helpers run`` keeps the
samples in the run folder (``cpu.tsv``) and their summary in ``report.json``.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

PROC_STAT = Path("/proc/stat")


def cpu_times(stat: Path = PROC_STAT) -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs together, or None where there is no ``/proc/stat``."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:9]]  # user nice system idle iowait irq softirq steal
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class CpuSampler:
    """A thread that reads the CPUs' busy share every ``interval`` seconds until ``stop``."""

    def __init__(self, interval: float = 1.0, stat: Path = PROC_STAT):
        self.interval, self.stat = interval, stat
        self.samples: list[tuple[float, float]] = []  # (seconds since start, busy share of all CPUs)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._t0 = time.perf_counter()

    def start(self) -> "CpuSampler":
        if cpu_times(self.stat) is not None:
            self._thread.start()
        return self

    def _loop(self) -> None:
        last = cpu_times(self.stat)
        while not self._stop.wait(self.interval):
            now = cpu_times(self.stat)
            if now is None or last is None:
                return
            busy, total = now[0] - last[0], now[1] - last[1]
            if total > 0:
                self.samples.append((round(time.perf_counter() - self._t0, 1), round(busy / total, 3)))
            last = now

    def stop(self) -> dict:
        """Stop sampling; the summary: CPUs, samples, mean busy share, seconds at ≥ 90 % busy."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        shares = [b for _, b in self.samples]
        return {"cpus": os.cpu_count(), "interval_s": self.interval, "samples": len(shares),
                "busy_mean": round(sum(shares) / len(shares), 3) if shares else None,
                "seconds_at_90pct": round(self.interval * sum(b >= 0.9 for b in shares), 1)}

    def write(self, path: Path) -> None:
        """The samples as a two-column table: seconds since sampling started (as the run's notebooks were
        handed out), busy share of all CPUs."""
        lines = ["t_s\tbusy"] + [f"{t}\t{b}" for t, b in self.samples]
        Path(path).write_text("\n".join(lines) + "\n")
