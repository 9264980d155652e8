"""``python -m helpers student``: the chapters without their solutions, to hand out (instructor kit, ch01).

The exercise convention every chapter follows: a markdown cell starting ``**Exercise N.k — title.**``,
then its code cells up to the next markdown cell: any course cells the exercise needs (untagged, e.g. the
function it asks about), one ``answer`` cell (only what the reader writes or edits), one ``check`` cell
(the course's check: ``helpers.exercises.check("exercise N.k", ...)``, reading the reader's work only
through names the answer cell defines) and one ``solution`` cell (tags ``hide-cell`` + ``solution``).
The student edition drops the solution cells, clears the outputs (every output by default: the book's
outputs can answer an exercise that asks to predict them; ``keep_outputs`` keeps those outside the
exercises), seals each expected value a check cell writes out (``seal_check``: the check compares a digest,
the grader the value itself, read from the book's cell), seals or leaves out a course cell's literal that
states the expected value of a prediction (``seal_stated``: a figure's ``expect=helpers.exact(3)``, a
reference value, a printed literal, where 5.1 asks for that 3) and stamps the answer and check cells with
their exercise (cell metadata ``course``) so that the grader can match them.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.env import CourseError
from .verify import _source

EXERCISE = re.compile(r"^\*\*Exercise (\d+\.\d+) — (.+?)\.?\*\*", re.M)
ROLES = ("answer", "check", "solution")
META = "course"  # cell metadata: {"exercise": "6.2", "role": "answer" | "check"}
NOTEBOOK_META = "course_student"  # notebook metadata of a student edition: chapter, notebook, exercises

NOTE = """**Student edition.** The solutions are not in this copy. Write your answer to each exercise in the
code cell right after its text (it starts with the names you set, e.g. `answer_1 = None`), run it, then run
the check cell below it. When graded, only those answer cells are taken from your copy (keep your answer
in that cell: a new cell you add is read only as a fallback, and noted): every other cell, the checks
included, is the course's own, and answers are compared as plain values (numbers, text, tuples, lists,
dicts, sets) outside your notebook."""


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def role(cell) -> str | None:
    """'answer', 'check', 'solution' or None (a course cell)."""
    found = [r for r in ROLES if r in tags(cell)]
    return found[0] if found else None


@dataclass
class Exercise:
    number: str                 # "6.2"
    title: str
    heading: int                # index of the markdown cell
    code: list[int]             # its code cells, up to the next markdown cell
    answer: int | None = None
    check: int | None = None
    solution: int | None = None


def exercises(nb: dict) -> list[Exercise]:
    """The exercises of a notebook in order, with the indices of their cells."""
    cells, found = nb["cells"], []
    for i, cell in enumerate(cells):
        m = EXERCISE.search(_source(cell)) if cell.get("cell_type") == "markdown" else None
        if not m:
            continue
        ex = Exercise(m.group(1), m.group(2), i, [])
        for j in range(i + 1, len(cells)):
            if cells[j].get("cell_type") == "markdown":
                break
            if cells[j].get("cell_type") == "code":
                ex.code.append(j)
                r = role(cells[j])
                if r and getattr(ex, r) is None:
                    setattr(ex, r, j)
        found.append(ex)
    return found


def defined_names(source: str) -> set[str]:
    """Top-level names a cell binds (assignments, defs, classes, imports); empty if it does not parse."""
    import ast

    try:
        tree = ast.parse(strip_magics(source))
    except SyntaxError:
        return set()
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {n for t in targets for n in _bound(t)}
    return out


def assigned_names(source: str) -> set[str]:
    """Top-level names a cell binds by assignment (a chapter's computed values, not its functions or
    imports); empty if it does not parse."""
    import ast

    try:
        tree = ast.parse(strip_magics(source))
    except SyntaxError:
        return set()
    return {n for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) for n in _bound(t)}


def _bound(target) -> list[str]:
    """Names an assignment target binds (``a``, ``a, (b, c)``), not ``a.x`` or ``a[0]``."""
    import ast

    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _bound(t)]
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    return []


def strip_magics(source: str) -> str:
    """Python source with IPython magics (``%pip``, ``!ls``) blanked, so ``ast`` can read it."""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines())


def convention_problems(nb: dict, name: str) -> list[str]:
    """Where a notebook breaks the exercise convention (see the module docstring); [] if it keeps it."""
    cells, problems = nb["cells"], []
    claimed = set()
    for ex in exercises(nb):
        where = f"{name} exercise {ex.number}"
        roles = [role(cells[j]) for j in ex.code]
        claimed |= set(ex.code)
        tagged = [r for r in roles if r]
        if tagged != list(ROLES):
            problems.append(f"{where}: code cells tagged {tagged or 'nothing'}; expected exactly one answer, one "
                            "check and one solution cell, in that order")
            continue
        if any(r is None for r in roles[roles.index("answer"):]):
            problems.append(f"{where}: an untagged cell after the answer cell (course cells go before it)")
        answer, check, solution = (_source(cells[getattr(ex, r)]) for r in ROLES)
        if f'helpers.exercises.check("exercise {ex.number}"' not in check.replace("\n", "").replace("( ", "("):
            problems.append(f'{where}: the check cell does not call helpers.exercises.check("exercise {ex.number}", ...)')
        if "helpers.exercises.check(" in answer or "helpers.exercises.solution(" in answer:
            problems.append(f"{where}: the answer cell calls a check; checks belong in the check cell")
        names = defined_names(answer)
        if not names or not any(re.search(rf"\b{re.escape(n)}\b", check) for n in names):
            problems.append(f"{where}: the check cell reads none of the names the answer cell defines ({sorted(names)})")
        if "hide-cell" not in tags(cells[ex.solution]):
            problems.append(f"{where}: the solution cell is not tagged hide-cell (the book would show it)")
        if f'helpers.exercises.solution("exercise {ex.number}"' not in solution:
            problems.append(f"{where}: the solution cell does not prove itself with helpers.exercises.solution")
    stray = [i for i, c in enumerate(cells) if role(c) and i not in claimed]
    problems += [f"{name} cell {i + 1}: tagged {role(cells[i])} outside an exercise" for i in stray]
    return problems


NO_LITERAL = object()  # a check whose expected value is computed in the notebook, not written out


def _check_call(tree, number: str):
    import ast

    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and ast.unparse(node.func) == "helpers.exercises.check" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == f"exercise {number}"):
            return node
    return None


def expected_literal(source: str, number: str):
    """The expected value a check cell writes out for exercise ``number`` (``NO_LITERAL`` if it computes it)."""
    import ast

    try:
        call = _check_call(ast.parse(strip_magics(source)), number)
    except SyntaxError:
        return NO_LITERAL
    want = _want_node(call)
    if want is None:
        return NO_LITERAL
    try:
        return ast.literal_eval(want)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NO_LITERAL


def _want_node(call):
    if call is None:
        return None
    if len(call.args) >= 3:
        return call.args[2]
    return next((k.value for k in call.keywords if k.arg == "want"), None)


def seal_check(source: str, number: str) -> str:
    """The check cell with the expected value it writes out replaced by ``helpers.exercises.sealed(digest)``.

    A computed expected value (an expression of the notebook's names) stays: it shows how the course
    computes it, not the value. The digest is of the value's plain form (``helpers.core.exercises.digest``).
    """
    import ast

    from ..core.exercises import digest

    value = expected_literal(source, number)
    if value is NO_LITERAL:
        return source
    want = _want_node(_check_call(ast.parse(strip_magics(source)), number))
    lines = source.encode("utf-8").splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    raw = source.encode("utf-8")  # ast offsets are in UTF-8 bytes
    a = starts[want.lineno - 1] + want.col_offset
    b = starts[want.end_lineno - 1] + want.end_col_offset
    seal = f'helpers.exercises.sealed("{digest(f"exercise {number}", value)}")'
    return (raw[:a] + seal.encode() + raw[b:]).decode("utf-8")


def prediction_seals(nb: dict) -> dict[str, str]:
    """Per exercise whose check takes the answer as the student writes it (``check("exercise 5.1", answer_1,
    3)``: a prediction or a count, not code that the check runs), the seal of the expected value its check
    cell writes out: ``digest`` of the literal in the book, or the ``sealed("sha256:…")`` of a student edition.
    An exercise whose check runs the answer (``compiled_h_runs(answer_3)``) is left out: its expected value
    in plain sight answers nothing (the student's code must produce it)."""
    import ast

    from ..core.exercises import digest

    cells, out = nb["cells"], {}
    for ex in exercises(nb):
        if ex.check is None or ex.answer is None:
            continue
        try:
            call = _check_call(ast.parse(strip_magics(_source(cells[ex.check]))), ex.number)
        except SyntaxError:
            continue
        want = _want_node(call)
        if want is None or len(call.args) < 2 or not isinstance(call.args[1], ast.Name) \
                or call.args[1].id not in defined_names(_source(cells[ex.answer])):
            continue
        value = _literal(want)
        if value is not NO_LITERAL:
            out[ex.number] = digest(f"exercise {ex.number}", value)
        elif (isinstance(want, ast.Call) and ast.unparse(want.func).endswith("exercises.sealed") and want.args
              and isinstance(want.args[0], ast.Constant) and isinstance(want.args[0].value, str)):
            out[ex.number] = want.args[0].value
    return out


def _literal(node):
    """The value of a literal expression (``5``, ``-1``, ``(0, 0, 1)``, ``{"a"}``), or ``NO_LITERAL``."""
    import ast

    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NO_LITERAL


STATING = ("figure", "reference", "print", "display")  # calls whose literals state a result (``seal_stated``)


def _stated_values(node):
    """The literal values an expectation states: ``exact(5)``, ``exact(by_torch={"2.11": 2})``, ``band(cpu=(1,
    2))``: the arguments of the calls in it, into tuples, lists and dict values, not into arithmetic or
    indices (``exact(2 * trips[-1])`` states no literal)."""
    import ast

    if isinstance(node, ast.Call):
        for a in [*node.args, *(k.value for k in node.keywords)]:
            yield from _stated_values(a)
        return
    value = _literal(node)
    if value is not NO_LITERAL:
        yield value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for e in node.elts:
            yield from _stated_values(e)
    elif isinstance(node, ast.Dict):
        for v in node.values:
            yield from _stated_values(v)


def _sealing(value, seals: dict[str, str]) -> tuple[str, str] | None:
    """(exercise, seal) when ``value`` hashes to an exercise's seal; a bool never does (True hashes as 1, and
    a yes/no is no count; a seal of a two-valued answer would hide nothing anyway)."""
    from ..core.exercises import digest

    if value is NO_LITERAL or isinstance(value, bool) or value is None:
        return None
    for number, seal in seals.items():
        if digest(f"exercise {number}", value) == seal:
            return number, seal
    return None


def seal_stated(source: str, seals: dict[str, str]) -> str:
    """A course cell with the literals that state an exercise's expected value sealed or left out (issue 29).

    ``seals``: ``prediction_seals`` of the chapter. A figure whose expectation states it (``expect=
    helpers.exact(3)``) is recorded instead (``helpers.record()``: the hand-out does not check it); a
    reference value (``helpers.reference("series_equals_match", 3, ...)``) becomes ``None``; a printed or
    displayed literal, a bare one, or one an assert compares with ``==`` becomes the seal
    (``helpers.exercises.sealed(seal, "exercise 5.1")``, equal by digest). Literals the code computes with
    (``x + 1``, ``range(6)``, ``guard_trees(f, x, 3, [1, 2])``) stay: they are inputs, not answers.
    """
    import ast

    if not seals:
        return source
    try:
        tree = ast.parse(strip_magics(source))
    except SyntaxError:
        return source
    spans = []  # (node, replacement)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = ast.unparse(node.func).rsplit(".", 1)[-1]
            if fn == "figure":
                expect = next((k.value for k in node.keywords if k.arg == "expect"), None)
                if expect is not None and any(_sealing(v, seals) for v in _stated_values(expect)):
                    spans.append((expect, "helpers.record()"))
            elif fn == "reference":
                value = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords
                                                                      if k.arg == "value"), None)
                if value is not None and _sealing(_literal(value), seals):
                    spans.append((value, "None"))
            elif fn in ("print", "display"):
                spans += [(a, _sealed_text(hit)) for a in node.args if (hit := _sealing(_literal(a), seals))]
        elif isinstance(node, ast.Expr):
            hit = _sealing(_literal(node.value), seals)
            if hit:
                spans.append((node.value, _sealed_text(hit)))
        elif isinstance(node, ast.Assert):  # assert f(0) == 2: the seal compares by digest
            for cmp in ast.walk(node.test):
                if isinstance(cmp, ast.Compare) and all(isinstance(op, (ast.Eq, ast.NotEq)) for op in cmp.ops):
                    spans += [(o, _sealed_text(hit)) for o in [cmp.left, *cmp.comparators]
                              if (hit := _sealing(_literal(o), seals))]
    return _replace(source, spans)


