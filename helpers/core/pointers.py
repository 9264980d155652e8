"""Where to read the source: every chapter's pointers into torch's files, checked against a torch (every
chapter's last section; ``python -m helpers pointers`` checks all thirty).

A chapter's pointers are data, written in its source as the argument of one hide-input cell::

    helpers.where_to_read([
        ("torch/_dynamo/side_effects.py",
         ["SideEffects", "SideEffects.store_attr"],
         "`SideEffects`: `store_attr`, the recorded write."),
        ("torch/_dynamo/variables/lazy.py",
         ["LazyConstantVariable", "ComputedLazyConstantVariable >=2.15"],
         "`LazyConstantVariable`; on torch 2.15 also `ComputedLazyConstantVariable`."),
        ("torch/csrc/dynamo/guards.cpp", [], "the C++ guard tree."),
    ])

Each pointer is ``(path, symbols, description)``:

- ``path``: a file or folder inside the torch package (``torch/...``, as the wheel lays it out;
  ``torch/include/...`` for the C++ headers the wheel ships), or a C/C++ source of PyTorch's source tree
  (``torch/csrc/...``, ``aten/src/...``, ``c10/...``) that the wheel does not ship;
- ``symbols``: the names the file defines that the description points at: ``name`` (a module-level
  function, class or assignment), ``Class.member`` (a method, nested class or class attribute),
  ``function.inner`` (a class or function defined inside a function, any depth: ``A.f.Inner``); for a
  folder (a path ending in ``/``), the files in it that the description names (``builtins.py``);
- ``description``: one line of Markdown (code spans, no MyST roles: an output renders as CommonMark).

A path or a symbol may end with a torch-version condition, ``>=2.13``, ``<2.13``, ``==2.15`` or several
joined by commas (``>=2.13,<2.15``): where a file or a name moved between the verified versions (2.11,
2.13, 2.15), each variant names the versions it holds on. Under another torch the variant is not checked.

Resolving reads files and imports nothing from torch: the file must exist under the torch root
(``torch.__file__``'s folder, or one given); a Python file (or ``.pyi`` stub) is parsed with :mod:`ast` and
must define every symbol (``class``, ``def``/``async def``, an assignment, at module level or in a
module-level ``if``/``try``/``with``; ``A.b`` in class ``A``'s body, or assigned as ``self.b`` in one of its
methods; ``f.g`` a ``def``/``class`` inside function ``f``); a header must contain each part of the name as a word. A ``.c``/``.cpp`` file is not in the wheel:
it is marked "source tree", with the link to read it at the torch's tag, counted apart and never as
resolved; it lists no symbols (they could not be checked): point at its header under ``torch/include/``
for those.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

SOURCE_TREE_URL = "https://github.com/pytorch/pytorch/blob/{tag}/{path}"
CALL = "helpers.where_to_read("
_CONDITION = re.compile(r"^(>=|<=|==|<|>)(\d+)\.(\d+)$")
_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".mm")
_SOURCE_TREE_ROOTS = ("torch/csrc/", "aten/src/", "c10/", "caffe2/")


class PointerError(ValueError):
    """A pointer that is written wrongly (not one that rotted)."""


@dataclass(frozen=True)
class Pointer:
    path: str
    symbols: tuple[str, ...]
    description: str
    condition: str = ""                                   # on the path: the versions the file is there
    conditions: dict = field(default_factory=dict, compare=False, hash=False)   # symbol -> condition

    @classmethod
    def from_entry(cls, entry) -> "Pointer":
        """A pointer from a chapter's ``(path, symbols, description)`` tuple."""
        if not (isinstance(entry, (tuple, list)) and len(entry) == 3):
            raise PointerError(f"a pointer is (path, symbols, description), not {entry!r}")
        path, symbols, description = entry
        if not isinstance(path, str) or not isinstance(description, str) or isinstance(symbols, str) \
                or not all(isinstance(s, str) for s in symbols):
            raise PointerError(f"a pointer is (path: str, symbols: list of str, description: str): {entry!r}")
        path, condition = _split(path)
        if path.startswith("/") or ".." in Path(path).parts or not path.startswith(("torch/", *_SOURCE_TREE_ROOTS)):
            raise PointerError(f"{path!r}: a path inside the torch package (torch/...) or PyTorch's source tree")
        if "{" in description and re.search(r"\{[\w:-]+\}`", description):
            raise PointerError(f"{path}: a MyST role in a description renders raw in an output: {description!r}")
        names, conditions = [], {}
        for s in symbols:
            name, cond = _split(s)
            if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
                raise PointerError(f"{path}: {s!r} is not a name, Class.member or function.inner")
            names.append(name)
            if cond:
                conditions[name] = cond
        pointer = cls(path, tuple(names), description.strip(), condition, conditions)
        if pointer.in_source_tree and names:
            raise PointerError(f"{path}: the wheel does not ship it, so its names cannot be checked: list none "
                               f"(and point at a header under torch/include/ for the names)")
        return pointer

    @property
    def in_source_tree(self) -> bool:
        """A C/C++ source file the wheel does not ship."""
        return self.path.startswith(_SOURCE_TREE_ROOTS) and self.path.endswith(_SOURCE_SUFFIXES)


