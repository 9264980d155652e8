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
{before}
start = time.time()
lock.{how}()
got = time.time()
time.sleep({hold})
lock.release()
print(start, got, time.time())
"""


def _holder(path, how: str, hold: float, before: str = "") -> subprocess.Popen:
    code = HOLD.format(root=str(ROOT), path=str(path), how=how, hold=hold, before=before)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def _times(proc) -> tuple[float, float, float]:
    out, _ = proc.communicate(timeout=60)
    start, got, done = map(float, out.split())
    return start, got, done


def test_sharing_notebooks_overlap_and_an_alone_one_waits_for_all_of_them(tmp_path):
    path = tmp_path / "machine.lock"
    a = _holder(path, "share", 1.5)
    time.sleep(0.4)
    alone = _holder(path, "take", 0.3)
    time.sleep(0.4)
    b = _holder(path, "share", 1.5)  # arrives while the alone one waits: it still starts at once
    ta, tb, tx = _times(a), _times(b), _times(alone)
    assert tb[1] - tb[0] < 0.5 and tb[1] < ta[2]  # b did not queue behind the waiting alone notebook
    assert tx[1] >= max(ta[2], tb[2]) - 0.05  # the alone one measured after both had finished


def test_alone_notebooks_measure_one_at_a_time_after_their_own_unmeasured_cells(tmp_path):
    path = tmp_path / "machine.lock"
    # each first holds the lock shared (its unmeasured cells), then trades it for the exclusive lock
    p1 = _holder(path, "take", 0.8, before="lock.share(); time.sleep(0.5)")
    p2 = _holder(path, "take", 0.8, before="lock.share(); time.sleep(0.5)")
    t1, t2 = _times(p1), _times(p2)
    first, second = sorted([t1, t2], key=lambda t: t[1])
    assert second[1] >= first[2] - 0.05  # no deadlock, and no overlap of the two alone parts


class FakeShell:
    def __init__(self):
        self.events = SimpleNamespace(hooks={}, register=lambda name, fn: self.events.hooks.setdefault(name, []).append(fn))


def test_an_alone_kernel_shares_until_its_first_measured_cell_then_keeps_the_machine(tmp_path):
    log = tmp_path / "lock.json"
    measured = "t = timing.wall(f)"
    env = {ml.LOCK_ENV: str(tmp_path / "machine.lock"), ml.MODE_ENV: "alone", ml.LOG_ENV: str(log),
           ml.FROM_ENV: ml.cell_key(measured + "\n")}
    ml._INSTALLED.clear()
    shell = FakeShell()
    lock = ml.install(shell, env)
    assert lock.held == "shared" and ml.install(shell, env) is lock  # a second setup() adds no hook
    (before,) = shell.events.hooks["pre_run_cell"]
    before(SimpleNamespace(raw_cell="ir = loop_ir(f, x)  # a compile that times nothing"))
    assert lock.held == "shared"
    before(SimpleNamespace(raw_cell=measured))
    assert lock.held == "exclusive" and json.loads(log.read_text())["waited_alone_s"] >= 0
    before(SimpleNamespace(raw_cell="x = 1"))
    assert lock.held == "exclusive"  # kept to the notebook's end
    lock.release()
    ml._INSTALLED.clear()
    shell = FakeShell()
    untagged = ml.install(shell, {**env, ml.FROM_ENV: ""})  # no tag: alone from the cell after setup
    shell.events.hooks["pre_run_cell"][0](SimpleNamespace(raw_cell='device = "auto"'))
    assert untagged.held == "exclusive"
    untagged.release()
    ml._INSTALLED.clear()
    assert ml.install(FakeShell(), {**env, ml.MODE_ENV: "shared"}) is None  # the runner holds it for them
    assert ml.install(FakeShell(), {}) is None and ml.install(None, env) is None


def test_the_maps_kernel_shares_through_its_setup_then_waits_for_the_records(tmp_path):
    import threading

    ready, log, path = tmp_path / "records" / "READY", tmp_path / "lock.json", tmp_path / "machine.lock"
    env = {ml.LOCK_ENV: str(path), ml.MODE_ENV: "after", ml.READY_ENV: str(ready), ml.LOG_ENV: str(log)}
    ml._INSTALLED.clear()
    shell = FakeShell()
    lock = ml.install(shell, env)
    assert lock.held == "shared" and ml.install(shell, env) is lock and "post_run_cell" not in shell.events.hooks
    (before,) = shell.events.hooks["pre_run_cell"]

    def write_records():
        time.sleep(0.5)
        other = ml.RunLock(path)
        other.take()  # the map's kernel let the machine go: an alone chapter can measure while it waits
        other.release()
        ready.parent.mkdir()
        ready.write_text("")

    writer = threading.Thread(target=write_records)
    writer.start()
    t0 = time.perf_counter()
    before(SimpleNamespace(raw_cell='device = "auto"'))
    writer.join()
    assert time.perf_counter() - t0 >= 0.5 and lock.held is None
    assert json.loads(log.read_text())["waited_records_s"] >= 0.5
    t0 = time.perf_counter()
    before(SimpleNamespace(raw_cell="x = 1"))  # the gate opens once
    assert time.perf_counter() - t0 < 0.1
    ml._INSTALLED.clear()
    unlocked = FakeShell()  # a run without a lock: only the wait (here the records are there already)
    assert ml.install(unlocked, {ml.MODE_ENV: "after", ml.READY_ENV: str(ready)}) is None
    unlocked.events.hooks["pre_run_cell"][0](SimpleNamespace(raw_cell='device = "auto"'))
    ml._INSTALLED.clear()


def test_the_first_measured_cell_is_found_by_its_tag():
    cells = [{"cell_type": "code", "source": ["ir = loop_ir(f, x)\n", "print(ir)"], "metadata": {}},
             {"cell_type": "code", "source": ["t = timing.wall(f)\n", "print(t)"], "metadata": {"tags": ["alone-from-here"]}},
             {"cell_type": "markdown", "source": "text", "metadata": {"tags": ["alone-from-here"]}}]
    assert ml.alone_from(cells) == ml.cell_key("t = timing.wall(f)\nprint(t)")
    assert ml.alone_from(cells[:1]) == ""


def test_an_alone_kernel_lets_the_machine_go_after_its_last_code_cell(tmp_path):
    last = "print('done')"
    env = {ml.LOCK_ENV: str(tmp_path / "machine.lock"), ml.MODE_ENV: "alone", ml.FROM_ENV: "",
           ml.UNTIL_ENV: f"{ml.cell_key(last)}:2"}
    ml._INSTALLED.clear()
    shell = FakeShell()
    lock = ml.install(shell, env)
    (before,), (after,) = shell.events.hooks["pre_run_cell"], shell.events.hooks["post_run_cell"]
    ran = lambda src: SimpleNamespace(info=SimpleNamespace(raw_cell=src))
    before(SimpleNamespace(raw_cell="x = 1"))
    after(ran("x = 1"))
    before(SimpleNamespace(raw_cell=last))
    after(ran(last + "\n"))  # its first copy: not yet the notebook's end
    assert lock.held == "exclusive"
    after(ran(last))
    assert lock.held is None
    before(SimpleNamespace(raw_cell="y = 2"))  # a cell run after the end (by hand) does not take it again
    assert lock.held is None
    ml._INSTALLED.clear()


def test_the_last_code_cell_is_the_last_non_empty_one_counted_by_copies():
    code = lambda s: {"cell_type": "code", "source": s, "metadata": {}}
    cells = [code("print(1)"), code(["x = 2\n", "print(x)"]), code("print(1)\n"), code("  \n"),
             {"cell_type": "markdown", "source": "text", "metadata": {}}]
    assert ml.alone_until(cells) == f"{ml.cell_key('print(1)')}:2"
    second = ml.cell_key("x = 2\nprint(x)")
    assert ml.alone_until(cells[1:2]) == f"{second}:1"
    assert ml.alone_until([]) == ""


def test_a_real_alone_kernel_frees_the_lock_before_it_exits(tmp_path, monkeypatch):
    """In a kernel that is slow to exit (an atexit sleep), the next alone chapter gets the machine as soon
    as the last code cell has run, not when nbclient has stopped the kernel."""
    import threading

    import nbformat
    import papermill

    path, stamps = tmp_path / "machine.lock", tmp_path / "stamps"
    stamps.mkdir()
    cells = [
        f"import sys, time, atexit\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from helpers.core import machine_lock\nmachine_lock.install(get_ipython())\n"
        "atexit.register(time.sleep, 4)",
        f"open({str(stamps / 'took')!r}, 'w').write(str(time.time()))",
        f"time.sleep(0.3)\nopen({str(stamps / 'last')!r}, 'w').write(str(time.time()))",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.cells[1].metadata["tags"] = [ml.ALONE_TAG]
    src = tmp_path / "alone.ipynb"
    nbformat.write(nb, src)
    env = {ml.LOCK_ENV: str(path), ml.MODE_ENV: "alone", ml.FROM_ENV: ml.alone_from(nb.cells),
           ml.UNTIL_ENV: ml.alone_until(nb.cells)}
    got = {}

    def next_alone_chapter():
        while not (stamps / "took").exists():
            time.sleep(0.05)
        ml.RunLock(path).take()
        got["t"] = time.time()

    waiter = threading.Thread(target=next_alone_chapter, daemon=True)
    waiter.start()
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the kernel, a child process, inherits them
    papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"), kernel_name="python3",
                               progress_bar=False, start_timeout=120)
    returned = time.time()
    waiter.join(timeout=30)
    last = float((stamps / "last").read_text())
    assert "t" in got and got["t"] >= last - 0.05  # it waited for the alone chapter's cells ...
    assert got["t"] < returned - 2  # ... but not for its kernel to exit
