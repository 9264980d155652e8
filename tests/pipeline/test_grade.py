"""Unit tests of helpers/pipeline/grade.py, and one grading of the planted submissions in submissions/ (ch05).

The planted copies of ch05 (made from its student edition): ada answers everything right; ben gets 5.1
wrong, deleted 5.3's cells and some text, and lost the cell stamps; cleo's 5.2 answer raises half way;
dan edited 5.1's check to always pass and answers 5.3 by rebinding the check's helper (a cheat the
grader cannot stop, only flag); eve.ipynb is a text file, not a notebook. Issue 29's cheats and failures
(written by make_submissions.py): fay's 5.1 is an object whose __eq__ always says True; gus patches the
course's comparison through vars() and replaces helpers.exercises.check; hal writes the answers in new cells
under the answer cells; ivy's 5.1 kills the kernel; jon's 5.2 loops forever; kim's notebook is cut short;
nell/gina_ch06.ipynb is ch05 under a ch06 name, in a subfolder.
"""
import copy
import csv
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from helpers.pipeline.grade import (_halted_exercise, _judge, chapter_note, chapter_of, graded_notebook, read_submission,
                                    rebinds, results_of, submissions, touches)
from helpers.pipeline.student import exercises, student_edition
from helpers.pipeline.verify import _source, load_notebook

SUBMISSIONS = Path(__file__).parent / "submissions"
CH05 = ROOT / "chapters" / "ch05_variable_trackers.ipynb"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("grades")
    proc = subprocess.run([sys.executable, "-m", "helpers", "grade", str(SUBMISSIONS), "--out", str(out),
                           "--jobs", "2", "--timeout", "240", "--exercise-timeout", "15"],
                          cwd=ROOT, capture_output=True, text=True)
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
        ("eve", ""): "not a notebook",
        # issue 29: the cheats fail, the honest answers in odd places count, a dead kernel or a loop costs one exercise
        ("fay_always_equal", "5.1"): "not quite", ("fay_always_equal", "5.2"): "right",
        ("fay_always_equal", "5.3"): "right",
        ("gus_patches_the_course", "5.1"): "not quite", ("gus_patches_the_course", "5.2"): "right",
        ("gus_patches_the_course", "5.3"): "not quite",
        ("hal_answers_in_new_cells", "5.1"): "right", ("hal_answers_in_new_cells", "5.2"): "right",
        ("hal_answers_in_new_cells", "5.3"): "right",
        ("ivy_kernel_dies", "5.1"): "error", ("ivy_kernel_dies", "5.2"): "right", ("ivy_kernel_dies", "5.3"): "right",
        ("jon_endless_loop", "5.1"): "right", ("jon_endless_loop", "5.2"): "timeout", ("jon_endless_loop", "5.3"): "right",
        ("kim_corrupted", ""): "corrupted notebook",
        ("nell", "5.1"): "right", ("nell", "5.2"): "right", ("nell", "5.3"): "right"}
    # dan's copy is the student edition with two answers changed: it ran to the end, unanswered 5.2 included
    assert graded["students"]["dan"]["status"] == "graded" and graded["students"]["cleo"]["status"] == "graded"
    error = next(r["detail"] for r in graded["rows"] if r["student"] == "cleo" and r["exercise"] == "5.2")
    assert error == "answer cell raised ZeroDivisionError: division by zero"


def test_cheats_get_a_note_an_instructor_can_act_on(graded):
    fay = graded["students"]["fay_always_equal"]["notes"]
    assert "5.1: the answer cell defines __eq__" in fay
    gus = graded["students"]["gus_patches_the_course"]["notes"]
    assert "5.1: the answer cell sets vars(helpers.core.exercises)['_same'], calls vars()" in gus
    assert "5.1: the check in the student's kernel said right, the grader's comparison of plain values says not quite" in gus
    assert "5.1: the course's modules changed while the answer cell ran: helpers.core.exercises._same" in gus
    assert "5.3: the answer cell sets helpers.exercises.check" in gus
    assert "5.3: the course's modules changed while the answer cell ran: helpers.core.exercises.check" in gus


def test_no_silent_zero_answers_elsewhere_a_dead_kernel_or_a_loop(graded):
    students = graded["students"]
    hal = students["hal_answers_in_new_cells"]
    assert hal["right"] == "3" and "5.1: answer found outside the answer cell" in hal["notes"]
    ivy = students["ivy_kernel_dies"]
    assert ivy["status"] == "kernel died" and "kernel died at exercise 5.1" in ivy["notes"]
    assert "5.1: the answer cell reaches os._exit" in ivy["notes"]
    jon = students["jon_endless_loop"]
    assert jon["status"] == "graded" and "5.2: timed out in its answer cell" in jon["notes"]
    detail = next(r["detail"] for r in graded["rows"] if r["student"] == "jon_endless_loop" and r["exercise"] == "5.2")
    assert "ran past 15 s" in detail


