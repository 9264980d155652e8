"""Unit tests of helpers/pipeline/grade.py, and one grading of the planted submissions in submissions/ (ch05).

One class, graded once (a module fixture) and asserted by many tests; each planted file carries several
cheats or failures, one per exercise (make_submissions.py says which), so that ch05 runs few times. ada
answers everything right; ada/ch05_variable_trackers.ipynb is ada.ipynb byte for byte and pat hands in
ada's answers in a file of its own (both graded from ada's run); ben gets 5.1 wrong, his 5.2 raises half
way, he deleted 5.3's cells and some text, and lost the cell stamps; dan edited 5.1's check, answers 5.1
with the chapter's own value, 5.2 with a cached-graph cheat and 5.3 by rebinding the check's helper; gus
cheats on the kernel (an always-equal object, an IPython hook forging sealed checks, the comparison
patched, torch.compile faked, the check replaced); abe/gina_ch06.ipynb is ch05 under a ch06 name in a
subfolder, answers in new cells, kills the kernel in 5.1 and loops in 5.2; eve.ipynb is a text file, kim's
notebook is cut short.
"""
import copy
import csv
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from helpers.pipeline.grade import (Graded, _halted_exercise, _judge, chapter_note, chapter_of, copied_from_chapter,
                                    graded_notebook, loose_cells, note_duplicates, read_submission, rebinds,
                                    results_of, submissions, touches)
from helpers.pipeline.student import exercises, student_edition
from helpers.pipeline.verify import _source, load_notebook

