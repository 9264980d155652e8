"""Unit tests of helpers/pipeline/guide.py."""

from helpers.pipeline.guide import cross_document_glue


def test_instructor_guide_points_exercise_glue_at_its_chapter():
    text = "{glue:text}`n` and {glue:text}`t:.2f` and {glue:text}`other.ipynb::k`"
    assert cross_document_glue(text, "ch05_x.ipynb") == (
        "{glue}`ch05_x.ipynb::n` and {glue:text}`ch05_x.ipynb::t:.2f` and {glue:text}`other.ipynb::k`")
