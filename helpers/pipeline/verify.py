"""Re-check an executed notebook from its outputs alone: figures, errors, glue references (ch01)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.env import VERIFIED_TORCH, CourseError, verified_torch_for
from ..core.figures import META_KEY, MOVED_KEY, check
from ..core.numbers import TABLE_META_KEY
from ..core.session import ENV_META_KEY

GLUE_ROLE = re.compile(r"\{glue(?::text|:any|:md)?\}`([^`]+)`")


GLUE_DIRECTIVE = re.compile(r"^(?:```|:::)\{glue(?::figure|:any|:md|:math)?\}\s+(\S+)", re.M)


def glue_references(markdown: str) -> list[str]:
    """Names cited with glue roles or directives in a markdown cell (format specs stripped)."""
    names = [m.group(1) for m in GLUE_ROLE.finditer(markdown)]
    names = [n.split(":", 1)[0] for n in names]
    return names + [m.group(1) for m in GLUE_DIRECTIVE.finditer(markdown)]


def load_notebook(path: str | Path) -> dict:
    """Read an .ipynb as plain JSON, or raise a CourseError saying what is wrong with it."""
    path = Path(path)
    if not path.exists():
        raise CourseError(f"{path}: no such file.")
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CourseError(f"{path}: not a readable notebook (invalid JSON: {exc}). "
                          "Re-run it with `python -m helpers run`.") from exc
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list) or nb.get("nbformat") != 4:
        raise CourseError(f"{path}: not a Jupyter notebook in format 4.")
    return nb


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


@dataclass
class NotebookResult:
    path: str
    env: dict | None = None
    figures: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float | None = None
    status: str = "ok"  # ok / failed / error / timeout
    tables: list[list] = field(default_factory=list)  # rows of the numbers tables (label, series, figure, fmt)
    lock: dict | None = None  # in a GPU run that shares the machine: cells, waiting and exclusive time
    span: list | None = None  # [start, end] in seconds since the run started (a run of several chapters)
    restart: str | None = None  # when its first kernel did not start: after how long, and papermill's words

    @property
    def ok(self) -> bool:
        return not self.problems

    def counts(self) -> dict:
        out: dict[str, int] = {}
        for f in self.figures:
            out[f["status"]] = out.get(f["status"], 0) + 1
        return out

    def as_dict(self) -> dict:
        return {"path": self.path, "status": self.status, "ok": self.ok, "seconds": self.seconds,
                "env": self.env, "counts": self.counts(), "problems": self.problems, "figures": self.figures,
                "tables": self.tables, **({"lock": self.lock} if self.lock else {}),
                **({"span": self.span} if self.span else {}), **({"restart": self.restart} if self.restart else {})}


def verify_notebook(path: str | Path) -> NotebookResult:
    """Check every figure against its expectation, and that nothing raised and every glue resolves."""
    path = Path(path)
    result = NotebookResult(str(path))
    try:
        nb = load_notebook(path)
    except CourseError as exc:
        result.problems.append(str(exc))
        result.status = "error"
        return result
    glued, cited, glued_in = set(), [], {}
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") == "markdown":
            cited += glue_references(_source(cell))
            continue
        if cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}) or {}
            if out.get("output_type") == "error":
                result.problems.append(f"cell {index} raised {out.get('ename')}: {out.get('evalue')}")
                result.status = "error"
            if ENV_META_KEY in meta:
                result.env = meta[ENV_META_KEY]
            if "scrapbook" in meta:
                name = meta["scrapbook"].get("name")
                glued.add(name)
                glued_in.setdefault(name, []).append(index)
            if META_KEY in meta:
                result.figures.append(_recheck(meta[META_KEY], index, result))
            if TABLE_META_KEY in meta:
                result.tables += meta[TABLE_META_KEY].get("rows", [])
    pm = nb.get("metadata", {}).get("papermill", {})
    result.seconds = pm.get("duration")
    if pm.get("exception") and result.status != "error":
        result.problems.append("papermill recorded an exception while executing this notebook")
        result.status = "error"
    if result.env is None:
        result.problems.append("no environment record: this is not an executed course notebook "
                               "(run it with `python -m helpers run`, which executes the setup cells)")
    for name, cells in sorted(glued_in.items()):
        if len(cells) > 1:  # myst-nb refuses a page whose glue key is set twice
            result.problems.append(f"glue {name!r} is glued {len(cells)} times (cells {', '.join(map(str, cells))}): "
                                   f"the book build rejects a duplicate key; record it once")
    for name in sorted(set(cited) - glued):
        result.problems.append(f"prose cites glue {name!r}, but no cell glued it")
    if result.problems and result.status == "ok":
        result.status = "failed"
    return result


def _recheck(meta: dict, index: int, result: NotebookResult) -> dict:
    name = meta.get("name", "?")
    origin = meta.get("origin", "run")
    if origin in ("reference", "canonical", "words"):
        return {**meta, "status": origin, "rule": meta.get("source", origin), "cell": index}
    expect = meta.get("expect")
    if not isinstance(expect, dict) or expect.get("kind") not in ("exact", "band", "record"):
        result.problems.append(f"figure {name!r} (cell {index}) has no valid expectation")
        return {**meta, "status": "fail", "rule": "no expectation", "cell": index}
    status, rule = check(meta.get("value"), expect, meta.get("classes") or ["?"], meta.get("torch_minor", ""))
    if meta.get(MOVED_KEY):  # a private step torch moved did not run (helpers/core/private.py)
        status, rule = "unverified", meta[MOVED_KEY]
        if meta.get("torch_minor") in VERIFIED_TORCH:
            result.problems.append(f"figure {name!r} was not measured on torch {meta.get('torch_minor')}, a verified "
                                   f"version: {rule}")
    elif status == "fail":
        result.problems.append(f"figure {name!r} = {meta.get('value')!r}{(' ' + meta['unit']) if meta.get('unit') else ''} "
                               f"misses its expectation ({rule})")
    elif (status == "unverified" and expect.get("kind") == "exact" and "by_interpreter" not in expect
          and meta.get("torch_minor") in verified_torch_for(meta.get("classes") or ["cpu"])):
        result.problems.append(f"figure {name!r} has no expected value for torch {meta.get('torch_minor')}, "
                               "a verified version: add it to its exact(...)")
    return {**meta, "status": status, "rule": rule, "cell": index}
