"""Generate the instructor guide (chapters/instructors.md) from the chapter notebooks (ch01)."""
from __future__ import annotations

import re
from pathlib import Path

from .run import CHAPTERS_DIR
from .student import book_chapters, exercises
from .verify import _source, load_notebook

GUIDE = CHAPTERS_DIR / "instructors.md"


HEADER = """# Instructor guide

Generated from the chapter notebooks by `python -m helpers guide` (a test checks it is current). For each
chapter: the reading and running time, what device it needs, and every exercise with its solution. In the
book the solutions are hidden behind a toggle under each exercise; each solution cell also checks itself,
so every run of the course proves the solutions right.

## Handing out and grading

Under each exercise's text come the course cells it needs, then an *answer* cell (the only cell a student
edits), the course's *check* cell and the hidden *solution* cell (cell tags `answer`, `check`, `solution`).

**Student edition.** `python -m helpers student [chapters] --out DIR` (or `make student`, with
`CHAPTERS="ch05 ch06"`) writes the book's chapters, or the chosen ones, without their solution cells and
without any output: the book's outputs can answer an exercise that asks to predict them (ch05 prints the
`EQUALS_MATCH` guards of `f` above exercise 5.1, which asks for those of `f2`: the same count).
`--outputs book` (`make student STUDENT_OUTPUTS=book`) keeps the book's outputs outside the exercises' own
cells; read the chapter before you hand that out. Where a check cell writes its expected value out (4.1's
`10`, 2.3's `"inductor"`), the copy holds only a seal of it (`helpers.exercises.sealed("sha256:…")`): the
check still says right or not quite, the value is not in the file. Where an exercise's check takes the answer
as the student writes it (a prediction or a count: 5.1's `answer_1`), a course cell's code that states that
value is changed too: a figure whose expectation states it is recorded instead (ch05's `equals_match_guards`,
`expect=helpers.exact(3)` → `helpers.record()`), a series reference value becomes `None`, a printed literal
or one an assert compares becomes the seal. What the code computes with stays
(`guard_trees(f, x, 3, [1, 2])`: an input, not an answer), and so do yes/no values (a seal of a two-valued
answer hides nothing) and the expected values of exercises whose check runs the student's code (6.3's 6
calls: the code must produce it). The prose is not changed, and a student who runs the chapter sees what it
measures, ch05's count of `f`'s `EQUALS_MATCH` guards among them: ask for predictions before the run. An
exercise can ask about code the chapter never runs and compute its expected value in the check by running
that code (6.1: six calls of a function `g` the chapter never compiles); then neither the file nor an output
before the check holds the value. Each copy runs to the end as it is (its checks say "not answered yet");
hand the files out or open them in Colab, whose setup cell installs the course from the book's repository, as
the book's notebooks do.

**Grading.** `python -m helpers grade FOLDER --jobs 2 --timeout 300` (or `make grade SUBMISSIONS=FOLDER`)
takes every file in the folder and its subfolders (one per student, as an LMS exports them: the subfolder
names the student). It rebuilds each submission from the course's student edition of its chapter, keeping
only the submission's answer cells (matched by exercise, not position), and runs it on CPU in a fresh
kernel, in its own folder with its own caches. `FOLDER/grades/grades.md` has a row per student (✅ right,
❌ not quite, — not answered, 💥 error, ⏱ timed out, ⏹ not run, and notes) and a count per exercise;
`grades.csv` (one row per student and exercise), `students.csv` and `exercises.csv` hold the same for a
spreadsheet, and `work/STUDENT/executed/` the notebook as it ran. GRADING_TIME

**Files.** A file that is not a notebook ("not a notebook": a text or binary file, what it starts with)
and a broken notebook ("corrupted notebook": where its JSON breaks, e.g. a download cut short) get
different words, each in "Not graded"; a notebook whose name names another chapter than its content is
graded as its content says, with a note. The tables name each submission's file beside its student, so
two students of one name (`ada.ipynb` and `ada/ch05_variable_trackers.ipynb`) are told apart.

### What grading in the student's kernel can and cannot prevent

The course's checks run in the student's own kernel, after the student's answer cells, so an answer cell
can run any Python before them. The grader cannot stop that; it can judge the answer where the student's
code cannot reach, watch what the code changed, undo some of it, and tell you what to read. The items
below name the mechanism; the planted submissions in `tests/pipeline/submissions/` and the grader's unit
tests try these cheats.

*Prevented: against these, the grade stays right.*

- An answer that declares itself equal (an `__eq__` that always says True, a faked `__class__`): the
  check sends the answer out as plain data (numbers, text, tuples, lists, dicts, sets; any other object as
  its type and repr only) and the grader compares it in its own process with the expected value that the
  book's check cell writes out (`helpers.core.exercises.plain`, `same_plain`). Where the check cell writes
  the expected value out, the hand-out holds only its seal (and no course cell's code states a
  prediction's value: see "Student edition" above), so a forged record needs the value itself.
- An edited check cell: the course's check runs instead (noted).
- A result published by student code into a check cell beside the real one: the exercise is not graded
  and a note says so.
- Hooks on later cells and a replaced compiler: IPython event callbacks (`events.register`), input and AST
  transformers, the display publisher and display functions a check's record goes through, `sys`'s
  display, trace and profile hooks, the notebook's `torch` and `helpers` names, `torch.compile` and the
  functions and classes torch defines in `torch.compiler`, `torch._dynamo` and
  `torch._dynamo.eval_frame`. The grader's cell after the
  answer cell (and after the check) compares them with what they were before and undoes the change, so
  the check runs with the real ones (a hook that would forge the next check's record never runs there).
- A compile-counting check fooled by a cached graph (5.2, 6.3: `compiles_for`, `compiled_runs_for` in
  `helpers.dynamo.exercises`): a call counts only if its result is what a graph run in that call returned,
  so running the graph compiled for another value and returning an eager result is "not quite", with the
  reason; so is a backend handed something that is not an FX graph (a fake `torch.compile`).
- An endless loop or a dead kernel costs one exercise: ⏱ after `--exercise-timeout` seconds, or the
  notebook runs again without the answer that killed it.

*Flagged: a note says what to read; the grade may still be wrong.*

- What the answer cell's text does that an answer need not do: rebinding a name the course's cells set;
  setting attributes (but `self.…`); writing through `vars()`, `globals()` or `__dict__`, also through an
  alias of a module (`m = helpers.core.exercises; setattr(m, ...)`, `import helpers.core.exercises as e;
  e.__dict__[...] = ...`); calling `exec`, `eval`, `setattr` and the like, also under another name
  (`_set = setattr`); importing `sys`, `gc`, `inspect`, `ctypes`, `importlib`, `builtins`, `signal`,
  `IPython`, `hashlib`, `threading`, `ipykernel`, `helpers.core` or `helpers.pipeline`; reaching the kernel
  (`get_ipython`, `events.register`, `display_pub`, `user_ns`); `os._exit`; defining `__eq__`; walking the
  interpreter's frames, which needs no import (`tb_frame`, `f_back`, `f_locals`, `f_globals`, `gi_frame`,
  `cr_frame`, also as a `getattr` name: `e.__traceback__.tb_frame.f_back` up to the caller's locals).
- Names in the course's modules (`helpers.*`) and `builtins` whose object changed while the answer cell ran
  (the grader's watch; during the check, in the modules that decide a result). These are not undone: a
  patched `helpers.core.exercises` can still change what the kernel sends out, which matters where the
  check computes its expected value in the notebook. Where the kernel's check said otherwise than the
  grader's comparison, a note says so.
- An answer set to a value the chapter computed (`answer_1 = kinds_f["EQUALS_MATCH"]` in 5.1): read from the
  notebook rather than predicted.
- Two files that are the same byte for byte, or whose answer cells are the same character for character
  (compared where they differ from the hand-out, when those cells hold at least 60 characters other than
  spaces: short answers such as `answer_1 = 3` coincide honestly); copies of the blank hand-out are not
  noted. Identical graded notebooks run once.
- Answers written in new cells under an exercise, or in cells that lost their tags: graded with it, and noted.

*Neither prevented nor flagged.*

- Changes the watch does not list: objects changed in place (the chapter's tensors, a list a check reads),
  torch's internals beyond the entry points above, other libraries; a thread started in an answer cell
  that acts later (the import of `threading` is flagged; what the thread does is not watched).
- Student code that runs inside a check (5.2's `compile_f`, 6.3's `call_h`) can reach the check's own
  objects and change the count it returns: 5.2's `compile_f` is handed the recording backend itself, 6.3's
  `call_h` only the compiled function, but it can walk up the frames to the check's `recorder` and add to
  what it saw (a 6.3 answer written in review did so and got 3/3). The grade may then be wrong; a note
  comes where the text sets an attribute, walks frames or uses a name listed above, not for calls on what
  it was handed (`backend.graphs.clear()`).
- Answers copied from elsewhere: the published book shows every solution behind a toggle, its download
  and Colab buttons give the full notebooks, this guide prints every solution, and a classmate's answer
  edited by one character is no longer "the same".
- A value the chapter computes and the student reads by running the expression the check uses (exercise
  3.3's `len(instructions(...))`): the seal covers only values written out. A seal is a hash: trying
  answers against it is trying answers against the check, which the exercise allows anyway.

*What to look at.* Every note, in `grades.md` or `students.csv`; for a note, the executed notebook in
`work/STUDENT/executed/` (the grader's own cells there print what they saw after each answer and check);
"right" answers to "predict" exercises, which cannot show that the student predicted; each pair noted as
copies. Run the grader as a user who can write nowhere but its output folder, on a machine with nothing
to lose: an answer cell runs with your rights.
"""


