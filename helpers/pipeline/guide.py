"""Generate the instructor guide (chapters/instructors.md) from the chapter notebooks (ch01)."""
from __future__ import annotations

import re
from pathlib import Path

from .run import CHAPTERS_DIR, chapters
from .verify import _source, load_notebook

GUIDE = CHAPTERS_DIR / "instructors.md"


HEADER = """# Instructor guide

Generated from the chapter notebooks by `python -m helpers guide` (a test checks it is current). For each
chapter: the reading and running time, what device it needs, and every exercise with its solution. In the
book the solutions are hidden behind a toggle under each exercise; each solution cell also checks itself,
so every run of the course proves the solutions right.
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
    for i, cell in enumerate(cells):
        src = _source(cell)
        m = re.search(r"^\*\*Exercise", src, re.M) if cell.get("cell_type") == "markdown" else None
        if not m:
            continue
        lines += [cross_document_glue(src[m.start():].strip(), path.name), ""]
        solution = next((_source(c) for c in cells[i + 1:i + 4]
                         if c.get("cell_type") == "code" and "hide-cell" in c.get("metadata", {}).get("tags", [])), None)
        if solution:
            lines += ["Solution:", "", "```python", solution.strip(), "```", ""]
    return "\n".join(lines)


def render() -> str:
    return HEADER + "\n" + "\n".join(chapter_section(p) for p in chapters().values())


def write() -> Path:
    GUIDE.write_text(render())
    return GUIDE
