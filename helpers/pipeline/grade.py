"""``python -m helpers grade SUBMISSIONS``: score students' notebooks with the course's own checks (instructor kit).

Each submission is rebuilt from the course's student edition of its chapter, taking only the submission's
answer cells (matched by exercise, not position; a missing one is "not answered"), and run with papermill
in a fresh kernel, in its own working folder with its own caches, on CPU, under a timeout. Answer and
check cells may raise without stopping the run. The results are read from the records the course's check
cells write (``helpers.exercises.check``) and written as grades.md, grades.csv (one row per student and
exercise), students.csv and exercises.csv.
"""
from __future__ import annotations

import ast
import copy
import csv
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import REPO_ROOT, CourseError
from ..core.exercises import RECORD_KEY
from .student import META, NOTEBOOK_META, defined_names, exercises, role, strip_magics, student_edition
from .verify import _source, load_notebook

PAPERMILL_BANNER = "papermill-error-cell-tag"
RESULTS = ("right", "not quite", "not answered", "error", "not run")
SHOWN = {"right": "✅ right", "not quite": "❌ not quite", "not answered": "— not answered", "error": "💥 error",
         "not run": "⏹ not run"}


@dataclass
class Graded:
    student: str
    file: str
    chapter: str | None = None
    status: str = "graded"  # graded / timeout / stopped / not a notebook / unknown chapter
    results: dict[str, tuple[str, str]] = field(default_factory=dict)  # exercise -> (result, detail)
    notes: list[str] = field(default_factory=list)
    seconds: float | None = None

    @property
    def right(self) -> int:
        return sum(r == "right" for r, _ in self.results.values())


def submissions(paths: list[str]) -> list[Path]:
    """The files to grade: each path itself, or every visible file in a folder (sorted)."""
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            files.append(p)
        else:
            raise CourseError(f"{p}: no such file or folder.")
    if not files:
        raise CourseError(f"no submissions in {', '.join(paths)}.")
    return files


def chapter_of(nb: dict, path: Path) -> str | None:
    """The chapter a submission belongs to: the student edition's stamp, else its file name or setup cell."""
    stamp = nb.get("metadata", {}).get(NOTEBOOK_META, {}).get("chapter")
    if stamp:
        return stamp
    m = re.search(r"ch\d\d", path.name)
    if m:
        return m.group(0)
    for cell in nb["cells"]:
        m = re.search(r'helpers\.setup\("(ch\d\d)"', _source(cell))
        if m:
            return m.group(1)
    return None


def cells_by_exercise(nb: dict, wanted: str) -> dict[str, list[dict]]:
    """A submission's ``wanted`` cells ('answer' or 'check') per exercise: by their stamp, else by heading."""
    found: dict[str, list[dict]] = {}
    stamped = set()
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get(META) or {}
        if cell.get("cell_type") == "code" and meta.get("role") == wanted and meta.get("exercise"):
            found.setdefault(meta["exercise"], []).append(cell)
            stamped.add(id(cell))
    for ex in exercises(nb):
        for j in ex.code:
            cell = nb["cells"][j]
            if role(cell) == wanted and id(cell) not in stamped:
                found.setdefault(ex.number, []).append(cell)
    return found


