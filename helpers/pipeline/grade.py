"""``python -m helpers grade SUBMISSIONS``: score students' notebooks with the course's own checks (instructor kit).

Each submission is rebuilt from the course's student edition of its chapter, taking only the submission's
answer cells (matched by exercise, not position; a missing one is "not answered"), and run with papermill
in a fresh kernel, in its own working folder with its own caches, on CPU, under a timeout. Answer and
check cells may raise without stopping the run. The results are read from the records the course's check
cells write (``helpers.exercises.check``) and written as grades.md, grades.csv (one row per student and
exercise), students.csv and exercises.csv, each naming the file beside the student. Notes say what to read:
what an answer cell's text reaches (``touches``: the course's modules, also through an alias, the kernel's
hooks), an answer set to the chapter's own computed value (``copied_from_chapter``), what the grader's
watch saw change (``helpers.pipeline.audit``), and files that are copies of each other (``note_duplicates``:
byte for byte, or the same answers). Identical graded notebooks run once (``SharedRuns``).
"""
from __future__ import annotations

import ast
import copy
import csv
import hashlib
import json
import re
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import REPO_ROOT, CourseError
from ..core.exercises import RECORD_KEY, plain, same_plain
from .audit import AUDIT_KEY
from .student import (EXERCISE, META, NO_LITERAL, NOTEBOOK_META, ROLES, assigned_names, defined_names, exercises,
                      expected_literal, prediction_seals, role, seal_check, seal_stated, strip_magics, student_edition)
from .verify import _source, load_notebook

PAPERMILL_BANNER = "papermill-error-cell-tag"
RESULTS = ("right", "not quite", "not answered", "error", "timeout", "not run")
SHOWN = {"right": "✅ right", "not quite": "❌ not quite", "not answered": "— not answered", "error": "💥 error",
         "timeout": "⏱ timed out", "not run": "⏹ not run"}
# what a file that is not graded is: its status and the note an instructor can act on
NOT_NOTEBOOK, CORRUPTED = "not a notebook", "corrupted notebook"
# what an answer cell may not do without a note: modules it may not import, calls it may not make
SUSPECT_IMPORTS = ("sys", "gc", "inspect", "ctypes", "importlib", "builtins", "signal", "IPython", "papermill",
                   "helpers.core", "helpers.pipeline", "hashlib", "threading", "_thread", "ipykernel", "zmq",
                   "jupyter_client")
SUSPECT_CALLS = ("setattr", "delattr", "exec", "eval", "compile", "__import__", "vars", "globals", "locals")
SUSPECT_ATTRS = ("__dict__", "__globals__", "__code__", "__builtins__", "__defaults__", "__kwdefaults__",
                 "_exit", "modules")
# the kernel's own machinery: what a hook on later cells (a forged check) goes through
KERNEL_ATTRS = ("display_pub", "displayhook", "user_ns", "user_global_ns", "input_transformers_cleanup",
                "input_transformers_post", "ast_transformers", "set_custom_exc", "run_cell", "kernel")
KERNEL_NAMES = ("get_ipython", "__builtins__")
# the interpreter's frames: from a traceback (or a generator) up to a caller's locals, e.g. the recording
# backend of the check that called the student's function, no import needed
FRAME_ATTRS = ("tb_frame", "f_back", "f_locals", "f_globals", "gi_frame", "cr_frame", "ag_frame")
COURSE_ROOTS = ("helpers", "torch", "IPython", "builtins", "sys")  # modules an answer has no reason to change


@dataclass
class Graded:
    student: str
    file: str
    chapter: str | None = None
    status: str = "graded"  # graded / timeout / kernel died / stopped / not a notebook / corrupted notebook / unknown chapter
    results: dict[str, tuple[str, str]] = field(default_factory=dict)  # exercise -> (result, detail)
    notes: list[str] = field(default_factory=list)
    seconds: float | None = None
    digest: str = ""  # of the file's bytes
    answers: str = ""  # of the answers as graded (what the student wrote, where it differs from the hand-out)
    blank: bool = False  # no answer differs from the hand-out's

    @property
    def right(self) -> int:
        return sum(r == "right" for r, _ in self.results.values())


def submissions(paths: list[str]) -> list[tuple[Path, str]]:
    """The files to grade and their students' names: each path itself, or every visible file in a folder
    and its subfolders (one per student, as an LMS exports them: the student is the subfolder, or
    subfolder/file when it holds several), sorted. A folder the grader wrote (it holds grades.md) is skipped."""
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            ours = {g.parent for g in p.rglob("grades.md")}
            found = sorted(f for f in p.rglob("*") if f.is_file()
                           and not any(part.startswith((".", "__MACOSX")) for part in f.relative_to(p).parts)
                           and not any(d == f.parent or d in f.parents for d in ours))
            per_folder: dict[Path, int] = {}
            for f in found:
                per_folder[f.relative_to(p).parent] = per_folder.get(f.relative_to(p).parent, 0) + 1
            for f in found:
                rel = f.relative_to(p)
                if rel.parent == Path("."):
                    name = f.stem
                elif per_folder[rel.parent] == 1:
                    name = rel.parent.as_posix()
                else:
                    name = rel.with_suffix("").as_posix()
                files.append((f, name))
        elif p.is_file():
            files.append((p, p.stem))
        else:
            raise CourseError(f"{p}: no such file or folder.")
    if not files:
        raise CourseError(f"no submissions in {', '.join(paths)} (nor in its subfolders).")
    return files


