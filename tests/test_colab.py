"""A chapter run the way a Colab reader runs it, and the one repository URL everything installs from.

The reader opens one notebook, alone, in a Python that has torch but not ``helpers``. The setup cell's
``%pip install`` must then fetch the course from its repository URL and the chapter must run to the end.
Here git's own URL rewriting (``GIT_CONFIG_*`` environment variables, ``url.<base>.insteadOf``) points
that URL at a snapshot of this checkout, so the cell runs exactly as committed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from helpers.pipeline.run import chapters

INSTALL = re.compile(r'%pip install -q "torch-compile-opened-up @ git\+(\S+?)@main"')


def repository_url() -> str:
    """The one place the repository URL is set: the book's _config.yml."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]


def setup_cells() -> dict[str, str]:
    out = {}
    for ch, path in chapters().items():
        cells = json.loads(path.read_text())["cells"]
        out[ch] = next("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return out


def test_every_install_cell_and_clone_line_uses_the_configured_repository():
    url = repository_url()
    for ch, source in setup_cells().items():
        found = INSTALL.findall(source)
        assert found == [url], f"{ch}: setup cell installs from {found}, the book's repository is {url}"
    clones = {doc.name: re.findall(r"git clone (\S+)", doc.read_text())
              for doc in (ROOT / "README.md", ROOT / "chapters" / "intro.md", ROOT / "code" / "README.md")}
    assert clones["intro.md"], "the intro tells readers how to clone the course"
    assert {u for found in clones.values() for u in found} == {url}, clones


def test_installing_the_course_never_touches_torch():
    """Colab brings its own torch: the package must not depend on it (setup() checks the version)."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in deps if re.match(r"torch\b", d)], deps


def _python_without_helpers(tmp: Path) -> Path:
    """A venv whose packages are this one's (torch, ipykernel...) minus the course itself."""
    env_dir = tmp / "colab-venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.check_output([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    ours = Path(next(p for p in sys.path if p.endswith("site-packages") and Path(p, "torch").exists()))
    borrowed = tmp / "borrowed"
    borrowed.mkdir()
    for entry in ours.iterdir():
        if "torch_compile_opened_up" in entry.name or entry.suffix == ".pth" or entry.name in ("pip", "_distutils_hack"):
            continue
        if entry.name.startswith("pip-") or entry.name == "setuptools" or entry.name.startswith("setuptools-"):
            continue
        (borrowed / entry.name).symlink_to(entry)
    (site / "borrowed.pth").write_text(str(borrowed) + "\n")
    return py


def _snapshot_repository(tmp: Path) -> Path:
    """This checkout's tracked files as they are now, committed on a branch named main."""
    src = tmp / "course-src"
    files = subprocess.check_output(["git", "ls-files", "-z"], cwd=ROOT, text=True).split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    git = ["git", "-c", "user.name=course-test", "-c", "user.email=test@localhost", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "snapshot"]):
        subprocess.run([*git, *args], cwd=src, check=True)
    return src


@pytest.mark.notebooks
def test_a_chapter_runs_alone_the_way_colab_runs_it(tmp_path):
    py = _python_without_helpers(tmp_path)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COURSE_HEADLESS")}
    probe = subprocess.run([py, "-c", "import torch, ipykernel; import helpers"], capture_output=True, text=True,
                           cwd=tmp_path, env=clean)
    assert "No module named 'helpers'" in probe.stderr, probe.stderr[-500:]
    src = _snapshot_repository(tmp_path)
    kernels = tmp_path / "jupyter" / "kernels" / "colab"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps(
        {"argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "colab",
         "language": "python"}))
    work = tmp_path / "content"  # Colab's working folder: the notebook and nothing else
    work.mkdir()
    chapter = chapters()["ch05"]
    shutil.copy(chapter, work / chapter.name)
    env = dict(clean)
    env.update(JUPYTER_PATH=str(tmp_path / "jupyter"), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"),
               TMPDIR=str(tmp_path), GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"url.{src.as_uri()}.insteadOf",
               GIT_CONFIG_VALUE_0=repository_url())
    out = work / ("ran-" + chapter.name)
    proc = subprocess.run([sys.executable, "-m", "papermill", str(work / chapter.name), str(out), "-k", "colab",
                           "--cwd", str(work), "-p", "device", "cpu", "-p", "scale", "quick", "--no-progress-bar"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    installed = subprocess.run([py, "-c", "import helpers; print(helpers.__file__)"], capture_output=True, text=True,
                               cwd=tmp_path, env=clean)
    assert "colab-venv" in installed.stdout, installed.stdout + installed.stderr  # installed by the cell, not borrowed
    cells = [c for c in json.loads(out.read_text())["cells"] if c["cell_type"] == "code"]
    assert not any(o.get("output_type") == "error" for c in cells for o in c.get("outputs", []))
