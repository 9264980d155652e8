"""Static checks on chapter notebooks: bare measured numbers, setup/parameters cells, expectations (ch01)."""
from __future__ import annotations

import re
from pathlib import Path

from .verify import _source, load_notebook

UNITS = (r"×(?!\s*\d)|x\b(?!\s*\d)|ms\b|µs\b|us\b|ns\b|s\b|sec(?:onds?)?\b|min(?:utes?)?\b|KiB\b|MiB\b|GiB\b|KB\b|MB\b|GB\b|TB\b"
         r"|GB/s\b|TB/s\b|TFLOP/s\b|GFLOP/s\b|%|graphs?\b|breaks?\b|kernels?\b|recompil\w*\b|guards?\b"
         r"|compiles?\b|launch(?:es)?\b|nodes?\b|ops?\b|instructions?\b")


BARE_NUMBER = re.compile(rf"(?<![\w.])(\d+(?:[.,]\d+)*)\s?(?:{UNITS})")


ROLE_IN_CODE = re.compile(r"`\{[a-z][\w:-]*\}`")  # a role inside a code span renders as raw text


COMPARISON = re.compile(
    r"\b(most|mostly|more than|fewer than|less than|as (?:fast|slow|much|many) as|several times|"
    r"\w+ times (?:faster|slower|more|less|larger|smaller|longer|shorter)|faster|slower|cheaper|costlier|"
    r"close to (?:one|zero|1|0)|about the same|the same everywhere|negligible|dominat\w*|majority|"
    r"grows?|shrinks?)\b", re.I)


NOT_MEASURED = re.compile(r"<!--\s*not-measured:\s*\S.*?-->", re.S)


SETUP_CALL = re.compile(r"""helpers\.setup\(["'](ch\d\d)["']\)""")


