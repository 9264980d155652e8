"""Unit tests of helpers/pipeline/run.py."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import ROOT

from helpers.pipeline.run import execute, write_report
from helpers.pipeline.verify import verify_notebook

FIG = 'helpers.figure("graphs", 1, "graphs", expect=helpers.exact(1))\nhelpers.figure("t", 0.5, "ms", expect=helpers.record())'


def run_one(path: Path, out: Path, timeout=120.0):
    return execute(path, out / path.name, device="cpu", scale="quick", timeout=timeout, cache=out / "cache")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers", *args], cwd=ROOT, capture_output=True, text=True)


TABLE = ('helpers.reference("series_graphs", 2, "graphs", source="the series", on="l40s")\n'
         'helpers.figure("graphs", 1, "graphs", expect=helpers.exact(1))\n'
         'helpers.figure("ratio", 3.5, "×", expect=helpers.band(cpu=(1, 8)))\n'
         'helpers.table([("graphs", "series_graphs", "graphs", "d"), ("ratio", None, "ratio", ".1f")])')


def test_figures_round_trip_through_an_executed_notebook(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_ok.ipynb", FIG, prose="{glue:text}`graphs` graph; {glue:text}`t:.2f` ms.")
    result = run_one(nb, tmp_path / "out")
    assert result.ok, result.problems
    assert {f["name"]: f["status"] for f in result.figures} == {"graphs": "pass", "t": "record"}
    assert result.env["device"] == "cpu" and result.env["chapter"] == "ch99"
    again = verify_notebook(tmp_path / "out" / "ch99_ok.ipynb")  # verify reads the outputs alone
    assert again.ok and again.counts() == {"pass": 1, "record": 1}


def test_timeout_is_reported(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_slow.ipynb", "import time\ntime.sleep(60)")
    result = run_one(nb, tmp_path / "out", timeout=15)
    assert result.status == "timeout" and "timed out after 15 s" in result.problems[0]


def test_missing_glue_is_reported(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_glue.ipynb", "x = 1", prose="It took {glue:text}`never_glued:.1f` ms.")
    result = run_one(nb, tmp_path / "out")
    assert any("never_glued" in p for p in result.problems)


def test_cli_bad_input_messages():
    proc = cli("run", "ch77")
    assert proc.returncode == 2 and "unknown chapter 'ch77'" in proc.stderr and "ch01" in proc.stderr
    proc = cli("run", "ch01", "--shard", "3/2")
    assert proc.returncode == 2 and "--shard" in proc.stderr
    if not torch.cuda.is_available():
        proc = cli("run", "ch01", "--device", "cuda")
        assert proc.returncode == 2 and "sees no CUDA GPU" in proc.stderr
    proc = cli("verify")
    assert proc.returncode == 2


def test_report_puts_series_book_and_this_run_side_by_side_and_explains_failures(notebook_factory, tmp_path):
    body = TABLE.replace("band(cpu=(1, 8))", "band(cpu=(5, 8))")
    nb_path = notebook_factory("ch99_report.ipynb", body)
    out = tmp_path / "out"
    result = run_one(nb_path, out)
    report = {"started": "t", "finished": "t", "scale": "quick", "shard": "1/1", "ok": result.ok,
              "environment": result.env, "notebooks": [result.as_dict()]}
    write_report(report, out)
    md = (out / "report.md").read_text()
    assert "| graphs (`graphs`) | 2 graphs (NVIDIA L40S) | — | 1 graph | ✓ == 1 |" in md
    assert "outside its band (cpu: 5..8): a hardware or timing figure" in md


def test_cli_refuses_empty_verify_and_empty_shards(tmp_path):
    proc = cli("verify", str(tmp_path))
    assert proc.returncode == 2 and "no executed chapter notebooks" in proc.stderr
    proc = cli("run", "ch01", "--shard", "2/2", "--device", "cpu")
    assert proc.returncode == 2 and "holds no chapter" in proc.stderr
    proc = cli("--help")
    assert proc.returncode == 0 and "``" not in proc.stdout and "(ch01)" not in proc.stdout


def _shard(folder, device, *chapters):
    """A shard's run folder holding committed (verified GPU) chapter notebooks."""
    import shutil

    from helpers.pipeline.run import chapters as on_disk

    folder.mkdir()
    entries = []
    for ch in chapters:
        shutil.copy(on_disk()[ch], folder / on_disk()[ch].name)
        entries.append({"path": str(folder / on_disk()[ch].name), "ok": True})
    (folder / "report.json").write_text(json.dumps({
        "started": "2026-12-01T00:00:00+00:00", "finished": "2026-12-01T00:01:00+00:00", "device": device,
        "scale": "auto", "shard": "x", "environment": {}, "notebooks": entries, "ok": True}))
    return folder


