"""Exercise checks every chapter uses: compare the reader's answer, reveal a solution (ch01).

A check prints one line (right, not quite, or not answered yet) and never raises, so a notebook
with unattempted exercises still runs to the end. Answers are compared as plain data (``plain``: the
types and values of numbers, strings, tuples, lists, dicts and sets; any other object only by its type
and, for the course's own types, its ``__eq__``), so an answer object cannot declare itself equal to
anything. In a kernel the line is a display output whose metadata carries a structured record
(``RECORD_KEY``: name, result, the answer's repr, and the answer and expected value as plain data), which
the grader reads and compares again in its own process (``python -m helpers grade``). The student edition
seals an expected value written in a check cell (``sealed``): the check then compares a digest, so the
copy handed out never shows the value. Checks that compile the reader's code live with their station
(``helpers.dynamo.exercises``).
"""
from __future__ import annotations

import hashlib
import json
import math

#: Functions that return ``{name: object}`` for the torch entry points the grader's watch compares before and
#: after a student's cell (``helpers.pipeline.audit.hooks``); a station registers its own at import
#: (``helpers.dynamo.exercises.entry_points``), so the pipeline need not import a station.
def public_entry_points() -> dict[str, object]:
    """``torch.compile`` and the callables of ``torch.compiler``: the public part of what the watch compares."""
    import torch

    out = {"torch.compile": torch.compile}
    for key, value in list(vars(torch.compiler).items()):
        if callable(value) and str(getattr(value, "__module__", "") or "").startswith("torch"):
            out[f"torch.compiler.{key}"] = value
    return out


WATCHED_ENTRY_POINTS: list = [public_entry_points]

RECORD_KEY = "course_exercise"
RESULTS = ("right", "not quite", "not answered")  # what a check can say
PLAIN_LIMIT = 20_000  # characters of JSON a record keeps of a plain value (a longer one is cut: never equal)


def plain(value, _depth: int = 0):
    """``value`` as JSON-able plain data that says its kind: what a check compares, in or out of a kernel.

    Numbers (bool, int, float and their numpy/0-d tensor forms) become ``{"num": ...}``, strings
    ``{"str": ...}``, tuples/lists ``{"tuple"|"list": [...]}`` (a namedtuple or torch.Size is a tuple),
    dicts ``{"dict": [[key, value], ...]}`` and sets ``{"set": [...]}`` in a fixed order; anything else is
    ``{"object": "module.Type", "repr": "..."}``. Built-in types are read through their own methods, never
    through a subclass's, so an answer cannot change what it is compared as.
    """
    import numbers
    import sys

    if _depth > 20:
        return {"object": "too deep", "repr": ""}
    d = _depth + 1
    if value is None:
        return None
    t = type(value)  # the real type: isinstance() would believe a faked __class__
    if issubclass(t, bool):
        return {"num": bool.__bool__(value)}
    if issubclass(t, int):
        return {"num": int.__index__(value)}
    if issubclass(t, float):
        x = float.__float__(value)
        return {"num": x if math.isfinite(x) else repr(x)}
    if issubclass(t, str):
        return {"str": str.__str__(value)}
    if issubclass(t, tuple):
        return {"tuple": [plain(v, d) for v in tuple.__iter__(value)]}
    if issubclass(t, list):
        return {"list": [plain(v, d) for v in list.__iter__(value)]}
    if issubclass(t, dict):
        items = [[plain(k, d), plain(v, d)] for k, v in dict.items(value)]
        return {"dict": sorted(items, key=lambda kv: json.dumps(kv[0], sort_keys=True))}
    if issubclass(t, (set, frozenset)):
        items = set.__iter__(value) if issubclass(t, set) else frozenset.__iter__(value)
        return {"set": sorted((plain(v, d) for v in items), key=lambda v: json.dumps(v, sort_keys=True))}
    torch = sys.modules.get("torch")
    if torch is not None and type(value) in (torch.Tensor, torch.nn.Parameter) and value.numel() == 1 and value.dim() == 0:
        return plain(torch.Tensor.item(value), d)
    if t.__module__ == "numpy" and issubclass(t, numbers.Number):
        return plain(value.item(), d)  # a numpy scalar (np.int64, np.float32, np.bool_)
    kind = t
    try:
        shown = repr(value)[:200]
    except Exception as exc:  # an answer's __repr__ may raise
        shown = f"<repr raised {type(exc).__name__}>"
    return {"object": f"{kind.__module__}.{kind.__qualname__}", "repr": shown}