def _field(markdown: str, label: str) -> str:
    m = re.search(rf"\*\*{label}:\*\*\s*(.+?)(?:\n\s*\n|$)", markdown, re.S)
    return " ".join(m.group(1).split()) if m else "—"


def cross_document_glue(markdown: str, notebook: str) -> str:
    """Point the glue roles of a chapter's text at that chapter's notebook (``notebook::name``)."""
    def point(m):
        role, name = m.group(1), m.group(2)
        if "::" in name:
            return m.group(0)
        # glue:text reads "key:format" from the right, so a bare key from another document uses {glue}
        return f"{{glue}}`{notebook}::{name}`" if ":" not in name else f"{role}`{notebook}::{name}`"
    return re.sub(r"(\{glue(?::\w+)?\})`([^`]+)`", point, markdown)


def chapter_section(path: Path) -> str:
    nb = load_notebook(path)
    cells = nb["cells"]
    first = _source(cells[0])
    title = re.search(r"^#\s+(.+)$", first, re.M).group(1).strip()
    lines = [f"## {title}", "", f"- **Notebook:** `{path.name}`",
             f"- **Time:** {_field(first, 'Time')}", f"- **Device:** {_field(first, 'Device')}", ""]
    for ex in exercises(nb):
        src = _source(cells[ex.heading])
        lines += [cross_document_glue(src[re.search(r"^\*\*Exercise", src, re.M).start():].strip(), path.name), ""]
        if ex.solution is not None:
            lines += ["Solution:", "", "```python", _source(cells[ex.solution]).strip(), "```", ""]
    return "\n".join(lines)


def grading_time() -> str:
    """The sentence on grading time, from the recorded run (``grade --record``), never typed by hand."""
    import json

    from .grade import GRADING_RECORD

    if not GRADING_RECORD.exists():
        return "No grading run has been recorded yet (`python -m helpers grade FOLDER --record`)."
    r = json.loads(GRADING_RECORD.read_text())
    minutes, seconds = divmod(round(r["seconds"]), 60)
    return (f"Measured on {r['machine']} ({r['cores']} cores, CPU torch {r['torch']}, load average "
            f"{r['load_average']} at the end, {r['date']}): {r['submissions']} submissions of "
            f"{', '.join(r['chapters'])} took {minutes} min {seconds} s with `--jobs {r['jobs']}`, a median of "
            f"{r['median_s']} s per submission ({r['min_s']} to {r['max_s']} s), {r['jobs']} running at once.")


def render() -> str:
    """The guide: the header, then every chapter the book lists in _toc.yml (unfinished ones are left out)."""
    header = HEADER.replace("GRADING_TIME", grading_time())
    return header + "\n" + "\n".join(chapter_section(p) for p in book_chapters())


def write() -> Path:
    GUIDE.write_text(render())
    return GUIDE