@dataclass
class Result:
    pointer: Pointer
    status: str                       # "resolved", "rotted", "source tree", "other torch"
    missing: list[str] = field(default_factory=list)    # symbols not defined (or ["(file)"])
    skipped: list[str] = field(default_factory=list)    # variants for other torch versions
    also_here: list[str] = field(default_factory=list)  # of those, the ones this torch defines all the same
    url: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "rotted"


def _split(text: str) -> tuple[str, str]:
    """``"name >=2.15"`` -> ``("name", ">=2.15")``; the condition is checked for form."""
    name, _, cond = text.strip().partition(" ")
    cond = cond.replace(" ", "")
    for part in filter(None, cond.split(",")):
        if not _CONDITION.match(part):
            raise PointerError(f"{text!r}: a version condition is >=X.Y, <X.Y, ==X.Y (comma-joined)")
    return name, cond


def version_tuple(version: str) -> tuple[int, int]:
    """``"2.11.0+cu130"`` -> ``(2, 11)``."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if not m:
        raise PointerError(f"not a torch version: {version!r}")
    return int(m.group(1)), int(m.group(2))


def holds(condition: str, version: str) -> bool:
    """Whether a version condition (``>=2.13,<2.15``) holds for ``version``; an empty one always does."""
    v = version_tuple(version)
    for part in filter(None, condition.split(",")):
        op, major, minor = _CONDITION.match(part).groups()
        w = (int(major), int(minor))
        if not {">=": v >= w, "<=": v <= w, "==": v == w, "<": v < w, ">": v > w}[op]:
            return False
    return True


def in_words(condition: str) -> str:
    """``">=2.13,<2.15"`` -> ``"torch 2.13 and later, before 2.15"``."""
    words = {">=": "{} and later", ">": "after {}", "<": "before {}", "<=": "{} and earlier", "==": "{} only"}
    parts = [_CONDITION.match(c).groups() for c in condition.split(",") if c]
    return "torch " + ", ".join(words[op].format(f"{a}.{b}") for op, a, b in parts)


def torch_root(root: str | Path | None = None) -> Path:
    """The folder that holds the ``torch`` package (``torch/`` inside it): the installed one, or ``root``.

    ``root`` may name the package folder itself (``.../site-packages/torch``) or the folder above it (an
    unpacked wheel). The installed torch is found without importing it.
    """
    if root is None:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            raise PointerError("torch is not installed: pass the folder of an unpacked torch (--torch-root)")
        return Path(list(spec.submodule_search_locations)[0]).parent
    root = Path(root)
    if (root / "torch" / "__init__.py").exists():
        return root
    if (root / "__init__.py").exists() and root.name == "torch":
        return root.parent
    raise PointerError(f"{root}: no torch package there (expected {root}/torch/__init__.py)")


def torch_version(root: Path) -> str:
    """The torch version of an unpacked torch, read from ``torch/version.py``."""
    text = (root / "torch" / "version.py").read_text()
    m = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", text, re.M)
    if not m:
        raise PointerError(f"{root}/torch/version.py names no __version__")
    return m.group(1)


def source_tag(version: str) -> str:
    """The git tag of PyTorch's source tree for a torch version: ``2.11.0+cu130`` -> ``v2.11.0``."""
    return "v" + re.match(r"[\d.]+", version).group(0).rstrip(".")


