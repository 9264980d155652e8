"""Unit tests of helpers/pipeline/verify.py."""
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, make_notebook

from helpers.pipeline.run import execute
from helpers.pipeline.verify import verify_notebook


def run_one(path: Path, out: Path, timeout=120.0):
    return execute(path, out / path.name, device="cpu", scale="quick", timeout=timeout, cache=out / "cache")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers", *args], cwd=ROOT, capture_output=True, text=True)


def test_verify_catches_a_failing_expectation(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_fail.ipynb", 'helpers.figure("speedup", 0.5, "×", expect=helpers.band(cpu=(2, 8)))')
    result = run_one(nb, tmp_path / "out")
    assert not result.ok and result.status == "failed"
    assert "misses its expectation (cpu: 2..8)" in result.problems[0]


def test_verify_catches_a_notebook_that_raised(notebook_factory, tmp_path):
    nb = notebook_factory("ch99_raise.ipynb", "raise RuntimeError('planted')")
    result = run_one(nb, tmp_path / "out")
    assert result.status == "error" and any("planted" in p for p in result.problems)


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


def test_verify_rejects_a_glue_key_set_twice(tmp_path):
    import json

    nb = json.loads((ROOT / "chapters" / "ch02_four_stations.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    glue = next(o for c in code for o in c.get("outputs", []) if "scrapbook" in (o.get("metadata") or {}))
    code[-1].setdefault("outputs", []).append(glue)  # the same name glued by a second cell
    path = tmp_path / "ch02_four_stations.ipynb"
    path.write_text(json.dumps(nb))
    name = glue["metadata"]["scrapbook"]["name"]
    assert verify_notebook(ROOT / "chapters" / "ch02_four_stations.ipynb").ok
    result = verify_notebook(path)
    assert not result.ok and any(f"glue {name!r} is glued 2 times" in p for p in result.problems)
