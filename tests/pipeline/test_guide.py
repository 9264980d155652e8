"""Unit tests of helpers/pipeline/guide.py."""
import re

from helpers.pipeline.guide import cross_document_glue


def test_instructor_guide_points_exercise_glue_at_its_chapter():
    text = "{glue:text}`n` and {glue:text}`t:.2f` and {glue:text}`other.ipynb::k`"
    assert cross_document_glue(text, "ch05_x.ipynb") == (
        "{glue}`ch05_x.ipynb::n` and {glue:text}`ch05_x.ipynb::t:.2f` and {glue:text}`other.ipynb::k`")


def test_instructor_guide_lists_the_books_chapters_with_every_solution():
    from helpers.pipeline.guide import render
    from helpers.pipeline.student import book_chapters

    text = render()
    titles = re.findall(r"^## (\d+)\. ", text, re.M)
    assert titles == [str(int(p.stem[2:4])) for p in book_chapters()]  # the toc's chapters, no unfinished one
    exercises = re.findall(r"^\*\*Exercise (\d+\.\d+)", text, re.M)
    solutions = re.findall(r"^# Solution (\d+\.\d+)", text, re.M)
    assert exercises and solutions == exercises  # e.g. 1.1, whose course cell sits before its answer cell