def test_bad_input_gets_its_own_words_and_subfolders_are_graded(graded):
    students = graded["students"]
    assert students["eve"]["status"] == "not a notebook" and "a text .ipynb file" in students["eve"]["notes"]
    assert students["kim_corrupted"]["status"] == "corrupted notebook"
    assert "the notebook's JSON is broken" in students["kim_corrupted"]["notes"]
    nell = students["nell"]
    assert nell["file"].endswith("nell/gina_ch06.ipynb") and nell["chapter"] == "ch05"
    assert "the file name says ch06 but the notebook is ch05's: graded as ch05" in nell["notes"]
    assert "graded 12 submissions" in graded["log"]


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
    assert per["5.1"]["right"] == "5" and per["5.1"]["not quite"] == "4" and per["5.1"]["error"] == "1"


def test_each_submission_ran_in_its_own_folder(graded):
    work = graded["out"] / "work"
    assert sorted(p.name for p in work.iterdir()) == ["ada", "ben", "cleo", "dan", "fay_always_equal",
                                                      "gus_patches_the_course", "hal_answers_in_new_cells",
                                                      "ivy_kernel_dies", "jon_endless_loop", "nell"]
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
    assert [c["id"] for c in nb["cells"] if c["id"].startswith("grader-5-3")] == [
        "grader-5-3-begin", "grader-5-3-between", "grader-5-3-end"]
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
                               "'answer_2' is not defined"), "5.3": ("not run", "")}, None, [])
    assert results_of(stopped)[1] == "cell 5 raised RuntimeError: boom"
    forged = copy.deepcopy(nb)   # a hook in the answer cell published a "right" before the real check's result
    right = copy.deepcopy(record)
    right["metadata"]["course_exercise"] = {"name": "exercise 5.1", "result": "right", "got": {"num": 5}}
    forged["cells"][ex["5.1"].check]["outputs"] = [right, record]
    results, _, notes = results_of(forged)
    assert results["5.1"] == ("error", "the check cell showed 2 results for this exercise")
    assert any(note.startswith("5.1: 2 results in its check cell") for note in notes)


def test_rebinds_flags_course_names_and_attribute_writes():
    course_names = {"source_name", "helpers", "f"}
    assert rebinds("answer_1 = 3", course_names, {"answer_1"}) == []
    assert rebinds("source_name = len\nanswer_3 = 1", course_names, {"answer_3"}) == ["rebinds source_name"]
    assert rebinds("helpers.exercises.check = print", course_names, set()) == ["sets helpers.exercises.check"]
    assert touches("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        self.n = 1\n"
                   "        return x\nanswer_2 = M", course_names | {"torch"}, {"answer_2"}) == []
    assert touches('vars(helpers.core.exercises)["_same"] = len', course_names, set()) == [
        "sets vars(helpers.core.exercises)['_same']", "calls vars()"]
    assert touches("import os\nos._exit(1)", course_names, set()) == ["reaches os._exit"]
    assert touches("class F:\n    __class__ = property(lambda s: int)\nanswer_1 = F()", course_names, {"answer_1", "F"}) == [
        "fakes __class__ in class F (an answer that passes for another type?)"]
    assert set(touches("import sys\nsys.modules['helpers'].x = 1", course_names, set())) == {
        "imports sys", "sets sys.modules['helpers'].x", "reaches sys.modules"}


def test_answers_are_judged_outside_the_kernel_on_plain_values():
    from helpers.core.exercises import plain

    notes = []
    record = {"name": "exercise 5.1", "result": "right", "answer": "<Whatever>", "tol": 1e-6,
              "got": {"object": "__main__.Whatever", "repr": "<Whatever>"}, "want": None, "sealed": True}
    assert _judge("5.1", record, {"5.1": plain(3)}, notes) == "not quite"
    assert notes == ["5.1: the check in the student's kernel said right, the grader's comparison of plain values "
                     "says not quite (graded not quite; read the answer cell)"]
    honest = dict(record, got=plain(3.0000000001), result="right")
    assert _judge("5.1", honest, {"5.1": plain(3)}, notes) == "right" and len(notes) == 1
    computed = dict(record, got=plain((1, [2])), want=plain((1, [2])), sealed=False)  # the kernel computed want
    assert _judge("5.9", computed, {}, notes) == "right"


def test_a_dead_kernel_is_placed_at_its_exercise():
    nb, _ = graded_notebook(course(), course())
    ex = {e.number: e for e in exercises(nb)}
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            c["execution_count"] = i if i <= ex["5.2"].answer else None
    assert _halted_exercise(nb) == ("5.2", ex["5.2"].answer)
    for c in nb["cells"]:
        c["execution_count"] = 1
    assert _halted_exercise(nb) == (None, None)  # it ran to the end
    nb["cells"][ex["5.3"].check]["metadata"]["papermill"] = {"status": "running"}  # killed at the timeout there
    assert _halted_exercise(nb) == ("5.3", ex["5.3"].check)