def read_submission(path: Path) -> tuple[dict | None, tuple[str, str] | None]:
    """The notebook, or (status, note): a file that is no notebook at all vs a notebook that is broken."""
    raw = path.read_bytes()
    looks = raw.lstrip()[:1] == b"{"  # a JSON document: a notebook, however damaged
    kind = f"{path.suffix.lower()} file" if path.suffix else "file without an extension"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        if looks:
            return None, (CORRUPTED, "the notebook is not UTF-8 text (damaged in transfer?): ask the student for a "
                                     "fresh download of the notebook")
        return None, (NOT_NOTEBOOK, f"a binary {kind}, not a Jupyter notebook: ask for the .ipynb")
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        if looks:
            return None, (CORRUPTED, f"the notebook's JSON is broken ({exc.msg} at line {exc.lineno}, column "
                                     f"{exc.colno} of {len(raw)} bytes: cut short or edited by hand?): ask the "
                                     "student for a fresh download of the notebook")
        start = " ".join(text.split())[:40]
        return None, (NOT_NOTEBOOK, f"a text {kind} (it starts {start!r}), not a Jupyter notebook: ask for the "
                                    ".ipynb itself (File → Download in Jupyter or Colab)")
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list) or nb.get("nbformat") != 4:
        why = ("no list of cells" if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list)
               else f"nbformat {nb.get('nbformat')!r}, not 4")
        return None, (CORRUPTED if path.suffix.lower() == ".ipynb" else NOT_NOTEBOOK,
                      f"valid JSON but not a Jupyter notebook in format 4 ({why}): ask for the .ipynb as Jupyter saves it")
    if not all(isinstance(c, dict) for c in nb["cells"]):
        return None, (CORRUPTED, "a cell of the notebook is not a JSON object: ask for a fresh download")
    nb.setdefault("metadata", {})
    return nb, None


def chapter_of(nb: dict, path: Path) -> str | None:
    """The chapter a submission belongs to: the student edition's stamp, else its file name or setup cell."""
    stamp = nb.get("metadata", {}).get(NOTEBOOK_META, {}).get("chapter")
    if stamp:
        return stamp
    m = re.search(r"ch\d\d", path.name)
    if m:
        return m.group(0)
    return _setup_chapter(nb)


def _setup_chapter(nb: dict) -> str | None:
    for cell in nb["cells"]:
        m = re.search(r'helpers\.setup\("(ch\d\d)"', _source(cell))
        if m:
            return m.group(1)
    return None


def chapter_note(nb: dict, path: Path) -> str | None:
    """A note when the file's name names another chapter than its content (stamp or setup cell) does."""
    named = re.search(r"ch\d\d", path.name)
    content = nb.get("metadata", {}).get(NOTEBOOK_META, {}).get("chapter") or _setup_chapter(nb)
    if named and content and named.group(0) != content:
        return (f"the file name says {named.group(0)} but the notebook is {content}'s: graded as {content} "
                f"(a wrong file handed in?)")
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


def loose_cells(submission: dict, course: dict) -> list[tuple[str | None, int, dict]]:
    """The submission's own code cells (not the course's, not an answer or check): (the exercise whose
    text it follows, its index, the cell). An exercise's region starts at its heading or stamped cell and
    ends at the course's next markdown cell."""
    course_code = {_source(c).strip() for c in course["cells"] if c.get("cell_type") == "code"}
    seals = prediction_seals(course)
    course_md = {_source(c).strip() for c in course["cells"] if c.get("cell_type") == "markdown"}
    out, current = [], None
    for i, cell in enumerate(submission["cells"]):
        src = _source(cell)
        if cell.get("cell_type") == "markdown":
            m = EXERCISE.search(src)
            if m:
                current = m.group(1)
            elif src.strip() in course_md:
                current = None
            continue
        meta = cell.get("metadata", {}).get(META) or {}
        if meta.get("exercise"):
            current = meta["exercise"]
        if (cell.get("cell_type") != "code" or meta.get("role") in ("answer", "check") or role(cell) in ROLES
                or not src.strip() or src.strip() in course_code or "exercises.check(" in src
                or seal_stated(src, seals).strip() in course_code):  # (an earlier hand-out's course cell)
            continue
        out.append((current, i, cell))
    return out