def _sealed_text(hit: tuple[str, str]) -> str:
    number, seal = hit
    return f'helpers.exercises.sealed("{seal}", "exercise {number}")'


def _replace(source: str, spans) -> str:
    """``source`` with each node's text replaced (outermost first; ast offsets are in UTF-8 bytes)."""
    raw = source.encode("utf-8")
    starts = [0]
    for ln in raw.splitlines(keepends=True):
        starts.append(starts[-1] + len(ln))
    cuts = sorted(((starts[n.lineno - 1] + n.col_offset, starts[n.end_lineno - 1] + n.end_col_offset, text)
                   for n, text in spans), key=lambda c: (c[0], -c[1]))
    out, at = [], 0
    for a, b, text in cuts:
        if a < at:  # inside one already replaced
            continue
        out += [raw[at:a], text.encode()]
        at = b
    return b"".join(out + [raw[at:]]).decode("utf-8")


def student_edition(nb: dict, chapter: str, name: str, *, keep_outputs: bool = False) -> dict:
    """A copy of a chapter notebook without solution cells, ready to hand out.

    Every output goes (a blank copy to run from the top); with ``keep_outputs`` the book's outputs stay
    but for the exercises' own cells (they may answer a "predict" exercise: the instructor's choice). The
    answer and check cells are stamped with their exercise; a check cell's written-out expected value is
    sealed (``seal_check``), and so is what a course cell states of a prediction's (``seal_stated``).
    """
    problems = convention_problems(nb, name)
    if problems:
        raise CourseError("cannot make a student edition:\n  " + "\n  ".join(problems))
    out = copy.deepcopy(nb)
    found = exercises(out)
    for ex in found:
        for j in ex.code:  # the exercise's own cells: its answer, check and the course cells it needs
            if out["cells"][j].get("cell_type") == "code":
                out["cells"][j]["outputs"], out["cells"][j]["execution_count"] = [], None
        for r in ("answer", "check"):
            cell = out["cells"][getattr(ex, r)]
            cell["metadata"][META] = {"exercise": ex.number, "role": r}
        check = out["cells"][ex.check]
        check["source"] = seal_check(_source(check), ex.number)
    drop = {ex.solution for ex in found}
    answers = {ex.answer for ex in found}
    seals = prediction_seals(nb)
    for j, cell in enumerate(out["cells"]):  # a course cell that states a prediction's expected value
        if cell.get("cell_type") == "code" and j not in drop and j not in answers:
            sealed = seal_stated(_source(cell), seals)
            if sealed != _source(cell):
                cell["source"] = sealed
    out["cells"] = [c for i, c in enumerate(out["cells"]) if i not in drop]
    if not keep_outputs:
        for cell in out["cells"]:
            if cell.get("cell_type") == "code":
                cell["outputs"], cell["execution_count"] = [], None
    note = {"cell_type": "markdown", "id": f"student-{chapter}", "metadata": {}, "source": NOTE}
    out["cells"].insert(1, note)
    out["metadata"][NOTEBOOK_META] = {"chapter": chapter, "notebook": name,
                                     "exercises": [ex.number for ex in found]}
    return out


def write(names: list[str], out: str | Path, *, keep_outputs: bool = False) -> list[Path]:
    """``student [chapters] --out DIR``: write the student edition of each chapter (default: the book's)."""
    from .run import CHAPTER_FILE, resolve
    from .verify import load_notebook

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in (resolve(names) if names else book_chapters()):
        m = CHAPTER_FILE.match(path.name)
        nb = student_edition(load_notebook(path), m.group(1) if m else path.stem, path.name,
                             keep_outputs=keep_outputs)
        target = out / path.name
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


def book_chapters() -> list[Path]:
    """The chapter notebooks the book lists in ``_toc.yml``, in course order (unfinished ones are left out)."""
    from ..core.env import REPO_ROOT
    from .run import chapters

    toc = (REPO_ROOT / "_toc.yml").read_text()
    listed = set(re.findall(r"file:\s*chapters/(ch\d\d_[\w-]+)\s*$", toc, re.M))
    return [p for p in chapters().values() if p.stem in listed]
