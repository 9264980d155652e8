"""Unit tests of helpers/pipeline/grade.py, and one grading of the planted submissions in submissions/ (ch05).

The planted copies of ch05 (made from its student edition): ada answers everything right; ben gets 5.1
wrong, deleted 5.3's cells and some text, and lost the cell stamps; cleo's 5.2 answer raises half way;
dan edited 5.1's check to always pass and answers 5.3 by rebinding the check's helper (a cheat the
grader cannot stop, only flag); eve.ipynb is not a notebook.
"""
import copy
import csv
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from helpers.pipeline.grade import chapter_of, graded_notebook, rebinds, results_of
from helpers.pipeline.student import exercises, student_edition
from helpers.pipeline.verify import _source, load_notebook

SUBMISSIONS = Path(__file__).parent / "submissions"
CH05 = ROOT / "chapters" / "ch05_variable_trackers.ipynb"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("grades")
    proc = subprocess.run([sys.executable, "-m", "helpers", "grade", str(SUBMISSIONS), "--out", str(out),
                           "--jobs", "2", "--timeout", "240"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with (out / "grades.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    with (out / "students.csv").open() as fh:
        students = {r["student"]: r for r in csv.DictReader(fh)}
    return {"out": out, "rows": rows, "students": students, "log": proc.stdout}


def test_planted_submissions_get_the_courses_verdicts(graded):
    got = {(r["student"], r["exercise"]): r["result"] for r in graded["rows"]}
    assert got == {
        ("ada", "5.1"): "right", ("ada", "5.2"): "right", ("ada", "5.3"): "right",
        ("ben", "5.1"): "not quite", ("ben", "5.2"): "right", ("ben", "5.3"): "not answered",
        ("cleo", "5.1"): "right", ("cleo", "5.2"): "error", ("cleo", "5.3"): "right",
        ("dan", "5.1"): "not quite", ("dan", "5.2"): "not answered", ("dan", "5.3"): "right",
        ("eve", ""): "not a notebook"}
    # dan's copy is the student edition with two answers changed: it ran to the end, unanswered 5.2 included
    assert graded["students"]["dan"]["status"] == "graded" and graded["students"]["cleo"]["status"] == "graded"
    error = next(r["detail"] for r in graded["rows"] if r["student"] == "cleo" and r["exercise"] == "5.2")
    assert error == "answer cell raised ZeroDivisionError: division by zero"


def test_the_grader_says_what_it_ignored_and_what_to_read(graded):
    dan = graded["students"]["dan"]["notes"]
    assert "5.1: check cell edited (the course's check was used)" in dan
    assert "5.3: the answer cell rebinds source_name (read it)" in dan
    assert graded["students"]["ada"]["notes"] == ""
    assert graded["students"]["ben"]["notes"] == "5.3: no answer cell in the submission"
    md = (graded["out"] / "grades.md").read_text()
    assert "| ada | ✅ right | ✅ right | ✅ right | 3/3 |  |" in md
    assert "## Not graded" in md and "eve.ipynb | not a notebook" in md
    with (graded["out"] / "exercises.csv").open() as fh:
        per = {r["exercise"]: r for r in csv.DictReader(fh)}
    assert per["5.1"]["right"] == "2" and per["5.1"]["not quite"] == "2"


def test_each_submission_ran_in_its_own_folder(graded):
    work = graded["out"] / "work"
    assert sorted(p.name for p in work.iterdir()) == ["ada", "ben", "cleo", "dan"]
    for p in work.iterdir():
        assert (p / "executed" / CH05.name).exists() and (p / "cache").is_dir()


def course():
    return student_edition(load_notebook(CH05), "ch05", CH05.name, keep_outputs=False)


def test_answers_are_matched_by_exercise_not_position():
    sub = course()
    ex = {e.number: e for e in exercises(sub)}
    moved, deleted = sub["cells"][ex["5.3"].answer], sub["cells"][ex["5.1"].answer]
    moved["source"] = "answer_3 = 'three'"
    sub["cells"] = [c for c in sub["cells"] if c is not moved and c is not deleted]  # 5.1's answer deleted
    sub["cells"].insert(3, moved)  # 5.3's answer moved to the top: its stamp still says 5.3
    nb, notes = graded_notebook(course(), sub)
    assert notes == ["5.1: no answer cell in the submission"]
    got = {e.number: _source(nb["cells"][e.answer]) for e in exercises(nb)}
    assert got["5.3"] == "answer_3 = 'three'" and got["5.1"] == "answer_1 = None  # an int"
    assert all("raises-exception" in nb["cells"][e.check]["metadata"]["tags"] for e in exercises(nb))


def test_results_come_from_records_errors_and_cells_never_reached():
    nb = course()
    ex = {e.number: e for e in exercises(nb)}
    record = {"output_type": "display_data", "data": {"text/plain": "x"},
              "metadata": {"course_exercise": {"name": "exercise 5.1", "result": "not quite", "answer": "4"}}}
    nb["cells"][ex["5.1"].check]["outputs"] = [record]
    nb["cells"][ex["5.2"].check]["outputs"] = [{"output_type": "error", "ename": "NameError",
                                                "evalue": "name 'answer_2' is not defined", "traceback": []}]
    stopped = copy.deepcopy(nb)
    stopped["cells"][4]["outputs"] = [{"output_type": "error", "ename": "RuntimeError", "evalue": "boom", "traceback": []}]
    assert results_of(nb) == ({"5.1": ("not quite", "4"), "5.2": ("error", "check raised NameError: name "
                               "'answer_2' is not defined"), "5.3": ("not run", "")}, None)
    assert results_of(stopped)[1] == "cell 5 raised RuntimeError: boom"


def test_rebinds_flags_course_names_and_attribute_writes():
    course_names = {"source_name", "helpers", "f"}
    assert rebinds("answer_1 = 3", course_names, {"answer_1"}) == []
    assert rebinds("source_name = len\nanswer_3 = 1", course_names, {"answer_3"}) == ["rebinds source_name"]
    assert rebinds("helpers.exercises.check = print", course_names, set()) == ["sets helpers.exercises.check"]


def test_chapter_comes_from_the_stamp_the_file_name_or_the_setup_cell():
    nb = {"metadata": {}, "cells": [{"cell_type": "code", "source": 'helpers.setup("ch07")'}]}
    assert chapter_of(nb, Path("x.ipynb")) == "ch07"
    assert chapter_of(nb, Path("ch03_mine.ipynb")) == "ch03"
    assert chapter_of({"metadata": {"course_student": {"chapter": "ch05"}}, "cells": []}, Path("ch03.ipynb")) == "ch05"
    assert chapter_of({"metadata": {}, "cells": []}, Path("homework.ipynb")) is None
