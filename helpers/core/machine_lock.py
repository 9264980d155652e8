"""One GPU, many notebooks: the run-wide lock that lets a verification run share the machine safely.

``helpers run`` on a GPU executes several notebooks at once. A chapter whose figures are wall-clock
timings (``course.alone`` in its front matter) must have the machine to itself while it measures; the
cells before its measurements (its setup, a long compile that times nothing) need not wait. So in such
a run every notebook holds one lock file (``flock``):

- a chapter that shares the machine holds it shared for as long as it runs (the runner takes it before
  the kernel starts and drops it when the notebook ends, background processes included);
- an ``alone`` chapter's kernel holds it shared from ``helpers.setup`` on, and at its first measured cell
  (the cell tagged ``alone-from-here``, or without that tag the first cell after the setup cell) trades
  it for an exclusive lock, which it keeps until its last code cell has run (``COURSE_ALONE_UNTIL``),
  so the next alone chapter need not wait while nbclient stops this kernel;
- a chapter that reads the others' records (``course.after``, the map) starts with the others: its
  kernel holds the lock shared through its setup, then lets it go and waits, at the cell after the setup
  cell, until the runner has written this run's records (``COURSE_RECORDS_READY``). Its kernel start
  and imports so overlap the other chapters, and its cells run after every other chapter has ended.

An exclusive lock waits until no other notebook holds the lock: the sharing chapters and the alone
chapters' unmeasured cells run first, side by side, then the alone chapters measure one at a time. The
lock is the one flock file the run names in the environment; IPython's ``pre_run_cell`` and ``post_run_cell``
events are the hooks.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from pathlib import Path

LOCK_ENV = "COURSE_RUN_LOCK"          # the lock file's path; unset: no lock (a run of one notebook at a time)
MODE_ENV = "COURSE_RUN_LOCK_MODE"     # "alone" for a course.alone chapter's kernel, "after" for the map's
FROM_ENV = "COURSE_ALONE_FROM"        # cell_key() of the cell tagged alone-from-here ("" for the cell after setup)
UNTIL_ENV = "COURSE_ALONE_UNTIL"      # "<cell_key>:<n>": release after the n-th run of that cell, the last code cell
LOG_ENV = "COURSE_RUN_LOCK_LOG"       # where the kernel writes how long it waited (machine alone, or records)
READY_ENV = "COURSE_RECORDS_READY"    # "after" mode: the file whose appearance lets the map go on past its setup
ALONE_TAG = "alone-from-here"


def cell_key(source: str) -> str:
    """A cell's identity as the kernel sees it: a hash of its source, stripped."""
    return hashlib.sha1(source.strip().encode()).hexdigest()[:16]


class RunLock:
    """The run's lock as one process holds it: shared, then perhaps exclusive, until ``release`` or exit."""

    def __init__(self, path, log=None):
        self.file = open(path, "a+")
        self.log = Path(log) if log else None
        self.held: str | None = None

    def share(self) -> float:
        """Hold the lock shared (waits while an alone chapter measures); returns the seconds waited."""
        return self._lock(fcntl.LOCK_SH, "shared")

    def take(self) -> float:
        """Hold the lock alone: drops a shared hold, then waits until nobody else holds it (seconds waited)."""
        waited = self._lock(fcntl.LOCK_EX, "exclusive")
        if self.log is not None:
            self.log.write_text(json.dumps({"waited_alone_s": round(waited, 2)}))
        return waited

    def _lock(self, how, name: str) -> float:
        t0 = time.perf_counter()
        fcntl.flock(self.file, how)  # from shared to exclusive: flock drops the shared lock first
        self.held = name
        return time.perf_counter() - t0

    def release(self) -> None:
        if self.held is not None:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.held = None


_INSTALLED: dict = {}


def install(shell, environ=os.environ) -> RunLock | None:
    """In an ``alone`` chapter's kernel of a shared run: hold the lock shared now and take it alone at the
    first measured cell; in an ``after`` chapter's: see ``install_after`` (once per shell). Anywhere else
    nothing happens (None)."""
    path = environ.get(LOCK_ENV)
    if shell is None or id(shell) in _INSTALLED:
        return _INSTALLED.get(id(shell)) if shell is not None else None
    if environ.get(MODE_ENV) == "after" and environ.get(READY_ENV):
        return install_after(shell, environ)
    if not path or environ.get(MODE_ENV) != "alone":
        return None
    start_at = environ.get(FROM_ENV, "")
    lock = RunLock(path, environ.get(LOG_ENV))
    lock.share()

    def before(info):
        if lock.held == "shared" and (not start_at or cell_key(info.raw_cell or "") == start_at):
            lock.take()

    until_key, _, until_n = environ.get(UNTIL_ENV, "").partition(":")
    seen = [0]

    def after(result):
        raw = getattr(getattr(result, "info", None), "raw_cell", None) or ""
        if until_key and cell_key(raw) == until_key:
            seen[0] += 1
            if seen[0] >= int(until_n or 1):
                lock.release()  # the notebook's last code cell has run: the next alone chapter may measure

    shell.events.register("pre_run_cell", before)
    shell.events.register("post_run_cell", after)
    _INSTALLED[id(shell)] = lock
    return lock


def install_after(shell, environ=os.environ, poll_s: float = 0.1) -> RunLock | None:
    """In the map's kernel: hold the run's lock shared through the setup (if the run has one), then at the
    next cell let it go and wait until the records file ``COURSE_RECORDS_READY`` exists.

    The runner writes that file once every other chapter has ended, so none of this notebook's cells after
    its setup runs beside another chapter. How long it waited goes to ``COURSE_RUN_LOCK_LOG``.
    """
    ready, log = Path(environ[READY_ENV]), environ.get(LOG_ENV)
    lock = RunLock(environ[LOCK_ENV]) if environ.get(LOCK_ENV) else None
    if lock is not None:
        lock.share()  # the setup must not run while an alone chapter measures (a kernel that started late)
    gate = {"open": False}

    def before(info):
        if gate["open"]:
            return
        gate["open"] = True
        if lock is not None:
            lock.release()
        t0 = time.perf_counter()
        if log:  # replaced by the wait's length below; says meanwhile that the setup is over
            Path(log).write_text(json.dumps({"waiting_since": time.time()}))
        while not ready.exists():
            time.sleep(poll_s)
        if log:
            Path(log).write_text(json.dumps({"waited_records_s": round(time.perf_counter() - t0, 2)}))

    shell.events.register("pre_run_cell", before)
    _INSTALLED[id(shell)] = lock
    return lock


def alone_from(cells: list[dict]) -> str:
    """The cell_key() of a notebook's code cell tagged ``alone-from-here``, or "" when none is."""
    for c in cells:
        if c.get("cell_type") == "code" and ALONE_TAG in c.get("metadata", {}).get("tags", []):
            return cell_key(_source(c))
    return ""


def alone_until(cells: list[dict]) -> str:
    """``"<cell_key>:<n>"`` of a notebook's last non-empty code cell (its n-th copy by source), or ""."""
    keys = [cell_key(_source(c)) for c in cells if c.get("cell_type") == "code" and _source(c).strip()]
    return f"{keys[-1]}:{keys.count(keys[-1])}" if keys else ""


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