SUBMISSIONS = Path(__file__).parent / "submissions"
CH05 = ROOT / "chapters" / "ch05_variable_trackers.ipynb"
CH06 = ROOT / "chapters" / "ch06_guards.ipynb"
ADA2 = "ada/ch05_variable_trackers.ipynb"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("grades")
    proc = subprocess.run([sys.executable, "-m", "helpers", "grade", str(SUBMISSIONS), "--out", str(out),
                           "--jobs", "2", "--timeout", "240", "--exercise-timeout", "10"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with (out / "grades.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    with (out / "students.csv").open() as fh:
        students = {r["file"]: r for r in csv.DictReader(fh)}
    return {"out": out, "rows": rows, "students": students, "log": proc.stdout}


def test_planted_submissions_get_the_courses_verdicts(graded):
    got = {(r["file"].removesuffix(".ipynb"), r["exercise"]): r["result"] for r in graded["rows"]}
    ada = {("ada", "5.1"): "right", ("ada", "5.2"): "right", ("ada", "5.3"): "right"}
    assert got == {
        **ada, **{(k.replace("ada", n), e): r for (k, e), r in ada.items() for n in ("ada/ch05_variable_trackers",
                                                                                    "pat_same_answers")},
        ("ben", "5.1"): "not quite", ("ben", "5.2"): "error", ("ben", "5.3"): "not answered",
        ("dan", "5.1"): "right", ("dan", "5.2"): "not quite", ("dan", "5.3"): "right",
        ("eve", ""): "not a notebook",
        # issue 29: the cheats fail, the honest answers in odd places count, a dead kernel or a loop costs one exercise
        ("gus_cheats_on_the_kernel", "5.1"): "not quite", ("gus_cheats_on_the_kernel", "5.2"): "not quite",
        ("gus_cheats_on_the_kernel", "5.3"): "not quite",
        ("kim_corrupted", ""): "corrupted notebook",
        ("abe/gina_ch06", "5.1"): "error", ("abe/gina_ch06", "5.2"): "timeout", ("abe/gina_ch06", "5.3"): "right"}
    assert graded["students"]["ben.ipynb"]["status"] == "graded" and graded["students"]["dan.ipynb"]["status"] == "graded"
    error = next(r["detail"] for r in graded["rows"] if r["student"] == "ben" and r["exercise"] == "5.2")
    assert error == "answer cell raised ZeroDivisionError: division by zero"


def notes(graded, file):
    return graded["students"][file]["notes"]


def test_cheats_get_a_note_an_instructor_can_act_on(graded):
    gus = notes(graded, "gus_cheats_on_the_kernel.ipynb")
    assert "5.1: the answer cell imports hashlib" in gus and "defines __eq__ (an answer that decides its own equality?)" in gus
    assert "5.2: the answer cell sets vars(helpers.core.exercises)['_same'], " in gus and "calls vars()" in gus
    assert "5.2: the check in the student's kernel said right, the grader's comparison of plain values says not quite" in gus
    assert "5.2: the course's modules changed while the answer cell ran: helpers.core.exercises._same" in gus
    assert "5.3: the answer cell calls setattr(), sets helpers.core.exercises._same (through setattr)" in gus
    assert "sets helpers.exercises.check" in gus
    assert "5.3: the course's modules changed while the answer cell ran: helpers.core.exercises._same, " \
           "helpers.core.exercises.check" in gus


def test_hooks_on_the_kernel_and_a_fake_torch_compile_are_flagged_and_undone(graded):
    """Issue 29 (session 3): an IPython hook that forges the sealed checks' records (found by hashing) and a
    torch.compile replaced through an aliased setattr: named statically and by the grader's watch, and undone
    before the check runs (5.1 is then judged on the always-equal object alone, 5.2 with the real compile)."""
    gus = notes(graded, "gus_cheats_on_the_kernel.ipynb")
    assert "registers an IPython event callback (get_ipython().events.register" in gus
    assert "reaches get_ipython (the kernel itself)" in gus and "reaches get_ipython().display_pub" in gus
    assert "imports hashlib (trying answers against a sealed value?)" in gus
    assert "5.1: the kernel's hooks changed while the answer cell ran: IPython pre_run_cell callback _helper added; " \
           "undone before the next cell" in gus
    assert "5.2: the answer cell" in gus and "calls setattr() (as _set), sets torch.compile (through setattr)" in gus
    assert "5.2: the kernel's hooks changed while the answer cell ran: torch.compile replaced" in gus
    assert "results in its check cell" not in gus  # the hook was gone before 5.1's check ran: nothing forged
    detail = {r["exercise"]: r["detail"] for r in graded["rows"] if r["student"] == "gus_cheats_on_the_kernel"}
    assert detail["5.2"] == "2"  # the unchanged compile_f, with the real torch.compile put back: two graphs


def test_a_cached_graph_and_a_copied_chapter_value_are_caught(graded):
    """Issue 29 (session 3): 5.2 answered by running the graph compiled for n = 3 and returning eager results
    (the judge keeps what each graph returned), 5.1 answered with the chapter's own computed value."""
    dan = notes(graded, "dan.ipynb")
    detail = next(r["detail"] for r in graded["rows"] if r["student"] == "dan" and r["exercise"] == "5.2")
    assert "'the result for 4 is not what the graph run in that call returned'" in detail
    assert "5.1: the answer is the chapter's own kinds_f['EQUALS_MATCH'], a value the notebook computed" in dan


def test_no_silent_zero_answers_elsewhere_a_dead_kernel_or_a_loop(graded):
    abe = notes(graded, "abe/gina_ch06.ipynb")
    assert "5.3: answer found outside the answer cell" in abe
    assert graded["students"]["abe/gina_ch06.ipynb"]["status"] == "kernel died"
    assert "kernel died at exercise 5.1" in abe and "5.1: the answer cell reaches os._exit" in abe
    assert "5.2: timed out in its answer cell" in abe
    detail = next(r["detail"] for r in graded["rows"] if r["student"] == "abe" and r["exercise"] == "5.2")
    assert "ran past 10 s" in detail


def test_bad_input_gets_its_own_words_and_subfolders_are_graded(graded):
    students = graded["students"]
    assert students["eve.ipynb"]["status"] == "not a notebook" and "a text .ipynb file" in students["eve.ipynb"]["notes"]
    assert students["kim_corrupted.ipynb"]["status"] == "corrupted notebook"
    assert "the notebook's JSON is broken" in students["kim_corrupted.ipynb"]["notes"]
    abe = students["abe/gina_ch06.ipynb"]
    assert abe["student"] == "abe" and abe["chapter"] == "ch05"
    assert "the file name says ch06 but the notebook is ch05's: graded as ch05" in abe["notes"]
    assert "graded 9 submissions" in graded["log"]


def test_copies_get_a_note_and_the_table_names_each_file(graded):
    """Issue 29 (session 3): a file handed in twice (byte for byte) and the same answers in another file are
    noted on each; two students of one name are told apart by the file column; identical notebooks run once."""
    students = graded["students"]
    assert students[ADA2]["student"] == students["ada.ipynb"]["student"] == "ada"
    assert f"byte for byte the same file as ada ({ADA2})" in students["ada.ipynb"]["notes"]
    assert "byte for byte the same file as ada (ada.ipynb)" in students[ADA2]["notes"]
    assert "the same answers, character for character, as ada (ada/ch05_variable_trackers.ipynb), ada (ada.ipynb)" \
        in students["pat_same_answers.ipynb"]["notes"]
    assert "the same answers, character for character, as pat_same_answers (pat_same_answers.ipynb)" in \
        students[ADA2]["notes"]  # not as ada.ipynb: that is the same file, already said
    assert "the same answers" not in students["ben.ipynb"]["notes"] + students["dan.ipynb"]["notes"]
    md = (graded["out"] / "grades.md").read_text()
    assert "| student | file | 5.1 | 5.2 | 5.3 | right | notes |" in md
    assert f"| ada | {ADA2} | ✅ right | ✅ right | ✅ right | 3/3 | byte for byte" in md
    assert "| eve | eve.ipynb | not a notebook" in md


def test_the_grader_says_what_it_ignored_and_what_to_read(graded):
    dan = notes(graded, "dan.ipynb")
    assert "5.1: check cell edited (the course's check was used)" in dan
    assert "5.3: the answer cell rebinds source_name (read it)" in dan
    assert notes(graded, "ben.ipynb") == "5.3: no answer cell in the submission"
    md = (graded["out"] / "grades.md").read_text()
    assert "## Not graded" in md
    with (graded["out"] / "exercises.csv").open() as fh:
        per = {r["exercise"]: r for r in csv.DictReader(fh)}
    assert per["5.1"]["right"] == "4" and per["5.1"]["not quite"] == "2" and per["5.1"]["error"] == "1"


def test_each_submission_ran_in_its_own_folder(graded):
    work = graded["out"] / "work"
    assert sorted(p.name for p in work.iterdir()) == ["abe", "ada", "ada-2", "ben", "dan", "gus_cheats_on_the_kernel",
                                                      "pat_same_answers"]
    for p in work.iterdir():
        assert (p / "executed" / CH05.name).exists()
    shared = sorted(p.name for p in work.iterdir() if not (p / "cache").is_dir())  # ran as another's twin
    assert shared in (["ada", "pat_same_answers"], ["ada-2", "pat_same_answers"], ["ada", "ada-2"])


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



def test_kernel_hooks_and_aliased_writes_to_the_course_are_named():
    """Issue 29 (session 3): what an answer cell reaches in the kernel or the course, through an alias too."""
    names = {"helpers", "torch", "seq_entry_count"}
    assert touches('m = helpers.core.exercises\nsetattr(m, "_same", len)', names, set()) == [
        "calls setattr()", "sets helpers.core.exercises._same (through setattr)"]
    assert "sets e.__dict__['_same'] (e is helpers.core.exercises)" in touches(
        'import helpers.core.exercises as e\ne.__dict__["_same"] = len', names, set())
    assert "sets e._same (e is helpers.core.exercises)" in touches(
        "from helpers.core import exercises as e\ne._same = len", names, set())
    assert touches('_set = setattr\n_set(torch, "compile", len)', names, set()) == [
        "uses setattr as a value (an alias of it calls it unnamed)", "calls setattr() (as _set)",
        "sets torch.compile (through setattr)"]
    hook = touches('get_ipython().events.register("pre_run_cell", print)', names, set())
    assert hook[0].startswith("registers an IPython event callback") and "reaches get_ipython (the kernel itself)" in hook
    assert "reaches ip.display_pub (the kernel's machinery)" in touches("ip = get_ipython()\nip.display_pub.publish(data={})",
                                                                         names, set())
    assert touches("import hashlib", names, set()) == ["imports hashlib (trying answers against a sealed value?)"]
    assert touches("d = {}\nd['a'] = 1\nanswer_1 = len(d)", names, {"answer_1"}) == []


def test_an_answer_copied_from_the_chapters_own_value_gets_a_note():
    """Issue 29 (session 3): an answer set to a value the chapter computed (ch06's seq_entry_count, the count of
    its own call sequence, as 6.1's answer) rather than predicted or worked out gets a note, right or wrong."""
    values = {"seq_entry_count", "x", "rec"}
    assert copied_from_chapter("answer_1 = seq_entry_count", values, {"answer_1"}) == ["seq_entry_count"]
    assert copied_from_chapter("answer_1 = int(rec.compiles)", values, {"answer_1"}) == ["rec.compiles"]
    assert copied_from_chapter("answer_1 = 5", values, {"answer_1"}) == []
    assert copied_from_chapter("answer_2 = (x.double(), 3)", values, {"answer_2"}) == []  # worked out from x
    assert copied_from_chapter("seq_entry_count = 5\nanswer_1 = seq_entry_count", values, {"answer_1"}) == []
    ch06 = student_edition(load_notebook(CH06), "ch06", CH06.name)
    sub = copy.deepcopy(ch06)
    sub["cells"][exercises(sub)[0].answer]["source"] = "answer_1 = seq_entry_count"
    _, said = graded_notebook(ch06, sub)
    assert said == ["6.1: the answer is the chapter's own seq_entry_count, a value the notebook computed (copied "
                    "rather than predicted or worked out? read it)"]


def test_duplicates_are_noted_but_short_equal_answers_are_not():
    a, b, c = Graded("a", "a.ipynb", digest="1", answers="x"), Graded("a", "b/a.ipynb", digest="1", answers="x"), \
        Graded("c", "c.ipynb", digest="2", answers="x")
    blank = Graded("d", "d.ipynb", digest="3", answers="")
    blank2 = Graded("e", "e.ipynb", digest="4", answers="")
    handout, handout2 = (Graded(n, f"{n}.ipynb", digest="5", answers="", blank=True) for n in ("f", "g"))
    note_duplicates([a, b, c, blank, blank2, handout, handout2])
    assert handout.notes == handout2.notes == []  # two copies of the blank hand-out: nothing of theirs to compare
    assert a.notes == ["byte for byte the same file as a (b/a.ipynb) (copied? read both)",
                       "the same answers, character for character, as c (c.ipynb) (copied? read both)"]
    assert c.notes == ["the same answers, character for character, as a (a.ipynb), a (b/a.ipynb) (copied? read both)"]
    assert blank.notes == blank2.notes == []


PLANTED = Path(__file__).parent / "planted"


def test_an_answer_that_walks_the_interpreters_frames_gets_a_note():
    """Issue 29 (review, session 3): sly's 6.3 reaches the check's recorder without an import, from a
    traceback's tb_frame up (f_back, f_locals), and appends to its outputs: 3/3 and no note in the review's
    run. The planted file is read here, not run (a ch06 run would cost the suite a minute): the note is
    the answer text's."""
    ch06 = student_edition(load_notebook(CH06), "ch06", CH06.name)
    _, said = graded_notebook(ch06, load_notebook(PLANTED / "sly_walks_frames_ch06.ipynb"))
    assert said == ["6.3: the answer cell walks the interpreter's frames (tb_frame, f_back, f_locals: code that reaches "
                    "the locals of whatever called it, a check's recording backend included) (read it)"]
    names = {"helpers", "torch"}
    assert touches("def g():\n    yield 1\nanswer_1 = getattr(g().gi_frame, 'f_globals')", names, {"answer_1", "g"}) == [
        "walks the interpreter's frames (gi_frame, f_globals: code that reaches the locals of whatever called it, a "
        "check's recording backend included)"]
    assert touches("async def c():\n    pass\nanswer_1 = c().cr_frame", names, {"answer_1", "c"})[0].startswith(
        "walks the interpreter's frames (cr_frame")
    assert touches("frames = [1]\nanswer_1 = frames[0]", names, {"answer_1"}) == []


def test_a_check_that_raised_on_an_answer_of_another_kind_says_so_plainly():
    """Issue 29 (review, session 3): 6.2 answered with an object where a tuple is asked showed "check raised
    TypeError: __main__.make_f.<locals>.f() argument after * must be ...": the course's internal names."""
    nb = course()
    ex = {e.number: e for e in exercises(nb)}
    nb["cells"][ex["5.1"].check]["outputs"] = [{"output_type": "error", "ename": "TypeError", "traceback": [],
                                                "evalue": "__main__.make_f.<locals>.f() argument after * must be an "
                                                          "iterable, not Yes"}]
    assert results_of(nb)[0]["5.1"] == ("error", "check raised TypeError: the answer is not of the kind the exercise "
                                                 "asks for (f() argument after * must be an iterable, not Yes)")


def test_a_course_cell_of_an_earlier_hand_out_is_not_the_students():
    """A copy handed out before the course cells were sealed (issue 29, session 3) keeps `expect=
    helpers.exact(3)` in ch05's guard-kinds cell (the count prediction 5.1 asks for): still the course's cell,
    not an answer of the student's."""
    ch05 = course()
    book = load_notebook(CH05)
    old = copy.deepcopy(ch05)
    for cell, was in zip((c for c in old["cells"] if c["cell_type"] == "code"),
                         (c for c in book["cells"] if c["cell_type"] == "code")):
        if '"equals_match_guards"' in _source(was):
            assert _source(cell) != _source(was)  # the current hand-out seals it
            cell["source"] = _source(was)
    assert 'expect=helpers.exact(3))' in str(old) and loose_cells(old, ch05) == []
