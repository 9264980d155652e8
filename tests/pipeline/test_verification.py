"""Unit tests of helpers/pipeline/verification.py: the page is current and records come from runs."""
import shutil

from helpers.pipeline import verification
from helpers.pipeline.run import chapters


def test_the_verification_page_is_current():
    assert verification.PAGE.read_text() == verification.render(), "run `python -m helpers verification`"


def test_the_book_column_names_every_chapter_with_its_checked_figures():
    page = verification.render()
    from helpers.pipeline.student import book_chapters

    for path in book_chapters():
        assert f"{{doc}}`{path.stem}`" in page
    rows = [line for line in page.splitlines() if line.startswith("| {doc}")]
    assert "This book's run: NVIDIA H200" in page and not any("✗" in row for row in rows)


def test_a_recorded_run_becomes_a_column_and_a_failure_shows(tmp_path, monkeypatch):
    import nbformat

    monkeypatch.setattr(verification, "VERIFIED_DIR", tmp_path / "verified")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(chapters()["ch05"], run / chapters()["ch05"].name)
    broken = nbformat.read(chapters()["ch08"], as_version=4)
    planted = nbformat.v4.new_code_cell("raise RuntimeError('planted')")
    planted.outputs = [nbformat.v4.new_output("error", ename="RuntimeError", evalue="planted", traceback=[])]
    broken.cells.append(planted)
    nbformat.write(broken, run / chapters()["ch08"].name)
    path = verification.record(run)
    assert path.name == "sm90-torch2.11.json"
    (path.parent / "grading.json").write_text('{"chapters": ["ch05"]}')  # other records share the folder
    page = verification.render(["ch05", "ch08", "ch09"]).split(verification.COVERAGE_HEADER)[0]
    row = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| {doc}")}
    assert row["{doc}`ch05_variable_trackers`"].count("✓") == 2
    assert "✗" in row["{doc}`ch08_output_graph`"]
    assert row["{doc}`ch09_codegen`"].rstrip(" |").endswith("—")  # not in the recorded run


def test_a_run_from_an_uncommitted_tree_is_not_recorded(tmp_path, monkeypatch):
    import json

    import pytest

    from helpers.core.env import CourseError

    monkeypatch.setattr(verification, "VERIFIED_DIR", tmp_path / "verified")
    run = tmp_path / "run"
    run.mkdir()
    text = chapters()["ch05"].read_text()
    env = json.loads(text)  # stamp the banner's commit as dirty
    for cell in env["cells"]:
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("course_env")
            if meta:
                meta["git_commit"] += "+dirty"
    (run / chapters()["ch05"].name).write_text(json.dumps(env))
    with pytest.raises(CourseError, match="uncommitted changes"):
        verification.record(run)
    assert not (tmp_path / "verified").exists()


def test_series_coverage_counts_paired_unmeasurable_and_glued_only_values(tmp_path):
    import json

    from helpers.core.figures import META_KEY
    from helpers.core.numbers import TABLE_META_KEY

    def out(meta_key, meta):
        return {"output_type": "display_data", "data": {"text/plain": "x"}, "metadata": {meta_key: meta}}

    refs = [out(META_KEY, {"name": n, "origin": "reference", "machine": m})
            for n, m in [("s_t", "l40s"), ("s_size", "laptop"), ("s_left", "l40s"), ("ann", "pytorch")]]
    figs = [out(META_KEY, {"name": "t", "origin": "figure"})]
    table = out(TABLE_META_KEY, {"rows": [["time", "s_t", "t", ".1f"], ["size", "s_size", None, "d", "no such file"],
                                          ["announced", "ann", "t", "d"]]})
    nb = tmp_path / "ch99_x.ipynb"
    nb.write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": refs + figs + [table]}]}))
    c = verification.series_coverage(nb)
    assert (c["glued"], c["re_measured"], c["glued_only"]) == (3, 1, ["s_left"])  # PyTorch's value is not the series'
    assert c["not_re_measured"] == {"s_size": ("size", "no such file")}
