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

**Student edition.** `python -m helpers student [chapters] --out DIR` (or `make student`) writes the book's
chapters, or the chosen ones, without their solution cells; the answer and check cells lose their outputs,
the rest keep the book's GPU outputs unless you add `--no-outputs`. Each copy runs to the end as it is (its
checks say "not answered yet"); hand the files out or open them in Colab, whose setup cell installs the course.

**Grading.** `python -m helpers grade FOLDER --jobs 2 --timeout 300` takes every file in the folder. It
rebuilds each submission from the course's student edition of its chapter, keeping only the submission's
answer cells (matched by exercise, not position; a missing one is "not answered"), and runs it on CPU in a
fresh kernel, in its own folder with its own caches. `FOLDER/grades/grades.md` has a row per student
(✅ right, ❌ not quite, — not answered, 💥 error, ⏹ not run) and a count per exercise; `grades.csv` (one
row per student and exercise), `students.csv` and `exercises.csv` hold the same for a spreadsheet. A
submission that raises, runs out of time or is not a notebook gets its line and the grader moves on; an
edited check cell is ignored and noted. GRADING_TIME

**What the grader cannot prevent.** An answer cell is arbitrary Python run in the student's kernel: it can
rebind a name a check reads, patch `helpers`, or touch files. The grader flags answer cells that rebind a
course name or set an attribute ("read it" in the notes), but only reading the answer settles it; run the
grader as a user who can write nowhere but its output folder.
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