def same_plain(got, want, tol: float = 1e-6, *, top: bool = True) -> bool:
    """Whether two plain values (``plain``) are equal: numbers within ``tol`` (Python's True == 1), a
    top-level string ignoring case and surrounding space, containers item by item. Objects never equal
    (their comparison needs the objects themselves: see ``check``)."""
    if got is None or want is None:
        return got is None and want is None
    if not (isinstance(got, dict) and isinstance(want, dict)) or set(got) != set(want):
        return False
    if "object" in want:  # an object (the course's own): the same type and repr
        return got == want and want["object"] not in ("too deep", "too large")
    if len(want) != 1:
        return False
    (kind,) = want
    a, b = got[kind], want[kind]
    if kind == "num":
        if isinstance(a, str) or isinstance(b, str):  # inf / nan
            return a == b and a != "nan"
        if isinstance(a, float) or isinstance(b, float):
            return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol)
        return int(a) == int(b)
    if kind == "str":
        return a.strip().lower() == b.strip().lower() if top else a == b
    if kind in ("tuple", "list", "set"):
        return len(a) == len(b) and all(same_plain(x, y, tol, top=False) for x, y in zip(a, b))
    if kind == "dict":
        return len(a) == len(b) and all(same_plain(ka, kb, tol, top=False) and same_plain(va, vb, tol, top=False)
                                        for (ka, va), (kb, vb) in zip(a, b))
    return False


def _objects_in(p) -> bool:
    return "object" in json.dumps(p)


def _raw_same(got, want, tol: float, top: bool = True) -> bool:
    """Equality where the expected value holds the course's own objects: containers item by item, an object
    equal only to one of exactly its type by that type's ``__eq__``, everything else as plain values."""
    tw, tg = type(want), type(got)
    pw = plain(want)
    if pw is not None and "object" in pw:
        return tg is tw and tw.__eq__(want, got) is True
    for kind in (tuple, list):
        if issubclass(tw, kind):
            if not issubclass(tg, kind) or len(got) != len(want):
                return False
            return all(_raw_same(g, w, tol, False) for g, w in zip(kind.__iter__(got), kind.__iter__(want)))
    if issubclass(tw, dict):
        if not issubclass(tg, dict) or len(got) != len(want):
            return False
        keys = {json.dumps(plain(k), sort_keys=True): k for k in dict.keys(got)}
        for k, w in dict.items(want):
            mine = keys.get(json.dumps(plain(k), sort_keys=True), _MISSING)
            if mine is _MISSING or not _raw_same(dict.__getitem__(got, mine), w, tol, False):
                return False
        return True
    return same_plain(plain(got), pw, tol, top=top)


_MISSING = object()


def digest(name: str, value) -> str:
    """The seal of an expected value: a hash of its canonical plain form, salted with the exercise's name."""
    return "sha256:" + hashlib.sha256(f"{name}\n{_canonical(plain(value))}".encode()).hexdigest()


def _canonical(p, top: bool = True) -> str:
    """A plain value as text equal for values ``same_plain`` calls equal (floats to 9 significant digits)."""
    if p is None:
        return "None"
    if len(p) != 1:  # an object: its type and repr
        return "object(" + json.dumps(p, sort_keys=True) + ")"
    (kind, v), = p.items()
    if kind == "num":
        if isinstance(v, str):
            return v
        if isinstance(v, int):
            return str(int(v))
        x = float(v)
        return str(int(x)) if x.is_integer() and abs(x) < 2**53 else format(x, ".9g")
    if kind == "str":
        return json.dumps(v.strip().lower() if top else v)
    if kind in ("tuple", "list", "set"):
        return kind + "(" + ",".join(_canonical(x, False) for x in v) + ")"
    if kind == "dict":
        return "dict(" + ",".join(_canonical(k, False) + ":" + _canonical(x, False) for k, x in v) + ")"
    return "object(" + json.dumps(p, sort_keys=True) + ")"