def _body_names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Names a block defines: classes, functions, assignments, also inside if/try/with blocks."""
    names: dict[str, ast.AST] = {}

    def targets(t):
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from targets(e)

    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.setdefault(node.name, node)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                for n in targets(t):
                    names.setdefault(n, node)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            for n in targets(node.target):
                names.setdefault(n, node)
        elif isinstance(node, ast.If):
            for n, v in {**_body_names(node.body), **_body_names(node.orelse)}.items():
                names.setdefault(n, v)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            blocks = node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
            for n, v in _body_names(blocks).items():
                names.setdefault(n, v)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for n, v in _body_names(node.body).items():
                names.setdefault(n, v)
    return names


@lru_cache(maxsize=512)
def _defined(path: Path) -> dict[str, ast.AST]:
    return _body_names(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body)


def defines(path: Path, symbol: str) -> bool:
    """Whether a Python file (or stub) defines ``name``, ``Class.member`` or ``function.inner``; a header names
    each part as a word."""
    if path.suffix in (".h", ".hpp", ".cuh"):
        text = path.read_text(errors="replace")  # C++: every part of ``A.b`` is a word of the header
        return all(re.search(rf"\b{re.escape(part)}\b", text) for part in symbol.split("."))
    head, *rest = symbol.split(".")
    node = _defined(path).get(head)
    for part in rest:
        if isinstance(node, ast.ClassDef):
            child = _body_names(node.body).get(part)
            if child is None and part in _instance_names(node):
                child = ast.Pass()  # an attribute set on self: found, with nothing below it
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # a function's own classes and functions (not its local variables)
            child = next((n for n in ast.walk(ast.Module(body=node.body, type_ignores=[]))
                          if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == part),
                         None)
        else:
            child = None
        node = child
    return node is not None


def _instance_names(cls: ast.ClassDef) -> set[str]:
    """Attributes a class's methods assign on ``self`` (``self.mm_configs = ...``)."""
    out = set()
    for fn in cls.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.args.args:
            me = fn.args.args[0].arg
            for node in ast.walk(fn):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
                out |= {t.attr for t in targets if isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name) and t.value.id == me}
    return out


def resolve(pointer: Pointer, root: Path, version: str) -> Result:
    """Check one pointer against the torch unpacked under ``root`` (its version is ``version``)."""
    if pointer.condition and not holds(pointer.condition, version):
        return Result(pointer, "other torch", skipped=[pointer.path])
    if pointer.in_source_tree:
        return Result(pointer, "source tree", url=SOURCE_TREE_URL.format(tag=source_tag(version), path=pointer.path))
    target = root / pointer.path
    if not target.exists():
        return Result(pointer, "rotted", missing=["(file)"])
    mine = [s for s in pointer.symbols if holds(pointer.conditions.get(s, ""), version)]
    skipped = [s for s in pointer.symbols if s not in mine]
    if target.is_dir():
        found = lambda s: (target / s).exists()  # a folder's "symbols" are its files
    else:
        found = lambda s: defines(target, s)
    missing = [s for s in mine if not found(s)]
    # a variant for other versions that this torch has too: its condition may be too narrow (reported, not failed)
    also_here = [s for s in skipped if found(s)]
    return Result(pointer, "rotted" if missing else "resolved", missing=missing, skipped=skipped, also_here=also_here)


def resolve_all(pointers, root: str | Path | None = None) -> tuple[str, list[Result]]:
    """The torch version under ``root`` (default: the installed torch) and each pointer's result."""
    base = torch_root(root)
    version = torch_version(base)
    parsed = [p if isinstance(p, Pointer) else Pointer.from_entry(p) for p in pointers]
    return version, [resolve(p, base, version) for p in parsed]


def markdown(version: str, results: list[Result]) -> str:
    """The section's list: each pointer with its description, marked as the torch it was checked in found it."""
    lines = [f"Checked against torch {version}, the one this page ran on: ✓ marks a file that is there and "
             "defines every name the line points at.", ""]
    for r in results:
        p = r.pointer
        head = f"`{p.path}` — {p.description}"
        if r.status == "resolved":
            lines.append(f"- ✓ {head}")
        elif r.status == "source tree":
            lines.append(f"- {head} *(in the PyTorch source tree, not in the wheel: read it at "
                         f"[{source_tag(version)}]({r.url}))*")
        elif r.status == "other torch":
            lines.append(f"- {head} *({in_words(p.condition)}; not checked in this torch)*")
        else:
            what = "the file is missing" if r.missing == ["(file)"] else \
                "not defined: " + ", ".join(f"`{s}`" for s in r.missing)
            lines.append(f"- ✗ {head} *(in torch {version}, {what})*")
    return "\n".join(lines)


