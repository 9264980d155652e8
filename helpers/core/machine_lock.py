"""One GPU, many notebooks: the run-wide lock that lets a verification run share the machine safely.

``helpers run`` on a GPU executes several notebooks at once. A chapter whose figures are wall-clock
timings (``course.alone`` in its front matter) must have the machine to itself while it measures, so
in such a run every cell takes this lock: each cell of an ``alone`` chapter exclusively, except the
cells tagged ``unmeasured`` (they compute no timing), and every cell of the other chapters shared.
The run names the lock and the notebook's mode through the environment; ``helpers.setup`` installs the
cell hooks (IPython's ``pre_run_cell`` and ``post_run_cell`` events) when it is named.

The lock is two ``flock`` files, a gate and the lock proper. A shared holder passes the gate and keeps
only a shared lock; an exclusive holder keeps the gate while it waits for the shared holders to
finish their cells, so no new shared cell starts in front of it.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from pathlib import Path

LOCK_ENV = "COURSE_RUN_LOCK"              # the lock file's path; unset: no lock (a run of one notebook at a time)
MODE_ENV = "COURSE_RUN_LOCK_MODE"         # "alone" or "shared"
UNMEASURED_ENV = "COURSE_UNMEASURED_CELLS"  # comma-separated cell_key()s of an alone notebook's unmeasured cells
LOG_ENV = "COURSE_RUN_LOCK_LOG"           # where the notebook's waiting and holding times are written
UNMEASURED_TAG = "unmeasured"


def cell_key(source: str) -> str:
    """A cell's identity as the kernel sees it: a hash of its source, stripped."""
    return hashlib.sha1(source.strip().encode()).hexdigest()[:16]


class RunLock:
    """The run's lock, as one notebook holds it: shared or exclusive, one cell at a time."""

    def __init__(self, path, log=None):
        path = Path(path)
        self.gate, self.main = open(f"{path}.gate", "a+"), open(path, "a+")
        self.log = Path(log) if log else None
        self.held: str | None = None
        self.totals = {"cells_shared": 0, "cells_exclusive": 0, "waited_s": 0.0, "held_exclusive_s": 0.0}
        self._since = 0.0

    def acquire(self, exclusive: bool) -> None:
        self.release()
        t0 = time.perf_counter()
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        fcntl.flock(self.main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        self._since = time.perf_counter()
        self.totals["waited_s"] += self._since - t0
        self.held = "exclusive" if exclusive else "shared"
        self.totals["cells_" + self.held] += 1

    def release(self) -> None:
        if self.held is None:
            return
        fcntl.flock(self.main, fcntl.LOCK_UN)
        if self.held == "exclusive":
            fcntl.flock(self.gate, fcntl.LOCK_UN)
            self.totals["held_exclusive_s"] += time.perf_counter() - self._since
        self.held = None
        if self.log is not None:
            self.log.write_text(json.dumps({k: round(v, 2) for k, v in self.totals.items()}))


_INSTALLED: dict = {}


def install(shell, environ=os.environ) -> RunLock | None:
    """Make every cell ``shell`` runs from now on take the run's lock, if the run names one (once per shell)."""
    path = environ.get(LOCK_ENV)
    if not path or shell is None:
        return None
    if id(shell) in _INSTALLED:
        return _INSTALLED[id(shell)]
    alone = environ.get(MODE_ENV) == "alone"
    unmeasured = {k for k in environ.get(UNMEASURED_ENV, "").split(",") if k}
    lock = RunLock(path, environ.get(LOG_ENV))

    def before(info):
        lock.acquire(exclusive=alone and cell_key(info.raw_cell or "") not in unmeasured)

    def after(result):
        lock.release()

    shell.events.register("pre_run_cell", before)
    shell.events.register("post_run_cell", after)
    _INSTALLED[id(shell)] = lock
    return lock


class BackgroundHold:
    """A shared hold on the run's lock for a process that a cell starts and a later cell collects.

    Taken inside a cell of a notebook that shares the machine (whose cell already holds the lock shared,
    so no alone cell can be running): a second shared lock on the lock file, past the gate, which keeps
    alone cells from starting until ``release`` (or the notebook's end) even between this notebook's cells.
    """

    def __init__(self, path):
        self.file = open(path, "a+")
        fcntl.flock(self.file, fcntl.LOCK_SH)

    def release(self) -> None:
        if self.file is not None:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.file.close()
            self.file = None


def hold_for_background() -> BackgroundHold | None:
    """Keep alone cells out while a background process runs (see BackgroundHold); None outside a shared cell."""
    held = [lock for lock in _INSTALLED.values() if lock.held == "shared"]
    return BackgroundHold(held[0].main.name) if held else None


def unmeasured_cells(cells: list[dict]) -> list[str]:
    """The cell_key()s of a notebook's code cells tagged ``unmeasured``."""
    return [cell_key("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in cells if c.get("cell_type") == "code" and UNMEASURED_TAG in c.get("metadata", {}).get("tags", [])]