def test_merge_makes_one_reverified_run_of_the_shards(tmp_path):
    from helpers.pipeline.run import merge

    a, b = _shard(tmp_path / "a", "cuda", "ch05"), _shard(tmp_path / "b", "cuda", "ch01", "ch08")
    assert merge([str(a), str(b)], str(tmp_path / "all")) == 0
    report = json.loads((tmp_path / "all" / "report.json").read_text())
    assert report["ok"] and report["device"] == "cuda"
    assert [Path(n["path"]).name[:4] for n in report["notebooks"]] == ["ch01", "ch05", "ch08"]
    assert (tmp_path / "all" / "report.md").exists()


def test_merge_refuses_shards_of_different_devices_and_folders_without_a_report(tmp_path):
    import pytest

    from helpers.core.env import CourseError
    from helpers.pipeline.run import merge

    a, b = _shard(tmp_path / "a", "cuda", "ch05"), _shard(tmp_path / "b", "cpu", "ch01")
    with pytest.raises(CourseError, match="different devices"):
        merge([str(a), str(b)], str(tmp_path / "all"))
    with pytest.raises(CourseError, match="no report.json"):
        merge([str(tmp_path)], str(tmp_path / "all"))


def test_jobs_run_notebooks_at_once_and_the_report_keeps_course_order(notebook_factory, tmp_path):
    from helpers.pipeline.run import run

    slow = notebook_factory("ch97_slow.ipynb", "import time\ntime.sleep(4)\n" + FIG, prose="{glue:text}`graphs`")
    fast = notebook_factory("ch98_fast.ipynb", FIG, prose="{glue:text}`graphs`")
    assert run([str(slow), str(fast)], device="cpu", scale="quick", out=tmp_path / "out", jobs=2) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [Path(nb["path"]).name for nb in report["notebooks"]] == ["ch97_slow.ipynb", "ch98_fast.ipynb"]
    assert report["jobs"] == 2 and all(nb["ok"] for nb in report["notebooks"])


def test_on_a_gpu_chapters_marked_alone_are_scheduled_apart(notebook_factory):
    from helpers.pipeline.run import runs_alone, schedule

    timed = notebook_factory("ch97_timed.ipynb", FIG)
    nb = json.loads(timed.read_text())
    nb["metadata"]["course"] = {"alone": "wall-clock GPU timings"}
    timed.write_text(json.dumps(nb))
    plain = notebook_factory("ch98_plain.ipynb", FIG)
    assert runs_alone(timed) == "wall-clock GPU timings" and runs_alone(plain) is None
    assert schedule([timed, plain], "cuda", jobs=3) == ([plain], [timed], [])
    # one job at a time is already alone; a CPU run times thread CPU time, which neighbours do not inflate
    assert schedule([timed, plain], "cuda", jobs=1) == ([timed, plain], [], [])
    assert schedule([timed, plain], "cpu", jobs=2) == ([timed, plain], [], [])


def test_sharing_chapters_start_longest_first_by_their_records(notebook_factory, tmp_path, monkeypatch):
    from helpers.core import numbers
    from helpers.pipeline.run import recorded_seconds, schedule

    short, long_, unknown = (notebook_factory(name, FIG) for name in
                             ("ch95_short.ipynb", "ch96_long.ipynb", "ch97_new.ipynb"))
    committed = tmp_path / "canonical"
    committed.mkdir()
    (committed / "ch95.json").write_text('{"seconds": 20.5}')
    (committed / "ch96.json").write_text('{"seconds": 150}')
    monkeypatch.setattr(numbers, "CANONICAL_DIR", committed)
    assert recorded_seconds(long_) == 150.0 and recorded_seconds(unknown) is None
    # a chapter with no record yet may be long: it starts first; one job at a time keeps the course order
    assert schedule([short, long_, unknown], "cuda", jobs=4)[0] == [unknown, long_, short]
    assert schedule([short, long_, unknown], "cpu", jobs=2)[0] == [unknown, long_, short]
    assert schedule([short, long_, unknown], "cuda", jobs=1)[0] == [short, long_, unknown]