def where_to_read(pointers, root: str | Path | None = None) -> None:
    """Show a chapter's "Where to read the source" list, each pointer checked in the torch it runs on.

    ``pointers``: ``(path, symbols, description)`` tuples (see the module's docstring). Nothing is
    imported from torch; a pointer that rotted is marked ✗ (``python -m helpers pointers`` fails on it).
    """
    from .text import show_markdown

    version, results = resolve_all(pointers, root)
    show_markdown(markdown(version, results))


# --- the chapters' pointers, read from their sources (tests and ``python -m helpers pointers``) ---------

def pointers_in_source(text: str) -> list[tuple]:
    """The entries of the ``helpers.where_to_read([...])`` call in a chapter's MyST source (read, not run)."""
    start = text.find(CALL)
    if start < 0:
        return []
    if text.find(CALL, start + 1) >= 0:
        raise PointerError("a chapter calls helpers.where_to_read once")
    end = text.find("\n```", start)
    call = ast.parse(text[start:end if end >= 0 else len(text)]).body[0].value
    if not isinstance(call, ast.Call) or len(call.args) != 1 or call.keywords:
        raise PointerError("helpers.where_to_read takes one list of pointers")
    try:
        return list(ast.literal_eval(call.args[0]))
    except ValueError as exc:
        raise PointerError(f"the pointers must be literals (strings, lists, tuples): {exc}") from exc


def chapter_pointers(sources: str | Path) -> dict[str, list[Pointer]]:
    """Each chapter's pointers (``ch07`` -> pointers) from ``sources/chNN_*.md``."""
    out = {}
    for path in sorted(Path(sources).glob("ch[0-9][0-9]_*.md")):
        out[path.name[:4]] = [Pointer.from_entry(e) for e in pointers_in_source(path.read_text())]
    return out


def check_chapters(sources: str | Path, root: str | Path | None = None) -> tuple[str, dict[str, list[Result]]]:
    """Resolve every chapter's pointers: the torch version and each chapter's results."""
    base = torch_root(root)
    version = torch_version(base)
    return version, {ch: [resolve(p, base, version) for p in ps] for ch, ps in chapter_pointers(sources).items()}


def report(version: str, base: Path, results: dict[str, list[Result]]) -> tuple[str, int]:
    """A per-chapter text report and the number of failures (rotted pointers, chapters without pointers)."""
    lines = [f"pointers checked against torch {version} at {base}"]
    rotted = tree = other = resolved = 0
    empty: list[str] = []
    for ch, rs in results.items():
        bad = [r for r in rs if r.status == "rotted"]
        rotted += len(bad)
        tree += sum(r.status == "source tree" for r in rs)
        other += sum(r.status == "other torch" for r in rs)
        resolved += sum(r.status == "resolved" for r in rs)
        if not rs:
            empty.append(ch)  # a chapter whose section lost its data fails like a rotted pointer
            lines.append(f"{ch}: NO POINTERS (its source has no helpers.where_to_read cell)")
            continue
        counts = ", ".join(f"{sum(r.status == s for r in rs)} {s}" for s in ("resolved", "source tree", "other torch")
                           if any(r.status == s for r in rs))
        lines.append(f"{ch}: {'ROTTED' if bad else 'ok'} ({len(rs)} pointers: {counts}{f', {len(bad)} rotted' if bad else ''})")
        for r in bad:
            what = "file missing" if r.missing == ["(file)"] else "not defined: " + ", ".join(r.missing)
            lines.append(f"  ROTTED {ch} {r.pointer.path}: {what}")
        for r in rs:
            for name in r.also_here:
                lines.append(f"  note: {r.pointer.path}: {name} (given for torch {r.pointer.conditions[name]}) "
                             f"is defined in this torch too: is its condition too narrow?")
            if r.status == "source tree":
                lines.append(f"  source tree (not in the wheel, not checked): {r.pointer.path} -> {r.url}")
    lines.append(f"total: {resolved} resolved, {tree} in the source tree only (unresolvable from the wheel), "
                 f"{other} for another torch, {rotted} rotted" + (f"; no pointers in {', '.join(empty)}" if empty else ""))
    return "\n".join(lines), rotted + len(empty)


def main(sources: str | Path, root: str | Path | None = None) -> int:
    """``python -m helpers pointers [--torch-root DIR]``: print the report; 1 if a pointer rotted (or a chapter
    has none)."""
    base = torch_root(root)
    version, results = check_chapters(sources, base)
    text, rotted = report(version, base, results)
    print(text)
    return 1 if rotted else 0
