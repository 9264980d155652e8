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
without any output: the book's outputs can answer an exercise that asks to predict them (ch06 shows
`seq_entries` before exercise 6.1 asks for it). `--outputs book` (`make student STUDENT_OUTPUTS=book`) keeps
the book's outputs outside the exercises' own cells; read the chapter before you hand that out. Where a
check cell writes its expected value out (6.1's `5`, 2.3's `"inductor"`), the copy holds only a seal of it
(`helpers.exercises.sealed("sha256:…")`): the check still says right or not quite, the value is not in the
file. Each copy runs to the end as it is (its checks say "not answered yet"); hand the files out or open
them in Colab, whose setup cell installs the course from the book's repository, as the book's notebooks do.

**Grading.** `python -m helpers grade FOLDER --jobs 2 --timeout 300` (or `make grade SUBMISSIONS=FOLDER`)
takes every file in the folder and its subfolders (one per student, as an LMS exports them: the subfolder
names the student). It rebuilds each submission from the course's student edition of its chapter, keeping
only the submission's answer cells (matched by exercise, not position), and runs it on CPU in a fresh
kernel, in its own folder with its own caches. `FOLDER/grades/grades.md` has a row per student (✅ right,
❌ not quite, — not answered, 💥 error, ⏱ timed out, ⏹ not run, and notes) and a count per exercise;
`grades.csv` (one row per student and exercise), `students.csv` and `exercises.csv` hold the same for a
spreadsheet, and `work/STUDENT/executed/` the notebook as it ran. GRADING_TIME

**What the grader catches, and what it notes.**

- *Answers are judged outside the student's notebook.* The check in the student's kernel sends the answer
  out as plain data (numbers, text, tuples, lists, dicts, sets; any other object only as its type and
  repr), and the grader compares it in its own process with the expected value: the one the book's check
  cell writes out, read from the book's notebook, or, where the check computes it, the one the kernel
  computed. An answer object whose `__eq__` always says True is an object, not a number: ❌, with the note
  "defines `__eq__`". Where the kernel's check said otherwise than the grader, a note says so.
- *Answer cells that reach into the course are noted* ("read it"): rebinding a name the course's cells
  set, setting attributes (but `self.…`), writing through `vars()`, `globals()` or `__dict__`, importing
  `sys`, `gc`, `inspect`, `ctypes`, `importlib`, `builtins`, `helpers.core` or `helpers.pipeline`, calling
  `exec`/`eval`/`setattr`, reaching `os._exit`. Cells the grader adds around each exercise also watch the
  course's modules while it runs and name what changed (`helpers.core.exercises._same`), or note that
  they could not report.
- *No silent zero.* Answers written in new cells under an exercise (or in cells that lost their tags) are
  graded with it, and noted. An answer that loops is stopped after `--exercise-timeout` seconds (default
  120): ⏱ for that exercise, the others graded. A kernel that dies (`os._exit`, a crash) or a notebook
  that runs past `--timeout` inside an exercise marks that exercise, and the notebook runs again without
  its answer so the other exercises are graded; the status says "kernel died" or "timeout" at exercise N.
  An edited check cell is ignored (the course's runs) and noted.
- *Files.* A file that is not a notebook ("not a notebook": a text or binary file, what it starts with)
  and a broken notebook ("corrupted notebook": where its JSON breaks, e.g. a download cut short) get
  different words, each in "Not graded"; a notebook whose name names another chapter than its content is
  graded as its content says, with a note.

**What the grader cannot prevent.** An answer cell is arbitrary Python run in the student's kernel, with
your rights: run the grader as a user who can write nowhere but its output folder, on a machine with
nothing to lose. A determined student can still write code the notes do not name (the notes are a list of
what to read, not a verdict), forge what the kernel sends out for an exercise whose expected value the
kernel computes, or answer from the book itself: the published book shows every solution behind a
toggle, its download and Colab buttons give the full notebooks, and this guide prints every solution.
Where a check computes its expected value in the notebook (e.g. exercise 3.3's `len(instructions(...))`,
needed because the value depends on the Python or torch version), a student who runs that expression sees
the value; the seal covers only values written out. A seal is a hash: trying answers against it is
trying answers against the check, which the exercise allows anyway.
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
