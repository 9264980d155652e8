"""The runner, verify and publish, on small notebooks: good runs and every kind of bad input."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import runner
from helpers.env import CourseError
from helpers.verify import verify_notebook

from conftest import ROOT, make_notebook

FIG = 'helpers.figure("graphs", 1, "graphs", expect=helpers.exact(1))\nhelpers.figure("t", 0.5, "ms", expect=helpers.record())'


def run_one(path: Path, out: Path, timeout=120.0):
    return runner.execute(path, out / path.name, device="cpu", scale="quick", timeout=timeout, cache=out / "cache")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers", *args], cwd=ROOT, capture_output=True, text=True)


def test_figures_round_trip_through_an_executed_notebook(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_ok.ipynb", FIG, prose="{glue:text}`graphs` graph; {glue:text}`t:.2f` ms.")
    result = run_one(nb, tmp_path / "out")
    assert result.ok, result.problems
    assert {f["name"]: f["status"] for f in result.figures} == {"graphs": "pass", "t": "record"}
    assert result.env["device"] == "cpu" and result.env["chapter"] == "ch99"
    again = verify_notebook(tmp_path / "out" / "ch99_ok.ipynb")  # verify reads the outputs alone
    assert again.ok and again.counts() == {"pass": 1, "record": 1}


def test_verify_catches_a_failing_expectation(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_fail.ipynb", 'helpers.figure("speedup", 0.5, "×", expect=helpers.band(cpu=(2, 8)))')
    result = run_one(nb, tmp_path / "out")
    assert not result.ok and result.status == "failed"
    assert "misses its expectation (cpu: 2..8)" in result.problems[0]


def test_verify_catches_a_notebook_that_raised(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_raise.ipynb", "raise RuntimeError('planted')")
    result = run_one(nb, tmp_path / "out")
    assert result.status == "error" and any("planted" in p for p in result.problems)


def test_timeout_is_reported(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_slow.ipynb", "import time\ntime.sleep(60)")
    result = run_one(nb, tmp_path / "out", timeout=15)
    assert result.status == "timeout" and "timed out after 15 s" in result.problems[0]


def test_missing_glue_is_reported(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_glue.ipynb", "x = 1", prose="It took {glue:text}`never_glued:.1f` ms.")
    result = run_one(nb, tmp_path / "out")
    assert any("never_glued" in p for p in result.problems)


def test_verify_rejects_corrupt_and_foreign_notebooks(tmp_path):
    corrupt = tmp_path / "corrupt.ipynb"
    corrupt.write_text("{ not json")
    r = verify_notebook(corrupt)
    assert not r.ok and "invalid JSON" in r.problems[0]
    foreign = make_notebook(tmp_path / "foreign.ipynb", ("code", "1 + 1"))
    r = verify_notebook(foreign)
    assert not r.ok and "not an executed course notebook" in r.problems[0]
    proc = cli("verify", str(corrupt))
    assert proc.returncode == 1 and "invalid JSON" in proc.stdout


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


def _fake_run(tmp_path, ok: bool, device: str, tag: str = "") -> Path:
    run_dir = tmp_path / f"run-{ok}-{device}{tag}"
    run_dir.mkdir()
    (run_dir / "report.json").write_text(json.dumps({
        "ok": ok, "device": device, "notebooks": [{"path": str(run_dir / "ch01_origins.ipynb"), "ok": ok}]}))
    (run_dir / "ch01_origins.ipynb").write_text("{}")
    return run_dir


def test_publish_refuses_failed_and_cpu_runs_and_changes_nothing(tmp_path):
    before = {p: p.read_bytes() for p in (ROOT / "chapters").glob("*.ipynb")}
    with pytest.raises(CourseError, match="did not pass"):
        runner.publish(str(_fake_run(tmp_path, ok=False, device="cuda")))
    with pytest.raises(CourseError, match="ran on cpu"):
        runner.publish(str(_fake_run(tmp_path, ok=True, device="cpu")))
    with pytest.raises(CourseError, match="no report.json"):
        runner.publish(str(tmp_path))
    proc = cli("publish", str(_fake_run(tmp_path, ok=False, device="cuda", tag="-cli")))
    assert proc.returncode == 2 and "refusing to publish" in proc.stderr
    assert before == {p: p.read_bytes() for p in (ROOT / "chapters").glob("*.ipynb")}


TABLE = ('helpers.reference("series_graphs", 2, "graphs", source="the series")\n'
         'helpers.figure("graphs", 1, "graphs", expect=helpers.exact(1))\n'
         'helpers.figure("ratio", 3.5, "×", expect=helpers.band(cpu=(1, 8)))\n'
         'helpers.table([("graphs", "series_graphs", "graphs", "d"), ("ratio", None, "ratio", ".1f")])')


def test_numbers_table_shows_series_book_and_your_run_then_only_the_book_once_published(notebook_factory, tmp_path):
    nb_path = notebook_factory("ch99_table.ipynb", TABLE)
    result = run_one(nb_path, tmp_path / "out")
    assert result.ok, result.problems
    assert result.tables == [["graphs", "series_graphs", "graphs", "d"], ["ratio", None, "ratio", ".1f"]]
    nb = json.loads((tmp_path / "out" / "ch99_table.ipynb").read_text())
    outs = [o for c in nb["cells"] for o in c.get("outputs", []) if "course_table" in (o.get("metadata") or {})]
    live = "".join(outs[0]["data"]["text/markdown"])
    assert "| Your run (CPU) |" in live and "| 2 graphs |" in live and "**Your run:** CPU" in live
    assert runner.rerender_tables(nb, result) == 1
    book = outs[0]["data"]["text/markdown"]
    assert "Your run" not in book and "| graphs | 2 graphs | 1 graph | ✓ == 1 |" in book
    assert f"course commit {result.env['git_commit']} — the run every output on this page comes from" in book


def test_report_puts_series_book_and_this_run_side_by_side_and_explains_failures(notebook_factory, tmp_path):
    body = TABLE.replace("band(cpu=(1, 8))", "band(cpu=(5, 8))")
    nb_path = notebook_factory("ch99_report.ipynb", body)
    out = tmp_path / "out"
    result = run_one(nb_path, out)
    report = {"started": "t", "finished": "t", "scale": "quick", "shard": "1/1", "ok": result.ok,
              "environment": result.env, "notebooks": [result.as_dict()]}
    runner.write_report(report, out)
    md = (out / "report.md").read_text()
    assert "| graphs (`graphs`) | 2 graphs | — | 1 graph | ✓ == 1 |" in md
    assert "outside its band (cpu: 5..8): a hardware or timing figure" in md


def test_cli_refuses_empty_verify_and_empty_shards(tmp_path):
    proc = cli("verify", str(tmp_path))
    assert proc.returncode == 2 and "no executed chapter notebooks" in proc.stderr
    proc = cli("run", "ch01", "--shard", "2/2", "--device", "cpu")
    assert proc.returncode == 2 and "holds no chapter" in proc.stderr
    proc = cli("--help")
    assert proc.returncode == 0 and "``" not in proc.stdout and "(ch01)" not in proc.stdout


def test_publish_drops_an_injected_parameters_cell_only_when_it_changed_nothing():
    def nb(src):
        return {"cells": [{"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": src}]}
    same = nb('# Parameters\ndevice = "cuda"\n')
    assert runner.drop_injected_parameters(same, {"device": "cuda", "scale": "full"}) and same["cells"] == []
    other = nb('# Parameters\ndevice = "cuda"\nrepeats = 3\n')
    assert not runner.drop_injected_parameters(other, {"device": "cuda"}) and len(other["cells"]) == 1


def test_instructor_guide_points_exercise_glue_at_its_chapter():
    from helpers.guide import cross_document_glue

    text = "{glue:text}`n` and {glue:text}`t:.2f` and {glue:text}`other.ipynb::k`"
    assert cross_document_glue(text, "ch05_x.ipynb") == (
        "{glue}`ch05_x.ipynb::n` and {glue:text}`ch05_x.ipynb::t:.2f` and {glue:text}`other.ipynb::k`")