def test_on_a_gpu_the_map_runs_last_over_this_runs_records(notebook_factory, tmp_path, monkeypatch):
    from helpers.core import numbers
    from helpers.pipeline.run import runs_after, schedule, write_run_records
    from helpers.pipeline.verify import verify_notebook

    mapper = notebook_factory("ch96_map.ipynb", FIG)
    nb = json.loads(mapper.read_text())
    nb["metadata"]["course"] = {"after": "reads the records", "alone": "and times things"}
    mapper.write_text(json.dumps(nb))
    plain = notebook_factory("ch98_plain.ipynb", FIG)
    assert runs_after(mapper) == "reads the records" and runs_after(plain) is None
    assert schedule([mapper, plain], "cuda", jobs=3) == ([plain], [], [mapper])
    assert schedule([mapper, plain], "cpu", jobs=2) == ([mapper, plain], [], [])  # a CPU map shows the GPU book
    committed = tmp_path / "canonical"
    committed.mkdir()
    (committed / "ch01.json").write_text('{"chapter": "ch01"}')
    (committed / "ch98.json").write_text('{"chapter": "ch98", "old": true}')
    monkeypatch.setattr(numbers, "CANONICAL_DIR", committed)
    executed = run_one(plain, tmp_path / "run")
    assert executed.ok
    failed = verify_notebook(plain)  # never executed: not ok, so its committed record stays
    failed.path = str(tmp_path / "ch97_failed.ipynb")
    folder = write_run_records({plain: executed, "x": failed}, "2026-12-02", tmp_path / "run")
    assert json.loads((folder / "ch01.json").read_text()) == {"chapter": "ch01"}
    fresh = json.loads((folder / "ch98.json").read_text())
    assert "old" not in fresh and fresh["figures"]["graphs"]["value"] == 1 and fresh["verified"] == "2026-12-02"
    assert not (folder / "ch97.json").exists()
    assert json.loads((committed / "ch98.json").read_text())["old"]  # the committed records are untouched


def test_the_map_reads_the_runs_records_when_the_runner_names_them(tmp_path, monkeypatch):
    from helpers.runtime import recap

    (tmp_path / "ch05.json").write_text('{"chapter": "ch05", "figures": {}, "run": "this one"}')
    monkeypatch.setenv("COURSE_RECORDS_DIR", str(tmp_path))
    assert recap.canonical_record("ch05")["run"] == "this one"
    monkeypatch.delenv("COURSE_RECORDS_DIR")
    assert "run" not in recap.canonical_record("ch05")


def test_a_kernel_that_dies_is_reported_as_such_not_only_as_missing_glue(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_dies.ipynb", "import os\nos._exit(3)",
                          prose="It took {glue:text}`never_glued:.1f` ms.")
    result = run_one(nb, tmp_path / "out")
    assert result.status == "error" and "kernel died" in result.problems[0]
    assert any("never_glued" in p for p in result.problems)


def test_an_alone_notebook_takes_the_lock_at_its_tagged_cell_and_others_share_it(notebook_factory, tmp_path):
    nb_path = notebook_factory("ch97_timed.ipynb", FIG)
    nb = json.loads(nb_path.read_text())
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "measured", "outputs": [],
                        "metadata": {"tags": ["alone-from-here"]}, "source": "import time\nx = time.time()"})
    nb_path.write_text(json.dumps(nb))
    lock, out = tmp_path / "machine.lock", tmp_path / "out"
    alone = execute(nb_path, out / nb_path.name, device="cpu", scale="quick", timeout=120, cache=out / "cache",
                    lock=lock, alone=True)
    assert alone.ok, alone.problems
    assert alone.lock["waited_alone_s"] >= 0  # the kernel reached the tagged cell and took the machine
    shared = execute(nb_path, out / "shared" / nb_path.name, device="cpu", scale="quick", timeout=120,
                     cache=out / "cache", lock=lock, alone=False)
    assert shared.ok and "waited_shared_s" in shared.lock  # the runner held it shared for the notebook
    plain = run_one(nb_path, out / "plain")
    assert plain.ok and plain.lock is None  # no lock named: a run of one notebook at a time


