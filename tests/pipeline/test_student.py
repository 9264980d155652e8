"""Unit tests of helpers/pipeline/student.py: the exercise convention and the student edition."""
import ast
import json

import pytest
from conftest import ROOT, make_notebook

from helpers.pipeline.student import (NO_LITERAL, NOTEBOOK_META, book_chapters, convention_problems, defined_names,
                                      exercises, expected_literal, prediction_seals, role, seal_check, seal_stated,
                                      strip_magics, student_edition)
from helpers.pipeline.verify import _source, load_notebook

BOOK = {p.stem[:4]: p for p in book_chapters()}


def edition(chapter):
    path = BOOK[chapter]
    return load_notebook(path), student_edition(load_notebook(path), chapter, path.name)


def test_the_book_lists_chapters_from_the_toc_only():
    assert list(BOOK)[:2] == ["ch01", "ch02"] and len(BOOK) >= 11
    toc = (ROOT / "_toc.yml").read_text()
    assert all(f"chapters/{p.stem}" in toc for p in BOOK.values())


@pytest.mark.parametrize("chapter", list(BOOK))
def test_every_exercise_has_one_answer_one_check_and_one_solution_cell(chapter):
    nb = load_notebook(BOOK[chapter])
    found = exercises(nb)
    assert found and all(ex.number.startswith(f"{int(chapter[2:])}.") for ex in found)
    assert convention_problems(nb, BOOK[chapter].name) == []


def test_the_convention_check_catches_a_mixed_cell_and_a_wrong_name(tmp_path):
    heading = ("md", "**Exercise 9.1 — count.** How many?")
    mixed = make_notebook(tmp_path / "a.ipynb", heading,
                          ("code", 'answer_1 = None\nhelpers.exercises.check("exercise 9.1", answer_1, 3)'),
                          ("code", 'helpers.exercises.solution("exercise 9.1", 3, 3)'), tags={2: ["hide-cell", "solution"]})
    assert "expected exactly one answer, one check and one solution" in convention_problems(load_notebook(mixed), "a")[0]
    wrong = make_notebook(tmp_path / "b.ipynb", heading, ("code", "answer_1 = None"),
                          ("code", 'helpers.exercises.check("exercise 9.2", other, 3)'),
                          ("code", 'helpers.exercises.solution("exercise 9.1", 3, 3)'),
                          tags={1: ["answer"], 2: ["check"], 3: ["hide-cell", "solution"]})
    problems = " ".join(convention_problems(load_notebook(wrong), "b"))
    assert 'does not call helpers.exercises.check("exercise 9.1"' in problems
    assert "reads none of the names the answer cell defines (['answer_1'])" in problems


@pytest.mark.parametrize("chapter", list(BOOK))
def test_no_solution_text_survives_in_the_student_edition(chapter):
    book, student = edition(chapter)
    solutions = [book["cells"][ex.solution] for ex in exercises(book)]
    elsewhere = "\n".join(_source(c) for c in book["cells"] if c not in solutions)
    text = json.dumps(student, ensure_ascii=False)
    for cell in solutions:
        own = [ln.strip() for ln in _source(cell).splitlines() if len(ln.strip()) > 12 and ln.strip() not in elsewhere]
        assert own, "a solution with no line of its own cannot be checked"
        leaked = [ln for ln in own if json.dumps(ln, ensure_ascii=False)[1:-1] in text]
        assert leaked == []
        for out in cell.get("outputs", []):  # e.g. the solution's printed answer (unless the text itself shows it)
            shown = ("".join(out.get("text", "")) or "".join(out.get("data", {}).get("text/plain", ""))).strip()
            assert not shown or shown in elsewhere or json.dumps(shown, ensure_ascii=False)[1:-1] not in text
    assert not [c for c in student["cells"] if role(c) == "solution"]
    for ex in exercises(student):
        for r in ("answer", "check"):
            cell = student["cells"][getattr(ex, r)]
            assert cell["outputs"] == [] and cell["metadata"]["course"] == {"exercise": ex.number, "role": r}
    assert student["metadata"][NOTEBOOK_META]["exercises"] == [ex.number for ex in exercises(book)]


@pytest.mark.parametrize("chapter", list(BOOK))
def test_no_cell_left_in_the_student_edition_needs_a_name_only_a_solution_defined(chapter):
    book, student = edition(chapter)
    solutions = {ex.solution for ex in exercises(book)}
    code = [(i, _source(c)) for i, c in enumerate(book["cells"]) if c["cell_type"] == "code"]
    only_there = set().union(*(defined_names(s) for i, s in code if i in solutions)) - set().union(
        *(defined_names(s) for i, s in code if i not in solutions))
    kept = [_source(c) for c in student["cells"] if c["cell_type"] == "code"]
    assert set().union(*(free_names(s) for s in kept)) & only_there == set()


