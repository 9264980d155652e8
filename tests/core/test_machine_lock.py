"""Unit tests of helpers/core/machine_lock.py: the run-wide lock of a GPU run that shares the machine."""
import json
import subprocess
import sys
import time
from types import SimpleNamespace

from conftest import ROOT

from helpers.core import machine_lock as ml

HOLD = """
import sys, time
sys.path.insert(0, {root!r})
from helpers.core.machine_lock import RunLock
lock = RunLock({path!r})
start = time.time()
lock.acquire(exclusive={exclusive})
got = time.time()
time.sleep({hold})
lock.release()
print(start, got, time.time())
"""


def _holder(path, exclusive: bool, hold: float) -> subprocess.Popen:
    code = HOLD.format(root=str(ROOT), path=str(path), exclusive=exclusive, hold=hold)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def _times(proc) -> tuple[float, float, float]:
    out, _ = proc.communicate(timeout=60)
    start, got, done = map(float, out.split())
    return start, got, done


def test_shared_cells_overlap_and_an_exclusive_cell_waits_for_them(tmp_path):
    path = tmp_path / "machine.lock"
    a, b = _holder(path, False, 1.5), _holder(path, False, 1.5)
    time.sleep(0.5)  # both shared holders are in
    c = _holder(path, True, 0.2)
    ta, tb, tc = _times(a), _times(b), _times(c)
    assert tb[1] < ta[2] and ta[1] < tb[2]  # the two shared holders overlapped
    assert tc[1] >= max(ta[2], tb[2]) - 0.05  # the exclusive one started after both had finished


def test_a_waiting_exclusive_cell_goes_before_later_shared_cells(tmp_path):
    path = tmp_path / "machine.lock"
    first = _holder(path, False, 1.5)
    time.sleep(0.4)
    writer = _holder(path, True, 1.0)
    time.sleep(0.4)
    late = _holder(path, False, 0.1)  # arrives while the writer waits: it must queue behind the writer
    t1, tw, tl = _times(first), _times(writer), _times(late)
    assert tw[1] >= t1[2] - 0.05 and tl[1] >= tw[2] - 0.05


class FakeShell:
    def __init__(self):
        self.events = SimpleNamespace(hooks={}, register=lambda name, fn: self.events.hooks.setdefault(name, []).append(fn))


def test_install_takes_the_lock_per_cell_by_the_notebook_mode(tmp_path):
    log = tmp_path / "lock.json"
    measured, quiet = "t = timing.wall(f)", "ir = loop_ir(f, x)  # compiles, measures nothing"
    env = {ml.LOCK_ENV: str(tmp_path / "machine.lock"), ml.MODE_ENV: "alone", ml.LOG_ENV: str(log),
           ml.UNMEASURED_ENV: ml.cell_key(quiet + "\n")}
    shell = FakeShell()
    lock = ml.install(shell, env)
    assert ml.install(shell, env) is lock  # a second setup() in the same kernel adds no hooks
    (before,), (after,) = shell.events.hooks["pre_run_cell"], shell.events.hooks["post_run_cell"]
    after(None)  # the setup cell ends without having taken the lock
    before(SimpleNamespace(raw_cell=measured))
    assert lock.held == "exclusive"
    after(None)
    before(SimpleNamespace(raw_cell=quiet))
    assert lock.held == "shared"
    after(None)
    assert lock.held is None
    logged = json.loads(log.read_text())
    assert logged["cells_exclusive"] == 1 and logged["cells_shared"] == 1 and logged["waited_s"] >= 0
    shared = ml.install(FakeShell(), {**env, ml.MODE_ENV: "shared"})
    shared.acquire(exclusive=False)
    assert shared.held == "shared"
    shared.release()
    assert ml.install(FakeShell(), {}) is None and ml.install(None, env) is None


def test_unmeasured_cells_are_found_by_their_tag():
    cells = [{"cell_type": "code", "source": ["ir = loop_ir(f, x)\n", "print(ir)"], "metadata": {"tags": ["unmeasured"]}},
             {"cell_type": "code", "source": "t = timing.wall(f)", "metadata": {}},
             {"cell_type": "markdown", "source": "text", "metadata": {"tags": ["unmeasured"]}}]
    assert ml.unmeasured_cells(cells) == [ml.cell_key("ir = loop_ir(f, x)\nprint(ir)")]


def test_a_background_hold_keeps_alone_cells_out_until_it_is_released(tmp_path):
    path = tmp_path / "machine.lock"
    shell = FakeShell()
    env = {ml.LOCK_ENV: str(path), ml.MODE_ENV: "shared"}
    ml._INSTALLED.clear()
    lock = ml.install(shell, env)
    assert ml.hold_for_background() is None  # outside a cell: nothing to extend
    shell.events.hooks["pre_run_cell"][0](SimpleNamespace(raw_cell="job = start()"))
    hold = ml.hold_for_background()
    shell.events.hooks["post_run_cell"][0](None)  # the cell ends; the background process goes on
    assert lock.held is None and hold is not None
    writer = _holder(path, True, 0.1)
    time.sleep(1.0)
    hold.release()
    released = time.time()
    _, got, _ = _times(writer)
    assert got >= released - 0.05  # the alone cell started only after the hold was released
    hold.release()  # twice is harmless
    ml._INSTALLED.clear()
