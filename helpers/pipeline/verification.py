"""The verification page: which chapters were verified on which machine and torch (generated, never typed).

The book's own column comes from the published canonical records (``helpers/canonical``, written by
``publish``). Every other column comes from a run folder recorded with ``python -m helpers verification
RUN_DIR``: each chapter is verified again from its executed notebook alone, and the summary is kept in
``helpers/verified/<device>-torch<version>.json``. ``chapters/verification.md`` is rendered from both.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..core.env import REPO_ROOT, CourseError
from ..core.numbers import CANONICAL_DIR
from .run import CHAPTER_FILE, CHAPTERS_DIR
from .verify import verify_notebook

VERIFIED_DIR = REPO_ROOT / "helpers" / "verified"
PAGE = CHAPTERS_DIR / "verification.md"
CHECKED = ("pass", "fail", "unverified")  # statuses that are checks (record and reference are not)

HEADER = """# Verification

Which chapters were executed and verified, where. The first column is the run every page of this book
shows (its outputs are committed); the others are complete runs recorded from their executed notebooks
(`python -m helpers verification RUN_DIR`). A cell gives the figures whose expectation was checked and
how many passed, and the date of the run; ✗ marks a run with a failure or error. A CPU run checks fewer
figures than the GPU run: a cell that needs a GPU shows the book's GPU value there (quoted, not checked
again), so only the GPU run checks it. This page is generated from those records by
`python -m helpers verification` (a test keeps it current).
"""


def _torch_minor(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def _summary(env: dict, figures: list[dict], ok: bool, seconds=None) -> dict:
    statuses = [f.get("status") for f in figures]
    return {"ok": ok, "checked": sum(s in CHECKED for s in statuses), "passed": statuses.count("pass"),
            "failed": statuses.count("fail"), "date": str(env.get("date", ""))[:10],
            "commit": env.get("git_commit"), "torch": env.get("torch"), "python": env.get("python"),
            "device": env.get("device_name") or env.get("device"), "seconds": seconds}


def environment_key(env: dict) -> str:
    device = "cpu" if env.get("device") == "cpu" else str(env.get("device_class") or env.get("device"))
    return f"{device}-torch{_torch_minor(str(env.get('torch', '?')))}"


def record(run_dir: str | Path) -> Path:
    """Verify a run folder's chapters again and keep their summary under helpers/verified/ (one file per environment)."""
    run_path = Path(run_dir)
    notebooks = sorted(p for p in run_path.glob("ch*.ipynb") if CHAPTER_FILE.match(p.name))
    if not notebooks:
        raise CourseError(f"{run_path}: no executed chapter notebooks (ch*.ipynb) here.")
    results = [verify_notebook(p) for p in notebooks]
    envs = {environment_key(r.env) for r in results if r.env}
    if len(envs) != 1:
        raise CourseError(f"{run_path}: the notebooks ran in {len(envs)} environments ({sorted(envs)}); record one run.")
    key = envs.pop()
    commits = sorted({str((r.env or {}).get("git_commit")) for r in results})
    if any(c.endswith("+dirty") or c == "None" for c in commits):
        raise CourseError(f"{run_path}: it ran from a working tree with uncommitted changes ({', '.join(commits)}); "
                          "commit, run again and record that run.")
    path = VERIFIED_DIR / f"{key}.json"
    data = json.loads(path.read_text()) if path.exists() else {"environment": key, "chapters": {}}
    for r in results:
        chapter = CHAPTER_FILE.match(Path(r.path).name).group(1)
        data["chapters"][chapter] = _summary(r.env or {}, r.figures, r.ok, r.seconds)
    VERIFIED_DIR.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def _canonical_column() -> dict[str, dict]:
    column = {}
    for path in sorted(CANONICAL_DIR.glob("ch*.json")):
        rec = json.loads(path.read_text())
        figures = list(rec["figures"].values())
        column[rec["chapter"]] = _summary(rec.get("env") or {}, figures, all(f.get("status") != "fail" for f in figures),
                                          rec.get("seconds"))
    return column


def _cell(summary: dict | None) -> str:
    if not summary:
        return "—"
    mark = "✓" if summary["ok"] else "✗"
    return f"{mark} {summary['passed']}/{summary['checked']} · {summary['date']}"