def free_names(source: str) -> set[str]:
    """Names a cell reads that it does not bind itself anywhere (locals, arguments and loop names excluded)."""
    nodes = list(ast.walk(ast.parse(strip_magics(source))))
    bound = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.arg for n in nodes if isinstance(n, ast.arg)}
    return {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def test_defined_names_reads_assignments_defs_and_imports():
    src = "import os.path\nfrom a import b as c\nx, (y, z) = 1, (2, 3)\ndef f(): q = 1\nclass K: pass\n%pip x"
    assert defined_names(src) == {"os", "c", "x", "y", "z", "f", "K"}


def student_command(*args) -> int:
    """``python -m helpers student ...`` in this process (its argument parsing and writing, without a fresh
    interpreter per call; the `python -m helpers` entry itself runs in test_grade.py's grading)."""
    from helpers.__main__ import main

    return main(["student", *map(str, args)])


def test_student_command_writes_the_chosen_chapters_without_outputs(tmp_path):
    assert student_command("ch05", "--out", tmp_path, "--no-outputs") == 0
    nb = load_notebook(tmp_path / BOOK["ch05"].name)
    assert [c for c in nb["cells"] if c["cell_type"] == "code" and c["outputs"]] == []
    assert "Student edition" in _source(nb["cells"][1])


@pytest.mark.parametrize("chapter", list(BOOK))
def test_no_expected_value_is_written_in_a_student_check_cell(chapter):
    """Issue 29: a check cell's written-out answer (4.1's `10`, 2.3's "inductor") is sealed in the copy handed out,
    and the sealed check still says right to the book's own solution value."""
    from helpers.core.exercises import _same

    book, student = edition(chapter)
    for ex_b, ex_s in zip(exercises(book), exercises(student)):
        src = _source(student["cells"][ex_s.check])
        assert expected_literal(src, ex_s.number) is NO_LITERAL, src
        value = expected_literal(_source(book["cells"][ex_b.check]), ex_b.number)
        if value is not NO_LITERAL:
            assert "helpers.exercises.sealed(" in src
            namespace = {"helpers": __import__("helpers")}
            sealed = eval(src[src.index("helpers.exercises.sealed("):].split(")")[0] + ")", namespace)
            assert _same(value, sealed, 1e-6, f"exercise {ex_b.number}")


def test_sealing_keeps_the_rest_of_the_check_cell():
    src = 'x = 1\nhelpers.exercises.check("exercise 4.1", answer_1, 10, hint="one → two")\n'
    sealed = seal_check(src, "4.1")
    assert sealed.startswith('x = 1\nhelpers.exercises.check("exercise 4.1", answer_1, helpers.exercises.sealed("sha256:')
    assert sealed.endswith('"), hint="one → two")\n')
    computed = 'helpers.exercises.check("exercise 3.3", answer_3, len(instructions(k)))'
    assert seal_check(computed, "3.3") == computed  # computed in the notebook: the value is not in the cell


def test_the_default_student_edition_carries_no_output_that_answers_a_prediction():
    """Issue 29: the book's outputs can answer a "predict" exercise (ch06's printed `seq_entries = 5 entries
    [✓ == 5]` did answer 6.1 before 6.1 asked about a function of its own): the default copy has none."""
    book = load_notebook(BOOK["ch06"])
    assert "seq_entries = 5" in json.dumps(book)  # the book shows it (the H200 run)
    student = student_edition(book, "ch06", BOOK["ch06"].name)
    assert [c for c in student["cells"] if c["cell_type"] == "code" and c["outputs"]] == []
    kept = student_edition(load_notebook(BOOK["ch06"]), "ch06", BOOK["ch06"].name, keep_outputs=True)
    assert any(c["outputs"] for c in kept["cells"] if c["cell_type"] == "code")  # the instructor's choice
    for ex in exercises(kept):
        assert all(kept["cells"][j].get("outputs") in ([], None) for j in ex.code)


def test_the_student_edition_installs_the_course_like_the_book():
    """Issue 29 (the Colab student): the copy keeps the book's setup cell, which installs the course from its
    repository when helpers is missing, and uses only helpers.exercises names that the installed course has."""
    import helpers

    book, student = edition("ch06")
    setup = next(_source(c) for c in book["cells"] if "%pip install" in _source(c))
    assert "git+https://github.com/" in setup and setup in [_source(c) for c in student["cells"]]
    assert callable(helpers.exercises.sealed) and callable(helpers.exercises.check)


def test_student_command_chooses_whether_the_books_outputs_go_along(tmp_path):
    assert student_command("ch06", "--out", tmp_path / "a") == 0
    assert "seq_entries = 5" not in (tmp_path / "a" / BOOK["ch06"].name).read_text()
    assert student_command("ch06", "--out", tmp_path / "b", "--outputs", "book") == 0
    assert "seq_entries = 5" in (tmp_path / "b" / BOOK["ch06"].name).read_text()


def test_exercise_1_1s_check_is_not_fooled_by_an_always_equal_prediction(capsys):
    """Issue 29: the one check that compared an answer with == inside its judge (1.1's prediction)."""
    import warnings

    import torch

    import helpers

    book = load_notebook(BOOK["ch01"])
    ex = next(e for e in exercises(book) if e.number == "1.1")
    course_cell = next(_source(book["cells"][j]) for j in ex.code if "def clip_or_shift" in _source(book["cells"][j]))

    class Whatever:
        def __eq__(self, other):
            return True

    for matches, verdict in ((Whatever(), "not quite"), (False, "right")):
        namespace = {"torch": torch, "helpers": helpers, "__name__": "ch01_check"}
        exec(course_cell, namespace)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            namespace["traced_1"] = torch.jit.trace(namespace["clip_or_shift"], namespace["example"])
        namespace["matches_1"] = matches
        exec(_source(book["cells"][ex.check]), namespace)
        assert verdict in capsys.readouterr().out


def test_a_hand_out_does_not_state_a_predictions_answer_in_a_course_cell():
    """Issue 29 (review, session 3): the default ch06 edition kept `helpers.figure("seq_entries", ...,
    expect=helpers.exact(5))`, the number the old "predict" exercise 6.1 asked for. ch05 asks 5.1 for a count
    its guard-kinds cell states (`expect=helpers.exact(3)`, the series' reference 3): the figure is recorded
    instead, the reference value left out; the chapter's inputs stay."""
    from helpers.core.exercises import digest

    book, student = edition("ch05")
    assert prediction_seals(book) == prediction_seals(student) == {"5.1": digest("exercise 5.1", 3)}
    code = "\n".join(_source(c) for c in student["cells"] if c["cell_type"] == "code")
    assert 'helpers.figure("equals_match_guards", kinds_f["EQUALS_MATCH"], "guards", expect=helpers.record())' in code
    assert 'helpers.reference("series_equals_match", None, "guards"' in code
    assert "helpers.exact(3)" not in code and '"series_equals_match", 3' not in code


def test_exercise_6_1_asks_about_calls_the_chapter_never_made(capsys):
    """Issue 29: 6.1 asked to predict ("without scrolling up") the entry count the chapter had just printed,
    and its check wrote the 5 out. It now asks about g, a function no cell before it compiles, called in a
    sequence the chapter never runs; the check makes the calls itself and writes no expected value. Run
    here on this torch: the check says right to the solution's count and not quite to the old section's."""
    import re
    import types

    import torch

    import helpers
    from helpers.dynamo.guards import entry_ids
    from helpers.dynamo.state import cache_entries, clear_compile_state

    book = load_notebook(BOOK["ch06"])
    ex = next(e for e in exercises(book) if e.number == "6.1")
    heading, check = _source(book["cells"][ex.heading]), _source(book["cells"][ex.check])
    assert "scrolling" not in heading and "g(x.double(), 9)" in heading
    assert expected_literal(check, "6.1") is NO_LITERAL and "6.1" not in prediction_seals(book)
    before = "\n".join(_source(c) for c in book["cells"][:ex.heading])
    assert not re.search(r"\bg\(", before)  # g is neither defined nor called before the exercise
    course = [_source(book["cells"][j]) for j in ex.code if j < ex.answer]
    assert any(src.startswith("def g(x, k):") for src in course)
    solution = _source(book["cells"][ex.solution])
    assert "helpers.exercises.solution(\"exercise 6.1\", g_entries_after_six_calls(show=True), 4)" in solution

    for answer, verdict in ((4, "exercise 6.1: ✅ right."), (5, "exercise 6.1: ❌ not quite (5).")):
        namespace = {"__name__": "__main__", "torch": torch, "helpers": helpers,  # a notebook's module name:
                     "ENV": types.SimpleNamespace(device="cpu"),  # torch 2.11 wraps g otherwise (entries on inner)
                     "clear_compile_state": clear_compile_state, "cache_entries": cache_entries,
                     "entry_ids": entry_ids, "answer_1": answer}
        for src in course:
            exec(src, namespace)
        exec(check, namespace)
        assert capsys.readouterr().out.startswith(verdict)


def test_seal_stated_seals_what_a_cell_states_and_keeps_its_inputs():
    from helpers.core.exercises import digest

    seals = {"9.1": digest("exercise 9.1", 2), "9.2": digest("exercise 9.2", (0, 1))}
    src = ('y = f(x, 2) + 2\nhelpers.figure("a", y, "", expect=helpers.exact(by_torch={"2.11": 2, "2.13": 3}))\n'
           'helpers.figure("b", y, "", expect=helpers.exact(2 * n[-1]))\nhelpers.figure("c", y, "", expect=helpers.exact(True))\n'
           'helpers.reference("r", (0, 1), "", source="s", on="l40s")\nprint("two:", 2)\nif y:\n    2\n'
           'assert g(0) == 2 and g(1) < 2\n')
    sealed = seal_stated(src, seals)
    two = f'helpers.exercises.sealed("{seals["9.1"]}", "exercise 9.1")'
    assert sealed.splitlines() == [
        "y = f(x, 2) + 2", 'helpers.figure("a", y, "", expect=helpers.record())',
        'helpers.figure("b", y, "", expect=helpers.exact(2 * n[-1]))',  # computed: states no literal
        'helpers.figure("c", y, "", expect=helpers.exact(True))',  # a bool is no count (True hashes as 1)
        'helpers.reference("r", None, "", source="s", on="l40s")',
        f'print("two:", {two})', "if y:", f"    {two}", f"assert g(0) == {two} and g(1) < 2"]
    assert seal_stated(sealed, seals) == sealed and seal_stated(src, {}) == src
    import helpers

    namespace = {"helpers": helpers, "g": lambda v: 2 - v}
    exec(sealed.splitlines()[-1], namespace)  # the sealed assert still holds: the seal compares by digest
    assert eval(two, namespace) != 3 and eval(two, namespace) == 2.0


STATING_CALLS = ("figure", "reference", "print", "display", "exact", "exact_by_python", "band", "record", "words")


def stated_literals(source: str):
    """Every literal (not a bool) that a cell states rather than computes with: an argument of a figure,
    reference, print or display call or of an expectation (at any depth of tuples, lists, dicts and keyword
    arguments), a literal in an assert, a cell's bare expression; a negative number as one literal. A literal
    that is an index, an operand or another function's argument is an input. Written apart from
    ``seal_stated`` (it also reads figure names and values, and asserts)."""
    tree = ast.parse(strip_magics(source))
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(parent.get(node), ast.UnaryOp):
            continue
        if not isinstance(node, (ast.Constant, ast.UnaryOp, ast.Tuple, ast.List, ast.Set, ast.Dict)):
            continue
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError):
            continue
        if isinstance(value, bool) or value is None:
            continue
        up = node
        while up in parent:
            up, below = parent[up], up
            if isinstance(up, ast.Assert) or isinstance(up, ast.Expr) and up.value is node or (
                    isinstance(up, ast.Call) and below is not up.func
                    and ast.unparse(up.func).rsplit(".", 1)[-1] in STATING_CALLS):
                yield value, ast.unparse(up)[:100]
                break
            if not isinstance(up, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.keyword, ast.UnaryOp, ast.Compare,
                                   ast.BoolOp)):
                break  # an index, an operand, another call's argument: an input


@pytest.mark.parametrize("chapter", list(BOOK))
def test_no_course_cell_of_a_student_edition_states_a_predictions_answer(chapter):
    """Issue 29 (review, session 3): no literal that a student notebook's code cells state (a figure's
    expectation, a reference value, a printed literal, an assert) hashes to the seal of an exercise whose
    check takes the answer as written (a prediction or a count). Left out by design: an exercise whose
    check runs the answer (6.3's `compiled_h_runs(answer_3)`: its 6 in plain sight answers nothing), a bool
    (a yes/no: True hashes as 1), and literals the chapter computes with (`x + 1`, `f(x, 5)`)."""
    from helpers.core.exercises import digest

    book, student = edition(chapter)
    seals = prediction_seals(book)
    assert prediction_seals(student) == seals
    stated = [(n, why) for c in student["cells"] if c["cell_type"] == "code"
              for value, why in stated_literals(_source(c)) for n, seal in seals.items()
              if digest(f"exercise {n}", value) == seal]
    assert stated == []
