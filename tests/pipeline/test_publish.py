"""Unit tests of helpers/pipeline/publish.py."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from helpers.core.env import CourseError
from helpers.pipeline.publish import drop_injected_parameters, publish, rerender_tables
from helpers.pipeline.run import execute


def run_one(path: Path, out: Path, timeout=120.0):
    return execute(path, out / path.name, device="cpu", scale="quick", timeout=timeout, cache=out / "cache")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers", *args], cwd=ROOT, capture_output=True, text=True)


def _fake_run(tmp_path, ok: bool, device: str, tag: str = "") -> Path:
    run_dir = tmp_path / f"run-{ok}-{device}{tag}"
    run_dir.mkdir()
    (run_dir / "report.json").write_text(json.dumps({
        "ok": ok, "device": device, "notebooks": [{"path": str(run_dir / "ch01_origins.ipynb"), "ok": ok}]}))
    (run_dir / "ch01_origins.ipynb").write_text("{}")
    return run_dir


TABLE = ('helpers.reference("series_graphs", 2, "graphs", source="the series", on="l40s")\n'
         'helpers.figure("graphs", 1, "graphs", expect=helpers.exact(1))\n'
         'helpers.figure("ratio", 3.5, "×", expect=helpers.band(cpu=(1, 8)))\n'
         'helpers.table([("graphs", "series_graphs", "graphs", "d"), ("ratio", None, "ratio", ".1f")])')


def test_publish_refuses_failed_and_cpu_runs_and_changes_nothing(tmp_path):
    before = {p: p.read_bytes() for p in (ROOT / "chapters").glob("*.ipynb")}
    with pytest.raises(CourseError, match="did not pass"):
        publish(str(_fake_run(tmp_path, ok=False, device="cuda")))
    with pytest.raises(CourseError, match="ran on cpu"):
        publish(str(_fake_run(tmp_path, ok=True, device="cpu")))
    with pytest.raises(CourseError, match="no report.json"):
        publish(str(tmp_path))
    proc = cli("publish", str(_fake_run(tmp_path, ok=False, device="cuda", tag="-cli")))
    assert proc.returncode == 2 and "refusing to publish" in proc.stderr
    assert before == {p: p.read_bytes() for p in (ROOT / "chapters").glob("*.ipynb")}


def test_numbers_table_shows_series_book_and_your_run_then_only_the_book_once_published(notebook_factory, tmp_path):
    nb_path = notebook_factory("ch99_table.ipynb", TABLE)
    result = run_one(nb_path, tmp_path / "out")
    assert result.ok, result.problems
    assert result.tables == [["graphs", "series_graphs", "graphs", "d"], ["ratio", None, "ratio", ".1f"]]
    nb = json.loads((tmp_path / "out" / "ch99_table.ipynb").read_text())
    outs = [o for c in nb["cells"] for o in c.get("outputs", []) if "course_table" in (o.get("metadata") or {})]
    live = "".join(outs[0]["data"]["text/markdown"])
    assert "| Your run (CPU) |" in live and "| 2 graphs |" in live and "**Your run:** CPU" in live
    assert rerender_tables(nb, result) == 1
    book = outs[0]["data"]["text/markdown"]
    assert "Your run" not in book and "| graphs | 2 graphs | 1 graph | ✓ == 1 |" in book
    assert f"course commit {result.env['git_commit']} — the run every output on this page comes from" in book


def test_publish_drops_an_injected_parameters_cell_only_when_it_changed_nothing():
    def nb(src):
        return {"cells": [{"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": src}]}
    same = nb('# Parameters\ndevice = "cuda"\n')
    assert drop_injected_parameters(same, {"device": "cuda", "scale": "full"}) and same["cells"] == []
    other = nb('# Parameters\ndevice = "cuda"\nrepeats = 3\n')
    assert not drop_injected_parameters(other, {"device": "cuda"}) and len(other["cells"]) == 1


def _published_run(tmp_path, edit=None):
    """A run folder holding chapter 1's committed (verified H200) notebook, optionally edited."""
    import nbformat

    from helpers.pipeline.run import chapters

    run = tmp_path / "run"
    run.mkdir()
    nb = nbformat.read(chapters()["ch01"], as_version=4)
    if edit:
        edit(nb)
    nbformat.write(nb, run / "ch01_origins.ipynb")
    (run / "report.json").write_text(json.dumps({"ok": True, "device": "cuda", "finished": "2026-12-01",
                                                 "notebooks": [{"path": "ch01_origins.ipynb", "ok": True}]}))
    return run


def test_publish_reproduces_a_committed_chapter_byte_for_byte(tmp_path, monkeypatch):
    from helpers.core import numbers
    from helpers.pipeline.run import chapters

    monkeypatch.setattr(numbers, "CANONICAL_DIR", tmp_path / "canonical")
    out = tmp_path / "chapters"
    out.mkdir()
    assert publish(str(_published_run(tmp_path)), chapters_dir=out) == 0
    assert (out / "ch01_origins.ipynb").read_bytes() == chapters()["ch01"].read_bytes()
    assert json.loads((tmp_path / "canonical" / "ch01.json").read_text())["figures"]


def test_publish_refuses_a_run_whose_cells_are_not_this_checkouts_sources(tmp_path, monkeypatch):
    from helpers.core import numbers

    monkeypatch.setattr(numbers, "CANONICAL_DIR", tmp_path / "canonical")
    run = _published_run(tmp_path, edit=lambda nb: nb.cells[0].__setitem__("source", "# An older title"))
    with pytest.raises(CourseError, match="not this checkout's sources"):
        publish(str(run), chapters_dir=tmp_path)
    assert not (tmp_path / "canonical").exists()


def test_publish_can_take_the_chapters_of_a_run_that_passed_and_refuses_the_others(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "report.json").write_text(json.dumps({"ok": False, "device": "cuda", "notebooks": [
        {"path": str(run_dir / "ch01_origins.ipynb"), "ok": True},
        {"path": str(run_dir / "ch02_four_stations.ipynb"), "ok": False}]}))
    with pytest.raises(CourseError, match="ch02_four_stations.ipynb"):
        publish(str(run_dir), chapters_dir=tmp_path, only=["ch02"])
    with pytest.raises(CourseError, match="did not run ch03"):
        publish(str(run_dir), chapters_dir=tmp_path, only=["ch01", "ch03"])
    with pytest.raises(CourseError, match="re-verification failed"):  # ch01 passed; its (empty) file is re-verified
        (run_dir / "ch01_origins.ipynb").write_text("{}")
        publish(str(run_dir), chapters_dir=tmp_path, only=["ch01"])


def test_publish_drops_the_stderr_a_cell_hides_and_keeps_the_rest():
    from helpers.pipeline.publish import drop_hidden_stderr

    err = {"output_type": "stream", "name": "stderr", "text": "/opt/x/pgo.py:538: UserWarning"}
    out = {"output_type": "stream", "name": "stdout", "text": "kept"}
    nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["remove-stderr"]}, "outputs": [err, out]},
                    {"cell_type": "code", "metadata": {}, "outputs": [err]}]}
    assert drop_hidden_stderr(nb) == 1
    assert nb["cells"][0]["outputs"] == [out] and nb["cells"][1]["outputs"] == [err]