def _dotted(node, aliases: dict[str, str]) -> str | None:
    """What an expression stands for as a dotted name (``helpers.core.exercises``, ``setattr``), reading the
    cell's own aliases, ``getattr(x, "name")``, ``sys.modules["name"]`` and ``vars(x)``/``x.__dict__``; None
    for anything else."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return None if base is None else (base if node.attr == "__dict__" else f"{base}.{node.attr}")
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        base = _dotted(node.value, aliases)
        if base == "sys.modules":
            return node.slice.value
        return None if base is None else f"{base}.{node.slice.value}"
    if isinstance(node, ast.Call) and node.args:
        fn = _dotted(node.func, aliases)
        if fn in ("getattr", "builtins.getattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            base = _dotted(node.args[0], aliases)
            return None if base is None else f"{base}.{node.args[1].value}"
        if fn in ("vars", "builtins.vars"):
            return _dotted(node.args[0], aliases)
        if fn in ("__import__", "importlib.import_module") and isinstance(node.args[0], ast.Constant):
            return str(node.args[0].value)
    return None


def _aliases(tree) -> dict[str, str]:
    """The cell's names that stand for a module or a builtin: ``import helpers.core.exercises as e``,
    ``from helpers.core import exercises``, ``m = helpers.core.exercises``, ``s = setattr``."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if a.name != "*"})
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = _dotted(node.value, out)
            if target and (target.split(".")[0] in COURSE_ROOTS or target in SUSPECT_CALLS
                           or target.split(".")[0] in KERNEL_NAMES):
                out[node.targets[0].id] = target
    return out


def _course_object(dotted: str | None) -> bool:
    return bool(dotted) and dotted.split(".")[0] in COURSE_ROOTS