def test_bad_files_are_told_apart(tmp_path):
    (tmp_path / "notes.txt").write_text("my answer is 3")
    (tmp_path / "cut.ipynb").write_text('{"cells": [{"cell_type": "code", "sou')
    (tmp_path / "schema.ipynb").write_text('{"cells": 3}')
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4\xff\xfe")
    said = {p: read_submission(tmp_path / p)[1] for p in ("notes.txt", "cut.ipynb", "schema.ipynb", "a.pdf")}
    assert said["notes.txt"][0] == "not a notebook" and "a text .txt file" in said["notes.txt"][1]
    assert said["cut.ipynb"][0] == "corrupted notebook" and "JSON is broken" in said["cut.ipynb"][1]
    assert said["schema.ipynb"][0] == "corrupted notebook" and "not a Jupyter notebook in format 4" in said["schema.ipynb"][1]
    assert said["a.pdf"][0] == "not a notebook" and "binary .pdf" in said["a.pdf"][1]


def test_subfolders_are_searched_and_name_their_student(tmp_path):
    for rel in ("alice/ch05_variable_trackers.ipynb", "bob/ch05_a.ipynb", "bob/ch06_b.ipynb", "top.ipynb",
                "grades/work/alice/executed/x.ipynb", "grades/grades.md", ".hidden/x.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    got = [(f.relative_to(tmp_path).as_posix(), name) for f, name in submissions([str(tmp_path)])]
    assert got == [("alice/ch05_variable_trackers.ipynb", "alice"), ("bob/ch05_a.ipynb", "bob/ch05_a"),
                   ("bob/ch06_b.ipynb", "bob/ch06_b"), ("top.ipynb", "top")]


def test_a_file_named_for_another_chapter_gets_a_note():
    nb = {"metadata": {"course_student": {"chapter": "ch13"}}, "cells": []}
    assert chapter_note(nb, Path("gina_ch06.ipynb")) == ("the file name says ch06 but the notebook is ch13's: graded "
                                                          "as ch13 (a wrong file handed in?)")
    assert chapter_note(nb, Path("ch13_functionalization.ipynb")) is None and chapter_note(nb, Path("x.ipynb")) is None


def test_chapter_comes_from_the_stamp_the_file_name_or_the_setup_cell():
    nb = {"metadata": {}, "cells": [{"cell_type": "code", "source": 'helpers.setup("ch07")'}]}
    assert chapter_of(nb, Path("x.ipynb")) == "ch07"
    assert chapter_of(nb, Path("ch03_mine.ipynb")) == "ch03"
    assert chapter_of({"metadata": {"course_student": {"chapter": "ch05"}}, "cells": []}, Path("ch03.ipynb")) == "ch05"
    assert chapter_of({"metadata": {}, "cells": []}, Path("homework.ipynb")) is None


def test_answers_in_new_cells_or_cells_that_lost_their_tags_are_graded_and_noted():
    """Issue 29: nina's answers in new cells under the answer cells, omar's answer cells without metadata."""
    sub = course()
    ex = {e.number: e for e in exercises(sub)}
    sub["cells"].insert(ex["5.1"].answer + 1, {"cell_type": "code", "metadata": {}, "outputs": [],
                                               "execution_count": None, "source": "answer_1 = 3"})
    nb, notes = graded_notebook(course(), sub)
    got = {e.number: _source(nb["cells"][e.answer]) for e in exercises(nb)}
    assert got["5.1"].endswith("answer_1 = 3") and got["5.1"].startswith("answer_1 = None")
    assert notes == ["5.1: answer found outside the answer cell (1 cell(s) of the student's own under the exercise): "
                     "graded together with it"]
    book = load_notebook(CH05)  # hank hands in the book's notebook, solutions and all
    assert "the submission holds the book's solution cells" in graded_notebook(course(), book)[1][-1]
    omar = course()
    for cell in omar["cells"]:
        cell["metadata"] = {}
    omar["metadata"] = {}
    answer = next(c for c in omar["cells"] if _source(c).startswith("answer_3 = None"))
    answer["source"] = 'answer_3 = attr_source(local_source("self"), "w")'
    nb, notes = graded_notebook(course(), omar)
    assert _source(nb["cells"][exercises(nb)[2].answer]) == 'answer_3 = attr_source(local_source("self"), "w")'
    assert "5.3: no tagged answer cell (its cell tags were lost?); graded the student's cell(s) that set answer_3 " \
           "instead" in notes

