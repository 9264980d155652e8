"""Every chapter executes on CPU with its expectations met; every chapter in the book carries verified GPU outputs.

A chapter on disk but not yet in ``_toc.yml`` is *awaiting its canonical GPU run*: it is written, lint-clean,
in sync with its source and CPU-verified, and its notebook carries no outputs (nothing unverified is shown
anywhere) until a verified GPU run is published into it and the toc lists it.
"""
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from helpers.pipeline.lint import lint_notebook
from helpers.core.numbers import CANONICAL_DIR
from helpers.pipeline.run import NOT_MEASURED_HERE, chapters
from helpers.pipeline.verify import verify_notebook

CHAPTERS = chapters()


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(toc)
    return files


BOOK = {ch: path for ch, path in CHAPTERS.items()
        if f"chapters/{path.stem}" in toc_files()}  # chapters in the book: published from a GPU run
PENDING = {ch: path for ch, path in CHAPTERS.items() if ch not in BOOK}


def test_toc_lists_only_chapters_on_disk():
    listed = {Path(f).name for f in toc_files() if re.match(r"chapters/ch\d\d_", f)}
    assert listed <= {p.stem for p in CHAPTERS.values()}
    assert len(BOOK) >= 2


def test_a_chapter_awaiting_its_gpu_run_shows_nothing_unverified():
    # a chapter on disk but not in the toc (none, once all are published) shows no outputs and has no record
    for chapter, path in PENDING.items():
        cells = json.loads(path.read_text())["cells"]
        assert not [c for c in cells if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))], chapter
        assert not (CANONICAL_DIR / f"{chapter}.json").exists(), chapter


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_chapter_is_lint_clean(chapter):
    assert lint_notebook(CHAPTERS[chapter]) == []


@pytest.mark.parametrize("chapter", list(BOOK))
def test_committed_outputs_are_a_verified_gpu_run(chapter):
    result = verify_notebook(CHAPTERS[chapter])
    assert result.ok, result.problems
    assert result.env["device"] == "cuda", "committed outputs must come from the canonical GPU run"
    assert result.counts().get("pass", 0) > 0


@pytest.mark.parametrize("chapter", list(BOOK))
def test_canonical_record_matches_the_committed_notebook(chapter):
    record = json.loads((CANONICAL_DIR / f"{chapter}.json").read_text())
    result = verify_notebook(CHAPTERS[chapter])
    figures = {f["name"]: f["value"] for f in result.figures if f["status"] not in NOT_MEASURED_HERE}
    assert {k: v["value"] for k, v in record["figures"].items()} == figures
    assert record["env"] == result.env
    series = {f["name"]: f["value"] for f in result.figures if f["status"] == "reference"}
    assert {k: v["value"] for k, v in record.get("series", {}).items()} == series  # what the map shows on Colab


@pytest.mark.parametrize("chapter", list(BOOK))
def test_a_published_page_names_one_run(chapter):
    """The banner, the numbers table and the canonical record all name the same committed run."""
    from helpers.core.numbers import TABLE_META_KEY

    nb = json.loads(CHAPTERS[chapter].read_text())
    record = json.loads((CANONICAL_DIR / f"{chapter}.json").read_text())
    env = verify_notebook(CHAPTERS[chapter]).env
    commit = env["git_commit"]
    assert commit and not commit.endswith("+dirty"), f"published from an uncommitted tree: {commit}"
    assert record["env"]["git_commit"] == commit
    tables = ["".join(o["data"]["text/markdown"]) for c in nb["cells"] for o in c.get("outputs", [])
              if TABLE_META_KEY in (o.get("metadata") or {})]
    assert len(tables) == 1, "one numbers table per chapter"
    assert "Your run" not in tables[0] and f"course commit {commit} —" in tables[0]
    texts = " ".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                     for c in nb["cells"] for o in c.get("outputs", []))
    assert set(re.findall(r"course commit (\S+?)[\s,.]", texts)) == {commit}


# What a chapter glues when a figure that a sentence is worded from is missing (helpers.inductor.autotune.worded and
# replay_all, ch25's from_gpu_run): on a page published from the GPU run, a cited one is a sentence that lost its
# measurement, e.g. worded before the cell that measures its figure.
FALLBACK_WORDS = re.compile(r"GPU run is not published|not in the book's published GPU run|the book's next GPU run")


@pytest.mark.parametrize("chapter", list(BOOK))
def test_a_published_page_cites_no_fallback_words(chapter):
    cells = json.loads(CHAPTERS[chapter].read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    cited = set(re.findall(r"\{glue(?::\w+)?\}`([\w-]+)", prose))
    fallen = sorted({meta["name"] for c in cells for o in c.get("outputs", [])
                     for meta in [(o.get("metadata") or {}).get("course_figure") or {}]
                     if meta.get("name") in cited and FALLBACK_WORDS.search(str(meta.get("value", "")))})
    assert not fallen, f"cited glue that is a fallback text (its figure was missing when it was worded): {fallen}"


@pytest.mark.notebooks
@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_chapter_executes_on_cpu_with_expectations_met(cpu_run, chapter):
    assert cpu_run["report"] is not None, cpu_run["log"][-3000:]
    by_name = {Path(nb["path"]).name: nb for nb in cpu_run["report"]["notebooks"]}
    nb = by_name[CHAPTERS[chapter].name]
    assert nb["ok"], nb["problems"]
    assert nb["env"]["device"] == "cpu" and nb["counts"].get("fail", 0) == 0
    assert nb["counts"].get("unverified", 0) == 0, [f["name"] for f in nb["figures"] if f["status"] == "unverified"]
    assert nb["seconds"] < 120, f"{chapter} took {nb['seconds']} s on CPU (limit 120)"


def test_instructor_guide_is_current():
    from helpers.pipeline.guide import GUIDE, render

    assert GUIDE.read_text() == render(), "run `python -m helpers guide` and commit chapters/instructors.md"


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_a_chapter_with_gpu_bands_for_the_h200_only_says_what_other_gpus_get(chapter):
    """Bands for sm90 alone leave a T4 (sm75) without a band: the Device paragraph must say so."""
    cells = json.loads(CHAPTERS[chapter].read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    bands = re.findall(r"band\(([^)]*)\)", code)
    h200_only = [b for b in bands if "sm90=" in b and "cuda=" not in b]
    device = next(("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
                   and "**Device:**" in "".join(c["source"])), "")
    device = device[device.find("**Device:**"):].split("\n\n")[0]
    if h200_only:
        assert "T4" in device and '"no band"' in device, f"{chapter}: sm90-only bands, Device paragraph: {device[:200]}"


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_a_chapter_has_one_title_and_it_carries_its_number(chapter):
    cells = json.loads(CHAPTERS[chapter].read_text())["cells"]
    titles = [line for c in cells if c["cell_type"] == "markdown"
              for line in "".join(c["source"]).splitlines() if line.startswith("# ")]
    assert len(titles) == 1 and titles[0].startswith(f"# {int(chapter[2:])}. "), titles


def test_the_verified_gpus_are_the_gpus_the_book_ran_on():
    """env.VERIFIED_GPU names the GPU class and torch of every published run, and nothing else."""
    from helpers.core.env import VERIFIED_GPU

    ran: dict[str, set] = {}
    for path in CANONICAL_DIR.glob("ch*.json"):
        env = json.loads(path.read_text())["env"]
        minor = ".".join(env["torch"].split("+")[0].split(".")[:2])
        ran.setdefault(env["device_class"], set()).add(minor)
    assert {cls: set(v) for cls, v in VERIFIED_GPU.items()} == ran