def touches(answer: str, course_names: set[str], allowed: set[str]) -> list[str]:
    """What an answer cell does that an answer need not do: rebind the course's names, set attributes of
    anything but ``self``, write through vars()/globals()/__dict__ (of a module, or of an alias of one:
    ``m = helpers.core.exercises; setattr(m, ...)``), import the machinery (sys, gc, inspect, hashlib,
    helpers.core...), call exec/eval/setattr (or an alias of one), reach the kernel (``get_ipython()``, its
    ``events.register``, ``display_pub``), walk the interpreter's frames (``e.__traceback__.tb_frame.f_back``,
    ``f_locals``: no import needed), define ``__eq__``; empty for an ordinary answer."""
    try:
        tree = ast.parse(strip_magics(answer))
    except SyntaxError:
        return [f"rebinds {n}" for n in sorted((defined_names(answer) & course_names) - allowed)]
    same = {a.name for node in tree.body if isinstance(node, ast.Import) for a in node.names
            if a.asname is None and "." not in a.name}  # `import torch` binds torch to torch: nothing changes
    out = [f"rebinds {n}" for n in sorted((defined_names(answer) & course_names) - allowed - same)]
    aliases = _aliases(tree)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    frames = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            root = node
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(node, ast.Attribute) and isinstance(root, ast.Name) and root.id in ("self", "cls"):
                continue
            module = _dotted(node.value, aliases)
            through = (f" ({root.id} is {aliases[root.id]})" if isinstance(root, ast.Name) and root.id in aliases
                       else "")
            if isinstance(node, ast.Subscript) and isinstance(root, ast.Name) and root.id not in course_names \
                    and root.id not in COURSE_ROOTS and not _course_object(module):
                continue  # writing into a list or dict of the answer's own
            out.append(f"sets {ast.unparse(node)[:80]}{through}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SUSPECT_CALLS:
            out.append(f"calls {node.func.id}()")
            out += _sets_through_call(node, node.func.id, aliases)
        elif isinstance(node, ast.Call) and (_dotted(node.func, aliases) or "").removeprefix("builtins.") in SUSPECT_CALLS:
            fn = _dotted(node.func, aliases).removeprefix("builtins.")
            out.append(f"calls {fn}() (as {ast.unparse(node.func)[:40]})")
            out += _sets_through_call(node, fn, aliases)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in SUSPECT_CALLS \
                and id(node) not in called:
            out.append(f"uses {node.id} as a value (an alias of it calls it unnamed)")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in KERNEL_NAMES:
            out.append(f"reaches {node.id} (the kernel itself)")
        elif isinstance(node, ast.Attribute) and node.attr in ("register", "unregister") \
                and isinstance(node.value, ast.Attribute) and node.value.attr == "events":
            out.append(f"registers an IPython event callback ({ast.unparse(node)[:60]}: code that runs before or after "
                       "later cells, the checks included)")
        elif isinstance(node, ast.Attribute) and node.attr in KERNEL_ATTRS:
            out.append(f"reaches {ast.unparse(node)[:80]} (the kernel's machinery)")
        elif isinstance(node, ast.Attribute) and node.attr in SUSPECT_ATTRS:
            out.append(f"reaches {ast.unparse(node)[:80]}")
        elif (isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS) or (
                isinstance(node, ast.Constant) and node.value in FRAME_ATTRS):  # also getattr(tb, "tb_frame")
            frames.append((node.end_lineno, node.end_col_offset, node.attr if isinstance(node, ast.Attribute) else node.value))
        elif isinstance(node, ast.Global):
            out.append("declares global " + ", ".join(node.names))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            out += [f"imports {m}" + (" (trying answers against a sealed value?)" if m == "hashlib" else "")
                    for m in mods if m.startswith(SUSPECT_IMPORTS) and (
                        m in SUSPECT_IMPORTS or m.startswith(tuple(f"{s}." for s in SUSPECT_IMPORTS)))]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("__eq__", "__ne__", "__hash__"):
            out.append(f"defines {node.name} (an answer that decides its own equality?)")
        elif isinstance(node, ast.ClassDef) and any(
                (isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name in ("__class__", "__instancecheck__"))
                or (isinstance(b, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__class__" for t in b.targets))
                for b in node.body):
            out.append(f"fakes __class__ in class {node.name} (an answer that passes for another type?)")
    if frames:
        out.append(f"walks the interpreter's frames ({', '.join(dict.fromkeys(a for *_, a in sorted(frames)))}: "
                   "code that reaches the locals of whatever called it, a check's recording backend included)")
    return list(dict.fromkeys(out))


CONVERSIONS = ("int", "float", "str", "bool", "len", "tuple", "list", "set", "sorted", "round", "abs", "repr")


def copied_from_chapter(answer: str, chapter_values: set[str], answer_names: set[str]) -> list[str]:
    """The chapter's computed values an answer is set to as they are (``answer_1 = seq_entry_count``,
    ``int(rec.compiles)``, ``counts["x"]``): an answer read from the notebook rather than predicted or worked
    out. A name the answer cell binds itself first is the student's own."""
    try:
        tree = ast.parse(strip_magics(answer))
    except SyntaxError:
        return []
    found, own = [], set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in answer_names for t in node.targets):
            value = node.value
            while isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in CONVERSIONS \
                    and len(value.args) == 1 and not value.keywords:
                value = value.args[0]
            root = value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in chapter_values - own - answer_names:
                found.append(ast.unparse(value)[:60])
        own |= assigned_names(ast.unparse(node)) | defined_names(ast.unparse(node))
    return found


def _sets_through_call(node, fn: str, aliases: dict[str, str]) -> list[str]:
    """``setattr(m, "name", ...)`` / ``delattr`` on a course module (named, through the cell's aliases)."""
    if fn not in ("setattr", "delattr") or len(node.args) < 2:
        return []
    target = _dotted(node.args[0], aliases)
    if not _course_object(target):
        return []
    attr = node.args[1].value if isinstance(node.args[1], ast.Constant) else "…"
    return [f"sets {target}.{attr} (through {fn})"]


rebinds = touches  # its earlier name


def _grader_cell(number: str, phase: str, code: str) -> dict:
    return {"cell_type": "code", "id": f"grader-{number.replace('.', '-')}-{phase}", "execution_count": None,
            "outputs": [], "source": code,
            "metadata": {"tags": ["raises-exception"], META: {"exercise": number, "role": "grader"}}}


def _audit_call(fn: str, *args) -> str:
    return f'__import__("helpers.pipeline.audit", fromlist=["audit"]).{fn}({", ".join(map(repr, args))})'


def graded_notebook(course: dict, submission: dict, *, exercise_timeout: float = 0,
                    without: set[str] = frozenset()) -> tuple[dict, list[str]]:
    """The course's student edition with the submission's answer cells in place, and notes for the table.

    Answers written in cells of the student's own under an exercise (or, with the answer cell's tags
    lost, the cells that set its names) are graded with it, and noted. Around each exercise go the
    grader's cells (``helpers.pipeline.audit``: its clock, and the watch on the course's modules). The
    exercises in ``without`` keep the course's blank answer (their answer stopped an earlier run).
    """
    nb, notes = copy.deepcopy(course), []
    answers = cells_by_exercise(submission, "answer")
    checks = cells_by_exercise(submission, "check")
    loose = loose_cells(submission, course)
    course_names, chapter_values = {"helpers", "torch"}, set()
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code" and role(cell) != "answer":
            course_names |= defined_names(_source(cell))
            chapter_values |= assigned_names(_source(cell))
    found = exercises(nb)
    seals = prediction_seals(nb)
    answer_names = {ex.number: defined_names(_source(nb["cells"][ex.answer])) for ex in found}
    where = {id(c): i for i, c in enumerate(submission["cells"])}
    inserts: dict[int, list[dict]] = {}
    for ex in found:
        answer, check = nb["cells"][ex.answer], nb["cells"][ex.check]
        for cell in (answer, check):  # a raising answer or check must not stop the other exercises
            cell["metadata"]["tags"] = tags = list(cell["metadata"].get("tags", []))
            tags.append("raises-exception")
        given = answers.get(ex.number, [])
        if len(given) > 1:
            notes.append(f"{ex.number}: {len(given)} answer cells, the last one graded")
        own = [(i, c) for (number, i, c) in loose
               if defined_names(_source(c)) and (number == ex.number or defined_names(_source(c)) & answer_names[ex.number])]
        at = where.get(id(given[-1])) if given else None
        before = [_source(c) for i, c in own if at is not None and i < at]
        after = [_source(c) for i, c in own if at is None or i > at]
        if ex.number in without:  # its answer stopped an earlier run: the course's blank answer instead
            odd = touches("\n\n".join(_source(c) for c in given[-1:] + [c for _, c in own]), course_names,
                          answer_names[ex.number])
            if odd:
                notes.append(f"{ex.number}: the answer cell {', '.join(odd)} (read it)")
        elif not given and not own:
            notes.append(f"{ex.number}: no answer cell in the submission")
        else:
            parts = before + ([_source(given[-1])] if given else []) + after
            src = "\n\n".join(p.rstrip() for p in parts)
            if own and given:
                notes.append(f"{ex.number}: answer found outside the answer cell ({len(own)} cell(s) of the student's "
                             "own under the exercise): graded together with it")
            elif own:
                notes.append(f"{ex.number}: no tagged answer cell (its cell tags were lost?); graded the student's "
                             f"cell(s) that set {', '.join(sorted(answer_names[ex.number])) or 'the answer'} instead")
            odd = touches(src, course_names, answer_names[ex.number])
            if odd:
                notes.append(f"{ex.number}: the answer cell {', '.join(odd)} (read it)")
            copied = copied_from_chapter(src, chapter_values, answer_names[ex.number])
            if copied:
                notes.append(f"{ex.number}: the answer is the chapter's own {', '.join(copied)}, a value the notebook "
                             "computed (copied rather than predicted or worked out? read it)")
            answer["source"] = src
        if any(seal_stated(seal_check(_source(c), ex.number), seals).strip() != _source(check).strip()
               for c in checks.get(ex.number, [])):
            notes.append(f"{ex.number}: check cell edited (the course's check was used)")
        inserts.setdefault(ex.answer, []).append(_grader_cell(ex.number, "begin", _audit_call("begin", ex.number, exercise_timeout)))
        inserts.setdefault(ex.answer + 1, []).append(_grader_cell(ex.number, "between", _audit_call("between", ex.number)))
        inserts.setdefault(ex.check + 1, []).append(_grader_cell(ex.number, "end", _audit_call("end", ex.number)))
    if any(role(c) == "solution" for c in submission["cells"]):
        notes.append("the submission holds the book's solution cells (the full notebook, not the student edition): "
                     "they were not run; only its answer cells count")
    cells = []
    for i, cell in enumerate(nb["cells"]):
        cells += inserts.get(i, [])
        cells.append(cell)
    cells += inserts.get(len(nb["cells"]), [])
    nb["cells"] = cells
    return nb, notes


def expected_values(book: dict) -> dict[str, object]:
    """Per exercise, the plain expected value its check cell writes out (read here, never in a kernel)."""
    out = {}
    for ex in exercises(book):
        value = expected_literal(_source(book["cells"][ex.check]), ex.number)
        if value is not NO_LITERAL:
            out[ex.number] = plain(value)
    return out


def _error(cell) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename')}: {str(out.get('evalue', '')).splitlines()[0][:100] if out.get('evalue') else ''}"
    return None


def plain_error(error: str) -> str:
    """What the course's check raised, in words for the table: a TypeError (an answer of another kind than
    the exercise asks for: a number where it wants a function) says so first; the course's internal names
    (``__main__.make_f.<locals>.f``) are cut to the name the chapter shows (``f``)."""
    ename, _, message = error.partition(": ")
    message = re.sub(r"\b(?:[A-Za-z_]\w*\.)*<locals>\.", "", message)
    message = re.sub(r"\b__main__\.", "", message)
    if ename == "TypeError":
        return f"{ename}: the answer is not of the kind the exercise asks for ({message})"
    return f"{ename}: {message}" if message else ename


def _status(cell) -> str | None:
    return cell.get("metadata", {}).get("papermill", {}).get("status")


def _ran(cell) -> bool:
    """Whether the kernel ran the cell (papermill marks the cells after a dead kernel "completed" too)."""
    return cell.get("execution_count") is not None


def _records(cell, key: str) -> list[dict]:
    return [o["metadata"][key] for o in cell.get("outputs", []) if key in o.get("metadata", {})]


def results_of(executed: dict, expected: dict | None = None) -> tuple[dict[str, tuple[str, str]], str | None, list[str]]:
    """Per exercise (result, detail) from an executed graded notebook, where a course cell stopped it, and
    notes. Each answer is judged here, outside the kernel: its plain value (the check's record) against
    the expected value the course's check cell writes out (``expected``), else the one the kernel computed;
    where the kernel's own check said otherwise, or the grader's audit saw the course's modules change or
    never reported, a note says so."""
    expected = expected or {}
    cells = [c for c in executed["cells"] if PAPERMILL_BANNER not in c.get("metadata", {}).get("tags", [])]
    executed = dict(executed, cells=cells)
    results, notes = {}, []
    grader = {}
    for c in cells:
        meta = c.get("metadata", {}).get(META) or {}
        if meta.get("role") == "grader":
            grader.setdefault(meta["exercise"], []).append(c)
    for ex in exercises(executed):
        n, answer, check = ex.number, cells[ex.answer], cells[ex.check]
        mine = [r for r in _records(check, RECORD_KEY) if r.get("name") == f"exercise {n}"]
        record = mine[0] if mine else None
        raised, check_raised = _error(answer), _error(check)
        if len(mine) > 1:  # the check shows one result; more were published by something else in the kernel
            results[n] = ("error", f"the check cell showed {len(mine)} results for this exercise")
            notes.append(f"{n}: {len(mine)} results in its check cell, where the check shows one: the student's "
                         "code published results of its own (a forged check?); not graded — read the notebook")
        elif raised and raised.startswith("ExerciseTimeout"):
            results[n] = ("timeout", "the answer cell " + raised.split(": ", 1)[-1].replace(f"exercise {n} ", ""))
            notes.append(f"{n}: timed out in its answer cell (an endless loop?); the other exercises were graded")
        elif check_raised and check_raised.startswith("ExerciseTimeout"):
            results[n] = ("timeout", "the check of the answer " + check_raised.split(": ", 1)[-1].replace(f"exercise {n} ", ""))
            notes.append(f"{n}: timed out while the check ran the answer's code; the other exercises were graded")
        elif record and not (raised and record["result"] == "not answered"):
            result = _judge(n, record, expected, notes)
            detail = (record.get("answer") or "") if result == "not quite" else ""
            results[n] = (result, (f"answer cell raised {raised}; " if raised else "") + detail)
        elif raised or check_raised:
            results[n] = ("error", f"answer cell raised {raised}" if raised else f"check raised {plain_error(check_raised)}")
        elif _ran(check):
            results[n] = ("error", "the check wrote no result")
            notes.append(f"{n}: the course's check ran but wrote no result (was helpers.exercises changed? read the answer cell)")
        else:
            results[n] = ("not run", "")
        for cell in grader.get(n, []):
            if cell.get("id", "").endswith("-begin") or not _ran(cell):
                continue
            audits = _records(cell, AUDIT_KEY)
            if not audits:
                notes.append(f"{n}: the grader's watch after the {'check' if cell.get('id', '').endswith('-end') else 'answer'} "
                             "cell did not report (the answer cell got in its way? read it)")
            for a in audits:
                if a.get("changed"):
                    notes.append(f"{n}: the course's modules changed while the {a['phase']} cell ran: "
                                 f"{', '.join(a['changed'][:5])} (read the answer cell)")
                if a.get("hooks"):
                    notes.append(f"{n}: the kernel's hooks changed while the {a['phase']} cell ran: "
                                 f"{', '.join(a['hooks'][:5])}; undone before the next cell (read the answer cell)")
    graded_cells = {j for ex in exercises(executed) for j in (ex.answer, ex.check)}
    graded_cells |= {i for i, c in enumerate(cells) if ((c.get("metadata", {}).get(META) or {}).get("role") == "grader")}
    stopped = next((f"cell {i + 1} raised {_error(c)}" for i, c in enumerate(cells)
                    if i not in graded_cells and _error(c)), None)
    return results, stopped, notes


def _judge(n: str, record: dict, expected: dict, notes: list[str]) -> str:
    """right / not quite / not answered for one record, judged on plain data in the grader's process."""
    in_kernel = record.get("result")
    if "got" not in record:  # a record of an older helpers: only the kernel's word
        return in_kernel
    got = record["got"]
    want = expected[n] if n in expected else record.get("want")
    if got is None:
        ours = "not answered"
    elif n not in expected and record.get("sealed"):
        notes.append(f"{n}: sealed in the notebook but not in the book's check: the kernel's verdict was kept")
        return in_kernel
    else:  # a course object in the expected value: equal to one of the same type and repr
        ours = "right" if same_plain(got, want, float(record.get("tol") or 1e-6)) else "not quite"
    if ours != in_kernel:
        notes.append(f"{n}: the check in the student's kernel said {in_kernel}, the grader's comparison of plain values "
                     f"says {ours} (graded {ours}; read the answer cell)")
    return ours


def _halted_exercise(executed: dict | None) -> tuple[str | None, int | None]:
    """Where a killed or dead kernel stopped: the exercise whose cells were running (or None), and the cell."""
    if executed is None:
        return None, None
    cells = [c for c in executed["cells"] if PAPERMILL_BANNER not in c.get("metadata", {}).get("tags", [])]
    i = next((i for i, c in enumerate(cells) if _status(c) == "running"), None)  # killed: papermill saved it so
    if i is None:  # a dead kernel: papermill ends the run, the last cell the kernel started is where it died
        code = [j for j, c in enumerate(cells) if c.get("cell_type") == "code"]
        started = [j for j in code if _ran(cells[j])]
        if not started or started[-1] == code[-1] or _error(cells[started[-1]]):
            return None, None  # it ran to the end, or a cell raised and stopped it (``stopped`` says which)
        i = started[-1]
    meta = cells[i].get("metadata", {}).get(META) or {}
    if meta.get("exercise"):
        return meta["exercise"], i
    for ex in exercises(dict(executed, cells=cells)):
        if i in (ex.answer, ex.check):
            return ex.number, i
    return None, i


class SharedRuns:
    """The runs of one grading: a graded notebook identical to one already run (the same answers, e.g. two
    blank copies or one file handed in twice) is not run again; its executed notebook is copied."""

    def __init__(self):
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[Future, Path]] = {}

    def execute(self, nb: dict, graded: Path, executed: Path, **kwargs):
        """``run.execute`` of ``graded`` into ``executed``, or the result of the identical notebook's run."""
        from .run import execute

        key = hashlib.sha256(json.dumps([nb, kwargs.get("device"), kwargs.get("timeout")], sort_keys=True,
                                        default=str).encode()).hexdigest()
        with self._lock:
            mine = key not in self._runs
            if mine:
                self._runs[key] = (Future(), executed)
            future, first = self._runs[key]
        if mine:
            try:
                future.set_result(execute(graded, executed, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)
                raise
            return future.result()
        run = future.result()
        if first.exists():
            executed.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(first, executed)
        return run


def written_answers(nb: dict, course: dict) -> dict[str, str]:
    """The answers as graded where they differ from the hand-out's, per exercise ({} for a blank copy)."""
    blank = {ex.number: _source(course["cells"][ex.answer]).strip() for ex in exercises(course)}
    mine = {ex.number: _source(nb["cells"][ex.answer]).strip() for ex in exercises(nb)}
    return {n: src for n, src in mine.items() if src != blank.get(n)}


def answers_digest(nb: dict, course: dict) -> str:
    """A digest of the answers as graded, where they differ from the hand-out ("" for a blank copy or one whose
    answers are too short to tell apart: together under ``SAME_ANSWERS_MIN`` characters of code)."""
    written = written_answers(nb, course)
    if sum(len("".join(src.split())) for src in written.values()) < SAME_ANSWERS_MIN:
        return ""
    return hashlib.sha256(json.dumps(written, sort_keys=True).encode()).hexdigest()


SAME_ANSWERS_MIN = 60  # characters of answer code (spaces left out) below which equal answers say nothing


def grade_one(path: Path, work: Path, *, device: str, timeout: float, student: str | None = None,
              exercise_timeout: float = 120, shared: SharedRuns | None = None) -> Graded:
    """Grade one submission in its own folder ``work`` (a fresh kernel, its own caches).

    When the kernel dies or the notebook runs out of time inside an exercise, that exercise is marked
    and the notebook runs again without its answer, so that one exercise costs only itself. With
    ``shared``, a notebook identical to one this grading already ran is not run again.
    """
    from .run import resolve

    shared = shared or SharedRuns()
    g = Graded(student or work.name, str(path))
    g.digest = hashlib.sha256(path.read_bytes()).hexdigest()
    submission, bad = read_submission(path)
    if bad:
        g.status, note = bad
        g.notes.append(note)
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
    mismatch = chapter_note(submission, path)
    book = load_notebook(course_path)
    course = student_edition(book, g.chapter, course_path.name)
    expected = expected_values(book)
    work.mkdir(parents=True, exist_ok=True)
    stopped_in: dict[str, tuple[str, str, str]] = {}  # exercise -> (status, result, detail)
    t0 = time.perf_counter()
    while True:
        nb, notes = graded_notebook(course, submission, exercise_timeout=exercise_timeout, without=set(stopped_in))
        graded = work / course_path.name
        graded.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
        executed_path = work / "executed" / course_path.name
        executed_path.unlink(missing_ok=True)
        if not stopped_in:
            g.answers, g.blank = answers_digest(nb, course), not written_answers(nb, course)
        run = shared.execute(nb, graded, executed_path, device=device, scale="auto", timeout=timeout,
                             cache=work / "cache")
        try:
            executed = load_notebook(executed_path)
        except CourseError:
            executed = None
        halted, cell = _halted_exercise(executed) if run.status in ("timeout", "error") else (None, None)
        if halted is None or halted in stopped_in or len(stopped_in) >= len(exercises(nb)) \
                or time.perf_counter() - t0 > 3 * timeout:
            break
        died = run.status != "timeout"
        stopped_in[halted] = ("kernel died" if died else "timeout", "error" if died else "timeout",
                              "the kernel died while it ran" if died else f"ran past the notebook's {timeout:.0f} s")
    g.seconds = round(time.perf_counter() - t0, 1)
    g.notes = ([mismatch] if mismatch else []) + notes
    if executed is None:
        g.status = "timeout" if run.status == "timeout" else "stopped"
        g.results = {ex.number: ("not run", "") for ex in exercises(nb)}
        g.notes.append(run.problems[0].splitlines()[0] if run.problems else "no executed notebook")
        return g
    g.results, stopped, more = results_of(executed, expected)
    g.notes += more
    for n, (status, result, detail) in stopped_in.items():
        g.results[n] = (result, detail)
        g.status = status
        g.notes.append(f"{'kernel died' if status == 'kernel died' else 'timed out'} at exercise {n}: the other "
                       "exercises were graded in a new run without its answer (read it)")
    if run.status in ("timeout", "error") and cell is not None and halted not in stopped_in:
        what = "timed out" if run.status == "timeout" else "kernel died"
        g.status = "timeout" if run.status == "timeout" else "kernel died"
        if halted:
            g.results[halted] = ("timeout" if run.status == "timeout" else "error", f"{what} in this exercise")
        g.notes.append(f"{what} at " + (f"exercise {halted}" if halted else f"cell {cell + 1} (a course cell)")
                       + (f" after {timeout:.0f} s" if run.status == "timeout" else "")
                       + ("; the cells after it did not run" if not halted else ""))
    elif run.status == "timeout" and not stopped_in:
        g.status = "timeout"
        g.notes.append(f"timed out after {timeout:.0f} s")
    elif stopped:
        g.status = "stopped"
        g.notes.append(f"stopped: {stopped}")
    return g


GRADING_RECORD = REPO_ROOT / "helpers" / "verified" / "grading.json"  # the run the instructor guide quotes


def grade(paths: list[str], *, out: str | Path | None = None, jobs: int = 2, timeout: float = 300,
          device: str = "cpu", record: bool = False, exercise_timeout: float = 120) -> int:
    """Grade every submission, ``jobs`` at a time; write the tables into ``out``. 0 once all have a line."""
    found = submissions(paths)
    first = Path(paths[0])
    out = Path(out) if out else (first if first.is_dir() else first.parent) / "grades"
    out.mkdir(parents=True, exist_ok=True)
    names: dict[str, int] = {}
    works = []
    for f, student in found:  # one working folder per submission, named after its student (made unique)
        stem = re.sub(r"[^\w.-]+", "_", student)
        names[stem] = names.get(stem, 0) + 1
        works.append((f, student, out / "work" / (stem if names[stem] == 1 else f"{stem}-{names[stem]}")))
    t0 = time.perf_counter()
    shared = SharedRuns()

    def one(item):
        f, student, work = item
        try:
            g = grade_one(f, work, device=device, timeout=timeout, student=student, exercise_timeout=exercise_timeout,
                          shared=shared)
        except Exception as exc:  # one submission must never stop the others' grading
            g = Graded(student, str(f), status="grader error", notes=[f"{type(exc).__name__}: {exc}"])
        base = first if first.is_dir() else first.parent
        g.file = str(f.relative_to(base)) if f.is_relative_to(base) else str(f)  # the tables name files as handed in
        print(f"{g.student}: {g.status}, {g.right}/{len(g.results)} right" + (f" in {g.seconds} s" if g.seconds else ""),
              flush=True)
        return g

    # a file byte for byte like an earlier one would only wait for that one's run: it goes last, so that it
    # does not hold a worker while the run it shares is under way (the tables keep the files' order)
    seen, order = set(), []
    for i, (f, _, _) in enumerate(works):
        digest = hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else str(f)
        order.append((digest in seen, i))
        seen.add(digest)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = dict(zip([i for _, i in sorted(order)], pool.map(one, [works[i] for _, i in sorted(order)])))
    graded = [done[i] for i in range(len(works))]
    note_duplicates(graded)
    seconds = time.perf_counter() - t0
    run = {"jobs": jobs, "timeout": timeout, "device": device, "seconds": round(seconds, 1)}
    write_tables(graded, out, run)
    timing = timing_record(graded, run)
    (out / "run.json").write_text(json.dumps(timing, indent=1) + "\n")
    if record:
        GRADING_RECORD.parent.mkdir(exist_ok=True)
        GRADING_RECORD.write_text(json.dumps(timing, indent=1) + "\n")
    print(f"graded {len(graded)} submission{'s' if len(graded) != 1 else ''} in {seconds:.0f} s: {out / 'grades.md'}")
    return 0


def note_duplicates(graded: list[Graded]) -> None:
    """A note on each submission whose file is byte for byte another's, or whose answers (as graded, where
    they differ from the hand-out) are character for character another's: the instructor reads both. Copies
    of the blank hand-out are not noted (nothing in them is the student's)."""
    for key, what in (("digest", "byte for byte the same file as"), ("answers", "the same answers, character for "
                                                                               "character, as")):
        groups: dict[str, list[Graded]] = {}
        for g in graded:
            if getattr(g, key) and not g.blank:
                groups.setdefault(getattr(g, key), []).append(g)
        for group in groups.values():
            for g in group if len(group) > 1 else []:
                others = [o for o in group if o is not g and (key == "digest" or o.digest != g.digest)]
                if others:  # (the same answers in the same file: already said)
                    g.notes.append(f"{what} {', '.join(f'{o.student} ({o.file})' for o in others)} (copied? read both)")


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
        lines += [f"## {chapter}", "", "| student | file | " + " | ".join(exs) + " | right | notes |",
                  "|---" * (len(exs) + 4) + "|"]
        for g in group:
            cells = [SHOWN[g.results[e][0]] + (f" ({g.results[e][1]})" if g.results[e][1] else "")
                     if e in g.results else "" for e in exs]
            notes = ([g.status] if g.status != "graded" else []) + g.notes
            lines.append("| " + " | ".join(_cell(c) for c in [g.student, g.file, *cells, f"{g.right}/{len(exs)}",
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
        lines += ["## Not graded", "", "| student | file | why |", "|---|---|---|"]
        lines += [f"| {_cell(g.student)} | {_cell(g.file)} | {_cell(g.status + ': ' + '; '.join(g.notes))} |"
                  for g in bad]
        lines.append("")
    (out / "grades.md").write_text("\n".join(lines), encoding="utf-8")


def _csv(path: Path, header: tuple, rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
