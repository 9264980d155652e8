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


def test_the_grading_time_comes_from_the_recorded_run(tmp_path, monkeypatch):
    import json

    from helpers.pipeline import grade, guide

    monkeypatch.setattr(grade, "GRADING_RECORD", tmp_path / "grading.json")
    assert "No grading run has been recorded" in guide.grading_time()
    (tmp_path / "grading.json").write_text(json.dumps({
        "jobs": 2, "seconds": 125.4, "submissions": 40, "chapters": ["ch05"], "median_s": 6.1, "min_s": 5.0,
        "max_s": 9.9, "machine": "Some CPU", "cores": 2, "torch": "2.13.0+cpu", "load_average": 0.5,
        "date": "2026-12-01"}))
    text = guide.grading_time()
    assert "40 submissions of ch05 took 2 min 5 s with `--jobs 2`" in text and "Some CPU (2 cores" in text