def _label(column: dict[str, dict]) -> str:
    first = next(iter(column.values()))
    return f"{first['device']}, torch {first['torch']}, Python {first['python']}"


def render(toc_chapters: list[str] | None = None) -> str:
    from .student import book_chapters

    chapters = toc_chapters if toc_chapters is not None else [p.name[:4] for p in book_chapters()]
    columns = [("This book's run: " + _label(c), c) for c in [_canonical_column()] if c]
    for path in sorted(VERIFIED_DIR.glob("*-torch*.json")):  # not grading.json
        data = json.loads(path.read_text())
        if data["chapters"]:
            columns.append((_label(data["chapters"]), data["chapters"]))
    lines = [HEADER, "| chapter | " + " | ".join(label for label, _ in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for ch in chapters:
        lines.append(f"| {{doc}}`{_doc(ch)}` | " +
                     " | ".join(_cell(col.get(ch)) for _, col in columns) + " |")
    commits = sorted({s["commit"] for _, col in columns for s in col.values() if s.get("commit")})
    lines += ["", f"Runs from course commits: {', '.join(commits)}." if commits else ""]
    lines += ["", *coverage_lines(chapters)]
    return "\n".join(lines).rstrip() + "\n"


COVERAGE_HEADER = """## The series' values in each chapter

Every value the original series reported that a chapter quotes is glued beside the figure this book
measures for it, and the chapter's numbers table pairs them. A value the book cannot measure again (a file
its run does not write, a measurement only the series' laptop made) has a row that says why. Counted from
the committed notebooks' numbers tables and glued series values (PyTorch's and vendors' quoted figures
are not the series'; {doc}`ch30_map` quotes the other chapters' values in its map and is not counted):
"""


SERIES_OWN = ("l40s", "laptop", "m1", "post")   # the series' own values; PyTorch's and datasheets' are not


def series_coverage(notebook: Path) -> dict:
    """A chapter's series values: glued, re-measured (paired in the numbers table with a figure of the run),
    not re-measurable (a table row with why) and glued only (neither)."""
    from ..core.numbers import META_KEY, TABLE_META_KEY

    nb = json.loads(notebook.read_text(encoding="utf-8"))
    outputs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    metas = [o.get("metadata") or {} for o in outputs]
    figures = {m[META_KEY]["name"] for m in metas if META_KEY in m and m[META_KEY].get("origin") != "reference"}
    series = {m[META_KEY]["name"] for m in metas if META_KEY in m and m[META_KEY].get("origin") == "reference"
              and m[META_KEY].get("machine") in SERIES_OWN}
    rows = [row for m in metas if TABLE_META_KEY in m for row in m[TABLE_META_KEY].get("rows", [])]
    measured = {r[1] for r in rows if r[1] in series and r[2] and r[2] in figures}
    why = {r[1]: (r[0], r[4]) for r in rows if r[1] in series and not r[2] and len(r) > 4}
    return {"glued": len(series), "re_measured": len(measured), "not_re_measured": why,
            "glued_only": sorted(series - measured - set(why))}


def coverage_lines(chapters: list[str]) -> list[str]:
    lines = [COVERAGE_HEADER, "| chapter | series values | re-measured | not re-measured | glued only |",
             "|---|---|---|---|---|"]
    reasons = []
    for ch in (c for c in chapters if c != "ch30"):
        c = series_coverage(CHAPTERS_DIR / f"{_doc(ch)}.ipynb")
        if not c["glued"]:
            continue
        lines.append(f"| {{doc}}`{_doc(ch)}` | {c['glued']} | {c['re_measured']} | {len(c['not_re_measured'])} | "
                     f"{len(c['glued_only'])} |")
        reasons += [f"- {ch}, {label}: {text}" for label, text in c["not_re_measured"].values()]
    if reasons:
        lines += ["", "Why a value is not re-measured:", "", *reasons]
    return lines


def _doc(chapter: str) -> str:
    return next(p.stem for p in CHAPTERS_DIR.glob(f"{chapter}_*.ipynb"))


def write() -> Path:
    PAGE.write_text(render())
    return PAGE