def rebinds(answer: str, course_names: set[str], allowed: set[str]) -> list[str]:
    """What an answer cell does to the course's names: rebinding them or setting attributes on them."""
    out = [f"rebinds {n}" for n in sorted((defined_names(answer) & course_names) - allowed)]
    try:
        tree = ast.parse(strip_magics(answer))
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.append(f"sets {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "exec", "eval"):
            out.append(f"calls {node.func.id}")
        elif isinstance(node, ast.Global):
            out.append("declares global " + ", ".join(node.names))
    return out


def graded_notebook(course: dict, submission: dict) -> tuple[dict, list[str]]:
    """The course's student edition with the submission's answer cells in place, and notes for the table."""
    nb, notes = copy.deepcopy(course), []
    answers = cells_by_exercise(submission, "answer")
    checks = cells_by_exercise(submission, "check")
    course_names = {"helpers", "torch"}
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code" and role(cell) != "answer":
            course_names |= defined_names(_source(cell))
    for ex in exercises(nb):
        answer, check = nb["cells"][ex.answer], nb["cells"][ex.check]
        for cell in (answer, check):  # a raising answer or check must not stop the other exercises
            cell["metadata"]["tags"] = tags = list(cell["metadata"].get("tags", []))
            tags.append("raises-exception")
        given = answers.get(ex.number, [])
        if len(given) > 1:
            notes.append(f"{ex.number}: {len(given)} answer cells, the last one graded")
        if not given:
            notes.append(f"{ex.number}: no answer cell in the submission")
        else:
            src = _source(given[-1])
            odd = rebinds(src, course_names, defined_names(_source(answer)))
            if odd:
                notes.append(f"{ex.number}: the answer cell {', '.join(odd)} (read it)")
            answer["source"] = src
        if any(_source(c).strip() != _source(check).strip() for c in checks.get(ex.number, [])):
            notes.append(f"{ex.number}: check cell edited (the course's check was used)")
    return nb, notes


def _error(cell) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename')}: {str(out.get('evalue', '')).splitlines()[0][:100] if out.get('evalue') else ''}"
    return None


def results_of(executed: dict) -> tuple[dict[str, tuple[str, str]], str | None]:
    """Per exercise (result, detail) from an executed graded notebook, and where a course cell stopped it."""
    executed = dict(executed, cells=[c for c in executed["cells"]  # papermill's "An Exception was..." banners
                                     if PAPERMILL_BANNER not in c.get("metadata", {}).get("tags", [])])
    cells, results = executed["cells"], {}
    for ex in exercises(executed):
        answer, check = cells[ex.answer], cells[ex.check]
        record = next((o["metadata"][RECORD_KEY] for o in check.get("outputs", [])
                       if RECORD_KEY in o.get("metadata", {})
                       and o["metadata"][RECORD_KEY].get("name") == f"exercise {ex.number}"), None)
        raised = _error(answer)
        if record and not (raised and record["result"] == "not answered"):
            detail = record.get("answer") or "" if record["result"] == "not quite" else ""
            results[ex.number] = (record["result"], (f"answer cell raised {raised}; " if raised else "") + detail)
        elif raised or _error(check):
            results[ex.number] = ("error", f"answer cell raised {raised}" if raised else f"check raised {_error(check)}")
        else:
            results[ex.number] = ("not run", "")
    exercise_cells = {j for ex in exercises(executed) for j in (ex.answer, ex.check)}
    stopped = next((f"cell {i + 1} raised {_error(c)}" for i, c in enumerate(cells)
                    if i not in exercise_cells and _error(c)), None)
    return results, stopped


def grade_one(path: Path, work: Path, *, device: str, timeout: float) -> Graded:
    """Grade one submission in its own folder ``work`` (a fresh kernel, its own caches)."""
    from .run import execute, resolve

    g = Graded(work.name, str(path))
    try:
        submission = load_notebook(path)
    except CourseError:
        g.status = "not a notebook"
        g.notes.append("not a Jupyter notebook (.ipynb, format 4): nothing graded")
        return g
    g.chapter = chapter_of(submission, path)
    try:
        course_path = resolve([g.chapter])[0] if g.chapter else None
    except CourseError:
        course_path = None
    if course_path is None:
        g.status = "unknown chapter"
        g.notes.append(f"cannot tell which chapter this is ({g.chapter or 'no chNN in its name or cells'})")
        return g
    course = student_edition(load_notebook(course_path), g.chapter, course_path.name, keep_outputs=False)
    nb, g.notes = graded_notebook(course, submission)
    work.mkdir(parents=True, exist_ok=True)
    graded = work / course_path.name
    graded.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
    t0 = time.perf_counter()
    run = execute(graded, work / "executed" / course_path.name, device=device, scale="auto", timeout=timeout,
                  cache=work / "cache")
    g.seconds = round(time.perf_counter() - t0, 1)
    try:
        executed = load_notebook(work / "executed" / course_path.name)
    except CourseError:
        executed = None
    if executed is None:
        g.status = "timeout" if run.status == "timeout" else "stopped"
        g.results = {ex.number: ("not run", "") for ex in exercises(nb)}
        g.notes.append(run.problems[0].splitlines()[0] if run.problems else "no executed notebook")
        return g
    g.results, stopped = results_of(executed)
    if run.status == "timeout":
        g.status = "timeout"
        g.notes.append(f"timed out after {timeout:.0f} s")
    elif stopped:
        g.status = "stopped"
        g.notes.append(f"stopped: {stopped}")
    return g


GRADING_RECORD = REPO_ROOT / "helpers" / "verified" / "grading.json"  # the run the instructor guide quotes


def grade(paths: list[str], *, out: str | Path | None = None, jobs: int = 2, timeout: float = 300,
          device: str = "cpu", record: bool = False) -> int:
    """Grade every submission, ``jobs`` at a time; write the tables into ``out``. 0 once all have a line."""
    files = submissions(paths)
    out = Path(out) if out else Path(files[0]).parent / "grades"
    out.mkdir(parents=True, exist_ok=True)
    names: dict[str, int] = {}
    works = []
    for f in files:  # one working folder per submission, named after it (made unique)
        stem = re.sub(r"[^\w.-]+", "_", f.stem)
        names[stem] = names.get(stem, 0) + 1
        works.append(out / "work" / (stem if names[stem] == 1 else f"{stem}-{names[stem]}"))
    t0 = time.perf_counter()

    def one(item):
        f, work = item
        try:
            g = grade_one(f, work, device=device, timeout=timeout)
        except Exception as exc:  # one submission must never stop the others' grading
            g = Graded(work.name, str(f), status="grader error", notes=[f"{type(exc).__name__}: {exc}"])
        print(f"{g.student}: {g.status}, {g.right}/{len(g.results)} right" + (f" in {g.seconds} s" if g.seconds else ""),
              flush=True)
        return g

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        graded = list(pool.map(one, zip(files, works)))
    seconds = time.perf_counter() - t0
    run = {"jobs": jobs, "timeout": timeout, "device": device, "seconds": round(seconds, 1)}
    write_tables(graded, out, run)
    timing = timing_record(graded, run)
    (out / "run.json").write_text(json.dumps(timing, indent=1) + "\n")
    if record:
        GRADING_RECORD.parent.mkdir(exist_ok=True)
        GRADING_RECORD.write_text(json.dumps(timing, indent=1) + "\n")
    print(f"graded {len(graded)} submissions in {seconds:.0f} s: {out / 'grades.md'}")
    return 0


def timing_record(graded: list[Graded], run: dict) -> dict:
    """What a grading run cost, and on what machine: the instructor guide quotes it (``--record``)."""
    import os
    import statistics

    from ..core.env import detect

    env = detect("cpu").as_dict()
    times = sorted(g.seconds for g in graded if g.seconds)
    return {**run, "submissions": len(graded), "chapters": sorted({g.chapter for g in graded if g.chapter}),
            "median_s": round(statistics.median(times), 1) if times else None,
            "min_s": times[0] if times else None, "max_s": times[-1] if times else None,
            "machine": env.get("device_name"), "cores": env.get("cpu_count"), "torch": env.get("torch"),
            "load_average": round(os.getloadavg()[0], 1), "date": str(env.get("date", ""))[:10]}


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_tables(graded: list[Graded], out: Path, run: dict) -> None:
    """grades.md (per chapter: a row per student; then per exercise), grades.csv, students.csv, exercises.csv."""
    rows = [(g.student, g.file, g.chapter or "", ex, r, d) for g in graded for ex, (r, d) in g.results.items()]
    rows += [(g.student, g.file, g.chapter or "", "", g.status, "; ".join(g.notes)) for g in graded if not g.results]
    _csv(out / "grades.csv", ("student", "file", "chapter", "exercise", "result", "detail"), rows)
    _csv(out / "students.csv", ("student", "file", "chapter", "status", "right", "exercises", "seconds", "notes"),
         [(g.student, g.file, g.chapter or "", g.status, g.right, len(g.results), g.seconds or "", "; ".join(g.notes))
          for g in graded])
    per_ex: dict[tuple[str, str], dict[str, int]] = {}
    for g in graded:
        for ex, (r, _) in g.results.items():
            per_ex.setdefault((g.chapter, ex), dict.fromkeys(RESULTS, 0))[r] += 1
    _csv(out / "exercises.csv", ("chapter", "exercise", *RESULTS),
         [(c, ex, *counts.values()) for (c, ex), counts in sorted(per_ex.items())])
    lines = ["# Grades", "",
             f"{len(graded)} submissions, each run in a fresh kernel on {run['device']} ({run['jobs']} at a time, "
             f"timeout {run['timeout']:.0f} s) with the course's own checks; {run['seconds']} s in all.", ""]
    for chapter in sorted({g.chapter for g in graded if g.results}):
        group = [g for g in graded if g.chapter == chapter and g.results]
        exs = list(group[0].results)
        lines += [f"## {chapter}", "", "| student | " + " | ".join(exs) + " | right | notes |",
                  "|---" * (len(exs) + 3) + "|"]
        for g in group:
            cells = [SHOWN[g.results[e][0]] + (f" ({g.results[e][1]})" if g.results[e][1] else "")
                     if e in g.results else "" for e in exs]
            notes = ([g.status] if g.status != "graded" else []) + g.notes
            lines.append("| " + " | ".join(_cell(c) for c in [g.student, *cells, f"{g.right}/{len(exs)}",
                                                              "; ".join(notes)]) + " |")
        lines.append("")
    if per_ex:
        lines += ["## Per exercise", "", "| chapter | exercise | " + " | ".join(RESULTS) + " |",
                  "|---" * (len(RESULTS) + 2) + "|"]
        lines += [f"| {c} | {ex} | " + " | ".join(str(n) for n in counts.values()) + " |"
                  for (c, ex), counts in sorted(per_ex.items())]
        lines.append("")
    bad = [g for g in graded if not g.results]
    if bad:
        lines += ["## Not graded", "", "| file | why |", "|---|---|"]
        lines += [f"| {_cell(Path(g.file).name)} | {_cell(g.status + ': ' + '; '.join(g.notes))} |" for g in bad]
        lines.append("")
    (out / "grades.md").write_text("\n".join(lines), encoding="utf-8")


def _csv(path: Path, header: tuple, rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