class Sealed:
    """An expected value the student edition does not show: only its digest (``sealed``). With the exercise's
    name it also compares (``==``) by digest, for a course cell's assert that states the value."""

    def __init__(self, seal: str, name: str = ""):
        self.seal, self.name = seal, name

    def __eq__(self, other):
        if isinstance(other, Sealed):
            return self.seal == other.seal
        return digest(self.name, other) == self.seal if self.name else NotImplemented

    def __hash__(self):
        return hash(self.seal)

    def __repr__(self):
        return "sealed(...)"


def sealed(seal: str, name: str = "") -> Sealed:
    """The student edition's stand-in for an expected value written in a check cell (see ``digest``), or
    stated in a course cell (``name``: the exercise, ``"exercise 6.1"``)."""
    return Sealed(seal, name)


def _same(got, want, tol: float, name: str = "") -> bool:
    if isinstance(want, Sealed):
        return digest(name, got) == want.seal
    pw = plain(want)
    if _objects_in(pw):  # the course's own objects in the expected value: compared by their type's __eq__
        return _raw_same(got, want, tol)
    return same_plain(plain(got), pw, tol)


def equal(got, want, *, tol: float = 1e-6) -> bool:
    """Whether a reader's value equals the course's as ``check`` judges it (plain values, never the reader's
    ``__eq__``): for the station helpers that compare what a reader's function returns (``fn(n) == want``
    would let an always-equal object through)."""
    return _same(got, want, tol)


def check(name: str, got, want, *, tol: float = 1e-6, hint: str = "") -> bool | None:
    """Print whether the reader's answer is right; None (and a nudge) while it is still ``None``."""
    if got is None:
        _say(name, "not answered", got, want, tol, f"{name}: not answered yet — replace None with your answer and run the cell again.")
        return None
    if _same(got, want, tol, name):
        _say(name, "right", got, want, tol, f"{name}: ✅ right.")
        return True
    _say(name, "not quite", got, want, tol, f"{name}: ❌ not quite ({_shown(got)})." + (f" Hint: {hint}" if hint else ""))
    return False


def _shown(got) -> str:
    try:
        return repr(got)[:200]
    except Exception as exc:  # an answer's __repr__ may raise
        return f"<repr raised {type(exc).__name__}>"


def _fits(p):
    return p if len(json.dumps(p)) <= PLAIN_LIMIT else {"object": "too large", "repr": ""}


def _say(name: str, result: str, got, want, tol: float, line: str) -> None:
    """Show the check's line; in a kernel as a display output carrying the record in its metadata."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(line)
        return
    record = {"name": name, "result": result, "answer": None if got is None else _shown(got),
              "got": _fits(plain(got)), "want": None if isinstance(want, Sealed) else _fits(plain(want)),
              "sealed": isinstance(want, Sealed), "tol": tol}
    display({"text/plain": line}, raw=True, metadata={RECORD_KEY: record})


def solution(name: str, got, want, *, tol: float = 1e-6) -> None:
    """Check a solution cell: it must be right, so a wrong solution fails the notebook run."""
    if check(name, got, want, tol=tol) is not True:
        raise AssertionError(f"the solution of {name} is wrong: {got!r} != {want!r}")


def run_answer(run, answer):
    """``run(answer)``: what the reader's code does, for ``check`` to judge (ch01).

    None while ``answer`` (or an item of an ``answer`` tuple) is still None; a one-line message naming
    the exception if running it raised, so the check says "not quite" instead of stopping the notebook.
    Warnings raised while it runs (e.g. TorchScript's deprecation notices) are not shown.
    """
    import warnings

    if answer is None or (isinstance(answer, tuple) and any(a is None for a in answer)):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run(answer)
    except Exception as exc:  # the reader's code may fail in any way; the message says how
        first = (str(exc).strip().splitlines() or [""])[0][:100]
        return f"raised {type(exc).__name__}: {first}"