def _strip_allowed(markdown: str) -> str:
    """Remove what may hold numbers: code, glue references, quoted reference data, links, math."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r":::.*?:::", " ", text, flags=re.S)
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", text)  # roles, glue included
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\$[^$]*\$", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    # quoted reference data (blockquotes) and the authored reading-time estimate are not measurements
    text = "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith(">") and not line.lstrip().startswith("**Time:**"))
    return text


def bare_numbers(markdown: str) -> list[str]:
    """Measured-looking numbers (``6.1×``, ``0.19 ms``, ``3 graphs``) not cited through glue."""
    return [m.group(0) for m in BARE_NUMBER.finditer(_strip_allowed(markdown))]


def roles_in_code(markdown: str) -> list[str]:
    """Roles wrapped in backticks (`` `{glue:text}`x`` ``): the book prints them as raw text."""
    return [m.group(0) for m in ROLE_IN_CODE.finditer(markdown)]


def unsupported_comparisons(markdown: str) -> list[str]:
    """Comparison words in paragraphs that cite no glued figure (and do not say why none is needed).

    A sentence that compares ("most", "faster", "several times") must rest on a figure whose
    expectation encodes the comparison, so that a new torch or CPU flips a check, not a sentence.
    A comparison that is not a measurement (a definition, a design statement) is marked with
    ``<!-- not-measured: why -->`` in its paragraph.
    """
    hits = []
    text = re.sub(r"```.*?```", "\n\n", markdown, flags=re.S)
    text = re.sub(r":::.*?:::", "\n\n", text, flags=re.S)
    for para in re.split(r"\n\s*\n", text):
        if "{glue" in para or NOT_MEASURED.search(para):
            continue
        plain = re.sub(r"`[^`]*`", " ", para)
        plain = "\n".join(l for l in plain.splitlines() if not l.lstrip().startswith((">", "#", "**Time:**")))
        hits += [m.group(0) for m in COMPARISON.finditer(plain)]
    return hits


def bad_glue_formats(markdown: str) -> list[str]:
    """Glue roles whose format spec Python cannot apply to a number (e.g. a stray brace)."""
    bad = []
    for m in re.finditer(r"\{glue(?::text)?\}`([^`]+)`", markdown):
        name, _, spec = m.group(1).partition(":")
        if not spec:
            continue
        try:
            format(1 if spec[-1:] in "bcdoxX" else 1.5, spec)
        except (ValueError, TypeError):
            bad.append(m.group(1))
    return bad


def lint_notebook(path: str | Path) -> list[str]:
    """Problems in one chapter notebook (empty when it is clean)."""
    path = Path(path)
    nb = load_notebook(path)
    problems = []
    cells = nb["cells"]
    code = [c for c in cells if c.get("cell_type") == "code"]
    if not code or not SETUP_CALL.search(_source(code[0])):
        problems.append("the first code cell must be the setup cell calling helpers.setup(\"chNN\")")
    elif "hide-input" not in code[0].get("metadata", {}).get("tags", []):
        problems.append("the setup cell needs the tag hide-input")
    params = [i for i, c in enumerate(code) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not params:
        problems.append("no cell is tagged 'parameters' (papermill needs one)")
    elif not any("helpers.configure(" in _source(c) for c in code[params[0] + 1:]):
        problems.append("no helpers.configure(...) call after the parameters cell")
    for index, cell in enumerate(cells):
        src = _source(cell)
        if cell.get("cell_type") == "markdown":
            for hit in bare_numbers(src):
                problems.append(f"cell {index}: bare number {hit!r} in prose: glue it from the notebook")
            for role in roles_in_code(src):
                problems.append(f"cell {index}: role inside a code span ({role}...): it renders raw; drop the backticks")
            for word in unsupported_comparisons(src):
                problems.append(f"cell {index}: comparison {word!r} in a paragraph with no glued figure: glue the "
                                f"figure it rests on, or mark why none is needed (<!-- not-measured: why -->)")
            for ref in bad_glue_formats(src):
                problems.append(f"cell {index}: glue reference {ref!r} has an invalid format spec")
        elif cell.get("cell_type") == "code":
            for call in re.finditer(r"\bfigure\(", src):
                if "expect=" not in _call_arguments(src, call.end()):
                    problems.append(f"cell {index}: figure(...) without expect=")
            for call in blind_timers(src):
                problems.append(f"cell {index}: {call}...) times a lambda without device=: the timer cannot see "
                                "that it runs on a GPU (it would time the launches on the CPU clock); pass device=")
    problems += alone_from_problems(nb)
    return [f"{path.name}: {p}" for p in problems]


def blind_timers(src: str) -> list[str]:
    """Calls of ``timing.wall``/``interleaved``/``gpu_time`` on a lambda with no ``device=``: the timer
    tells a GPU run from the tensors among its arguments, and a lambda hands it none."""
    out = []
    for call in re.finditer(r"\btiming\.(wall|interleaved|gpu_time)\(\s*lambda\b", src):
        if "device=" not in _call_arguments(src, call.end()):
            out.append(call.group(0).split("(")[0] + "(lambda")
    return out


def _call_arguments(src: str, start: int) -> str:
    """The text of a call's arguments from ``start`` (inside its parentheses) to its closing one."""
    depth = 1
    for end in range(start, len(src)):
        depth += src[end] == "("
        depth -= src[end] == ")"
        if depth == 0:
            return src[start:end]
    return src[start:]


#: What a cell before a chapter's ``alone-from-here`` cell may not contain: a timing (a timer, a band, a
#: figure in seconds), since in a GPU run those cells share the machine with other notebooks.
MEASURING = re.compile(r"\btiming\.|\bhelpers\.band\(|perf_counter|Event\(|\bfigure\([^)]*?,\s*\"(?:s|ms|µs|us|ns)\"")


def alone_from_problems(nb: dict) -> list[str]:
    """Misuse of the tag ``alone-from-here`` (where a course.alone chapter starts to need the machine alone)."""
    code = [(i, c) for i, c in enumerate(nb["cells"]) if c.get("cell_type") == "code"]
    tagged = [i for i, c in code if "alone-from-here" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        return []
    if not (nb.get("metadata", {}).get("course") or {}).get("alone"):
        return [f"cell {tagged[0]}: tag 'alone-from-here' outside a chapter marked course.alone"]
    if len(tagged) > 1:
        return [f"cells {tagged}: tag 'alone-from-here' on more than one cell"]
    out = []
    for i, c in code:
        if i >= tagged[0]:
            break
        hit = MEASURING.search(_source(c))
        if hit:
            out.append(f"cell {i} comes before the 'alone-from-here' cell but measures ({hit.group(0)!r}): "
                       "in a GPU run it would share the machine while timing; move the tag up")
    return out
