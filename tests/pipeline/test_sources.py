"""Unit tests of helpers/pipeline/sources.py, and every chapter against its text source."""
import shutil

import pytest
from conftest import ROOT

from helpers.pipeline.run import chapters
from helpers.pipeline.sources import differences, source_of


@pytest.mark.parametrize("chapter", sorted(chapters()))
def test_chapter_notebook_and_its_text_source_agree_on_every_cell(chapter):
    assert differences(chapters()[chapter]) == [], "edit sources/, then run `make sync`"


def test_differences_catch_an_edited_source_a_missing_cell_and_a_missing_source(tmp_path):
    notebook = chapters()["ch01"]
    source = tmp_path / "ch01.md"
    text = source_of(notebook).read_text()
    source.write_text(text.replace("How did", "Why did", 1))
    assert any("cell 1: source differs" in p for p in differences(notebook, source))
    cut = text.rindex("```{code-cell}")
    source.write_text(text[:cut])
    assert any("cells, but" in p for p in differences(notebook, source))
    assert "no text source" in differences(notebook, tmp_path / "missing.md")[0]


def test_run_metadata_is_not_part_of_a_source(tmp_path):
    import nbformat

    notebook = tmp_path / "ch01_origins.ipynb"
    shutil.copy(chapters()["ch01"], notebook)
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[0].metadata["papermill"] = {"duration": 1.0}
    nb.cells[0].metadata["tags"] = []
    nbformat.write(nb, notebook)
    assert differences(notebook, source_of(ROOT / "chapters" / "ch01_origins.ipynb")) == []


GPU_EXPECTATION = ("sm90=", '"cuda":', "'cuda':")


@pytest.mark.parametrize("chapter", sorted(chapters()))
def test_a_chapter_with_gpu_values_says_what_a_t4_reports(chapter):
    """Issue 11: a chapter whose expectations hold GPU values says what a pre-sm80 GPU (Colab's T4) shows."""
    text = source_of(chapters()[chapter]).read_text()
    if any(mark in text for mark in GPU_EXPECTATION):
        assert "T4" in text, f"{chapter} checks GPU values but says nothing of a T4 (see ch17's Device line)"
