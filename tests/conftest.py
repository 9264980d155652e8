"""Shared fixtures: a tiny-notebook factory and one CPU execution of every chapter in the toc."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETUP = 'import helpers\nhelpers.setup("ch99")'


def make_notebook(path: Path, *cells: tuple[str, str], tags: dict[int, list[str]] | None = None) -> Path:
    """Write a notebook of (kind, source) cells; kind is 'code' or 'md'."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, (kind, src) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(src) if kind == "code" else nbformat.v4.new_markdown_cell(src)
        if tags and i in tags:
            cell.metadata["tags"] = tags[i]
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def course_notebook(path: Path, body: str, prose: str = "") -> Path:
    """A minimal well-formed course notebook whose body cell is ``body``."""
    return make_notebook(path, ("md", "# Test\n" + prose), ("code", SETUP),
                         ("code", 'device = "auto"\nscale = "auto"'),
                         ("code", "ENV = helpers.configure(device=device, scale=scale)"), ("code", body),
                         tags={1: ["hide-input"], 2: ["parameters"]})


@pytest.fixture
def notebook_factory(tmp_path):
    return lambda name, body, prose="": course_notebook(tmp_path / name, body, prose)


@pytest.fixture(scope="session")
def cpu_run(tmp_path_factory):
    """Execute every chapter on CPU (quick scale) once, two at a time (CI has 2 cores); return the run folder."""
    out = tmp_path_factory.mktemp("cpu-run")
    proc = subprocess.run([sys.executable, "-m", "helpers", "run", "--device", "cpu", "--out", str(out),
                           "--timeout", "240", "--jobs", "2"], cwd=ROOT, capture_output=True, text=True)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    keep = os.environ.get("COURSE_ARTIFACTS")  # CI uploads the executed notebooks and the report
    if keep:
        shutil.copytree(out, Path(keep) / "cpu-run", ignore=shutil.ignore_patterns("compile-cache"), dirs_exist_ok=True)
    return {"dir": out, "rc": proc.returncode, "log": proc.stdout + proc.stderr, "report": report}


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build the book from the committed notebooks with warnings as errors; return the html folder."""
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(ROOT), "--path-output", str(out),
           "--warningiserror", "--nitpick", "--keep-going"]
    import time

    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    return {"html": out / "_build" / "html", "rc": proc.returncode, "log": proc.stdout + proc.stderr,
            "seconds": seconds}


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None