def test_a_gpu_run_starts_the_alone_chapters_first_and_gives_every_notebook_the_lock(notebook_factory, tmp_path, monkeypatch):
    import time

    from helpers.core import env as course_env
    from helpers.pipeline import run as run_mod
    from helpers.pipeline.verify import NotebookResult

    timed, plain, other, mapper = (notebook_factory(n, FIG) for n in
                                   ("ch94_timed.ipynb", "ch95_plain.ipynb", "ch96_other.ipynb", "ch97_map.ipynb"))
    for path, mark in ((timed, {"alone": "wall-clock timings"}), (mapper, {"after": "reads the records"})):
        nb = json.loads(path.read_text())
        nb["metadata"]["course"] = mark
        path.write_text(json.dumps(nb))
    calls, records_written = [], []

    def fake_execute(nb, out, *, lock=None, alone=False, records=None, after=False, nice=0, **kw):
        if after:  # the map's kernel waits for the records, which the runner writes after all others ended
            ready, t0 = Path(records) / run_mod.READY_FILE, time.perf_counter()
            while not ready.exists() and time.perf_counter() - t0 < 30:
                time.sleep(0.05)
            assert ready.exists() and records_written
        calls.append((Path(nb).name, lock is not None, alone, records is not None, after, nice))
        return NotebookResult(str(out), env={"device": "cuda"}, seconds=0.1)

    def fake_records(results, finished, out_dir):
        records_written.append(sorted(Path(r.path).name for r in results.values()))
        return out_dir / "records"

    monkeypatch.setattr(run_mod, "resolve", lambda names: [plain, timed, other, mapper])
    monkeypatch.setattr(course_env, "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(run_mod, "execute", fake_execute)
    monkeypatch.setattr(run_mod, "write_run_records", fake_records)
    monkeypatch.setattr(run_mod, "write_report", lambda report, out_dir: None)
    monkeypatch.setattr(run_mod, "environment_summary", lambda device: {"device": device})
    monkeypatch.setattr(run_mod, "recorded_seconds", lambda nb: {"ch96": 90.0}.get(Path(nb).name[:4], 20.0))
    assert run_mod.run([], device="cuda", out=tmp_path / "run", jobs=1) == 0
    assert calls[-1] == ("ch97_map.ipynb", False, False, True, False, 0)  # the map last, over this run's records
    # one job at a time: the course order, no lock needed, nobody niced
    assert calls[:3] == [("ch95_plain.ipynb", False, False, False, False, 0),
                         ("ch94_timed.ipynb", False, False, False, False, 0),
                         ("ch96_other.ipynb", False, False, False, False, 0)]
    calls.clear()
    records_written.clear()
    assert run_mod.run([], device="cuda", out=tmp_path / "run2", jobs=2) == 0
    # the alone chapter takes the lock itself (it is handed to the pool first, but the pool's threads race);
    # the longest sharing chapter keeps its priority, the others are niced
    assert ("ch94_timed.ipynb", True, True, False, False, 0) in calls
    assert ("ch96_other.ipynb", True, False, False, False, 0) in calls
    assert ("ch95_plain.ipynb", True, False, False, False, run_mod.NICE) in calls
    # the map started with the others, holding the lock through its setup, and was told where the records go
    assert ("ch97_map.ipynb", True, False, True, True, 0) in calls
    assert records_written == [["ch94_timed.ipynb", "ch95_plain.ipynb", "ch96_other.ipynb"]]


def test_the_maps_kernel_is_told_where_the_records_will_be_and_the_lock(tmp_path):
    from helpers.core import machine_lock as ml
    from helpers.pipeline.run import READY_FILE, after_environment, papermill_command

    env = after_environment(tmp_path / "records", tmp_path / "machine.lock", tmp_path / "log.json")
    assert env[ml.MODE_ENV] == "after" and env[ml.READY_ENV] == str(tmp_path / "records" / READY_FILE)
    assert env[ml.LOCK_ENV] == str(tmp_path / "machine.lock")
    assert ml.LOCK_ENV not in after_environment(tmp_path / "records", None, tmp_path / "log.json")
    nb = tmp_path / "ch99.ipynb"
    plain = papermill_command(nb, tmp_path / "out.ipynb", device="cuda", scale="auto")
    assert plain[1:3] == ["-m", "papermill"] and plain[-3:] == ["-p", "device", "cuda"]
    assert papermill_command(nb, tmp_path / "out.ipynb", device="cuda", scale="auto", nice=5)[:3] == ["nice", "-n", "5"]


def test_a_real_map_kernel_waits_past_its_setup_for_the_records(notebook_factory, tmp_path):
    import threading
    import time

    stamp, records = tmp_path / "went_on_at", tmp_path / "records"
    nb = notebook_factory("ch97_map.ipynb", f"import pathlib, time\npathlib.Path({str(stamp)!r}).write_text(repr(time.time()))\n" + FIG)
    written = []

    lock_log = (tmp_path / "out" / nb.name).with_suffix(".lock.json")

    def write_records_later():  # once the kernel says it waits (a loaded machine may take long to start it)
        deadline = time.time() + 110
        while time.time() < deadline and "waiting_since" not in (lock_log.read_text() if lock_log.exists() else ""):
            time.sleep(0.1)
        time.sleep(0.5)
        records.mkdir()
        (records / "READY").write_text("")
        written.append(time.time())

    writer = threading.Thread(target=write_records_later)
    writer.start()
    result = execute(nb, tmp_path / "out" / nb.name, device="cpu", scale="quick", timeout=120,
                     cache=tmp_path / "cache", records=records, after=True)
    writer.join()
    assert result.ok, result.problems
    assert result.lock["waited_records_s"] > 0 and float(stamp.read_text()) >= written[0]


@pytest.mark.parametrize("words", ["KERNEL_DIED_AT_START", "KERNEL_SILENT_AT_START"])
def test_a_kernel_that_does_not_start_is_started_once_more(notebook_factory, tmp_path, monkeypatch, words):
    from helpers.pipeline import run as run_mod

    nb = notebook_factory("ch99_ok.ipynb", FIG)
    real_popen, launches = subprocess.Popen, []
    said = getattr(run_mod, words)

    def flaky(cmd, **kw):
        launches.append(cmd)
        if len(launches) == 1:  # the first launch: papermill's words for a kernel that died or stayed silent
            return real_popen([sys.executable, "-c", f"import sys; print({said!r}); sys.exit(1)"], **kw)
        return real_popen(cmd, **kw)

    monkeypatch.setattr(run_mod.subprocess, "Popen", flaky)
    result = run_one(nb, tmp_path / "out")
    assert len(launches) == 2 and result.ok, result.problems
    assert result.restart.startswith("after ") and said in result.restart  # kept for the report
    report = {"started": "now", "scale": "auto", "shard": "1/1", "ok": True, "environment": {},
              "notebooks": [result.as_dict()]}
    write_report(report, tmp_path / "out")
    assert "Its first kernel did not start (after " in (tmp_path / "out" / "report.md").read_text()


def test_an_alone_chapters_kernel_is_told_where_its_measuring_starts_and_ends(tmp_path):
    from helpers.core import machine_lock as ml
    from helpers.pipeline.run import lock_environment

    code = lambda s, tags=(): {"cell_type": "code", "source": s, "metadata": {"tags": list(tags)}, "outputs": []}
    cells = [code("setup()"), code("t = timing.wall(f)", [ml.ALONE_TAG]), code("print(t)"), code("")]
    nb = tmp_path / "ch99.ipynb"
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    env = lock_environment(nb, tmp_path / "machine.lock", tmp_path / "log.json")
    assert env[ml.MODE_ENV] == "alone" and env[ml.FROM_ENV] == ml.cell_key("t = timing.wall(f)")
    assert env[ml.UNTIL_ENV] == f"{ml.cell_key('print(t)')}:1"  # the last code cell that is not empty
