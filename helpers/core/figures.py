"""Glue a measured value with its expectation into the notebook, and check it (ch01).

A figure is emitted as a myst-nb glue output (so prose can cite it with ``{glue:text}``) whose
output metadata also carries the value, the unit, the expectation and the device it ran on.
Verification later reads those outputs back from the executed notebook alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .env import verified_torch_for
from .private import is_unverified
from .state import current_env

GLUE_PREFIX = "application/papermill.record/"  # myst-nb's prefix for hidden glue outputs


META_KEY = "course_figure"
MOVED_KEY = "moved"  # in a figure's metadata: why a private step did not run on this (unverified) torch


_UNSET = object()


def exact(value=_UNSET, *, by_torch: dict | None = None, by_device: dict | None = None) -> dict:
    """A value torch decides (counts, names, bytes by a model), the same on every machine.

    ``exact(8)`` means 8 on every verified torch version (``env.VERIFIED_TORCH``);
    ``exact(8, by_torch={"2.15": 1})`` overrides the verified versions that differ;
    ``exact(by_torch={...})`` alone lists every version that has a value;
    ``by_device={"cpu": ..., "cuda": ...}`` gives per device class values (the most specific wins).
    On a torch that is not verified a different value is reported as "unverified", never as a failure.
    """
    out: dict = {"kind": "exact"}
    if value is not _UNSET:
        out["value"] = value
    if by_torch is not None:
        out["by_torch"] = {str(k): v for k, v in by_torch.items()}
    if by_device is not None:
        out["by_device"] = dict(by_device)
    if len(out) == 1:
        raise ValueError("exact() needs a value, by_torch= or by_device=")
    return out


def exact_by_python(table: dict) -> dict:
    """Exact value of something CPython's bytecode decides (instruction counts, offsets) (ch03).

    Keys are a Python minor version ("3.12") or a Python/torch pair ("3.12/2.11", either order) when
    what Dynamo writes matters too. Resolved for the running interpreter when the figure is recorded;
    an interpreter the table does not list is reported as "unverified", never as a failure.
    """
    import platform

    import torch

    py = ".".join(platform.python_version().split(".")[:2])
    tv = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    for key in (f"{py}/{tv}", f"{tv}/{py}", py):
        if key in table:
            return exact(table[key])
    return {"kind": "exact", "by_interpreter": {str(k): v for k, v in table.items()},
            "missing": f"Python {py} with torch {tv}"}


def band(**bands) -> dict:
    """Hardware-dependent value: ``band(cpu=(lo, hi), sm90=(lo, hi), cuda=(lo, hi))``, inclusive.

    A ``cpu`` band must hold on any x86-64 or ARM CPU, idle or busy; what depends on the CPU's vector
    library or core count is ``record(within=...)`` instead, and the prose is worded from the run.
    """
    bands = {cls: (float(lo), float(hi)) for cls, (lo, hi) in bands.items()}  # "inf" is float("inf")
    for cls, (lo, hi) in bands.items():
        if not lo <= hi:
            raise ValueError(f"band for {cls}: low {lo} is above high {hi}")
    # an open end is stored as the string "inf": a kernel's JSON messages must not carry float infinity
    end = lambda v: float(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")  # noqa: E731
    return {"kind": "band", "bands": {k: [end(lo), end(hi)] for k, (lo, hi) in bands.items()}}


def record(within: tuple | None = None) -> dict:
    """Recorded, not compared across machines (absolute times; CPU-specific ratios).

    ``within=(lo, hi)`` is a sanity range that any working measurement lands in (a value outside it
    means the measurement broke, not that the machine is different).
    """
    if within is None:
        return {"kind": "record"}
    lo, hi = within
    if not lo <= hi:
        raise ValueError(f"record within: low {lo} is above high {hi}")
    return {"kind": "record", "within": [float(lo), float(hi)]}


EXPECTATION_KINDS = ("exact", "band", "record")


STATUSES = ("pass", "fail", "record", "unverified")


def _normalise(expect: dict) -> dict:
    """Read the expectation format of earlier runs ({"by": "torch", "values": ...})."""
    if expect.get("kind") == "exact" and "by" in expect:
        by, values = expect["by"], expect.get("values", {})
        key = {"torch": "by_torch", "device": "by_device", "interpreter": "by_interpreter"}[by]
        expect = {"kind": "exact", key: values}
        if by == "interpreter":
            expect["missing"] = "this Python/torch"
    return expect


def _minor_tuple(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in v.split(".")[:2])
    except ValueError:
        return (0, 0)


def _exact_want(expect: dict, classes: list[str], torch_minor: str):
    """(found, value, why-not) for this device class and torch minor version."""
    if "by_interpreter" in expect:
        return False, None, f"no value for {expect.get('missing', 'this Python/torch')}"
    by_torch = expect.get("by_torch", {})
    if torch_minor in by_torch:
        return True, by_torch[torch_minor], ""
    by_device = expect.get("by_device", {})
    cls = next((c for c in classes if c in by_device), None)
    if cls is not None:
        return True, by_device[cls], ""
    if "value" in expect:
        return True, expect["value"], ""
    if by_device:
        return False, None, f"no value for device class {classes[0]}"
    return False, None, f"no value for torch {torch_minor}"


def check(value, expect: dict, classes: list[str], torch_minor: str) -> tuple[str, str]:
    """Return (status, rule) for ``value``: status is pass / fail / record / unverified.

    On a verified torch (``env.VERIFIED_TORCH`` on a CPU, ``env.VERIFIED_GPU`` for a GPU class) an exact
    value that differs fails. On any other torch or GPU the value is compared with the nearest older
    verified version's, and a difference is reported as "unverified" (torch or the hardware changed
    something the text describes), never as a failure.
    """
    kind = expect.get("kind") if isinstance(expect, dict) else None
    if kind == "record":
        if "within" not in expect:
            return "record", "record only"
        lo, hi = expect["within"]
        try:
            ok = lo <= float(value) <= hi
        except (TypeError, ValueError):
            ok = False
        return ("record" if ok else "fail"), f"record, sane within {lo:g}..{hi:g}"
    if kind == "exact":
        expect = _normalise(expect)
        known = verified_torch_for(classes)  # a GPU class the book never ran on verifies nothing
        verified = torch_minor in known
        ref, where = torch_minor, f"torch {torch_minor}"
        if not verified:
            pool = known or verified_torch_for(["cpu"])
            older = [v for v in pool if _minor_tuple(v) <= _minor_tuple(torch_minor)]
            ref = older[-1] if older else pool[0]
            where = f"torch {torch_minor}" if "cpu" in classes else f"torch {torch_minor} on {classes[0]}"
        found, want, why = _exact_want(expect, classes, ref)
        if not found:
            return "unverified", why if verified else f"{where} is not verified; {why}"
        if verified:
            return ("pass" if _equal(value, want) else "fail"), f"== {want!r}"
        if _equal(value, want):
            return "pass", f"== {want!r} (as on torch {ref}; {where} is not verified)"
        return "unverified", f"torch {ref} gives {want!r}; {where} is not verified"
    if kind == "band":
        bands = expect.get("bands", {})
        cls = next((c for c in classes if c in bands), None)
        if cls is None:
            return "unverified", f"no band for device class {classes[0]}"
        lo, hi = (float(b) for b in bands[cls])  # an open end is the string "inf" (see band)
        try:
            ok = lo <= float(value) <= hi
        except (TypeError, ValueError):
            ok = False
        return ("pass" if ok else "fail"), f"{cls}: {lo:g}..{hi:g}"
    return "fail", f"malformed expectation {expect!r}"


def _equal(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


@dataclass
class Figure:
    name: str
    value: object
    unit: str
    expect: dict
    classes: list[str]
    torch_minor: str
    device_class: str
    note: str = ""
    on: str | None = None
    moved: str | None = None  # why a private step did not run on this unverified torch (core/private.py)
    status: str = field(init=False)
    rule: str = field(init=False)

    def __post_init__(self):
        if self.moved:  # no value to check: the step that measures it needs internals torch moved
            self.status, self.rule = "unverified", self.moved
        else:
            self.status, self.rule = check(self.value, self.expect, self.classes, self.torch_minor)

    def as_meta(self) -> dict:
        return {"name": self.name, "value": self.value, "unit": self.unit, "expect": self.expect,
                "classes": self.classes, "torch_minor": self.torch_minor,
                "device_class": self.device_class, "status": self.status, "note": self.note}


RECORDED: dict[str, Figure] = {}
REPLAYED: dict[str, object] = {}  # canonical GPU values glued where this machine cannot measure them


def _plain(value):
    """A JSON- and literal_eval-friendly form of the value."""
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        value = value.item()
    if isinstance(value, bool) or isinstance(value, (int, str)) or value is None:
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"figure value {value!r} is not finite")
        return float(f"{value:.6g}")
    raise TypeError(f"a figure must be a number, bool or string, not {type(value).__name__}")


def _display(data: dict, metadata: dict) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is not None:
        display(data, raw=True, metadata=metadata)


def figure(name: str, value, unit: str = "", *, expect: dict, note: str = "", quiet: bool = False,
           retry=None, on: str | None = None):
    """Record ``value`` as figure ``name``: glue it for the prose and check its expectation now.

    ``retry``: a function that measures the value again. A timing that misses its band (or sanity
    range) is measured once more before it counts as a failure, and the figure says so: a busy machine
    can spoil one measurement, but not two in a row by the same margin.
    ``on``: "cpu" for a figure a GPU run measures on its host CPU (chapter 22's C++ kernels), so that the
    numbers table does not set it beside a series value as if it were the GPU's.
    Prints one line (value, unit, check) unless ``quiet``; returns None.
    """
    if expect is None or expect.get("kind") not in EXPECTATION_KINDS:
        raise ValueError(f"figure {name!r} needs expect=exact(...), band(...) or record()")
    env = current_env()
    moved = value.reason if is_unverified(value) else None  # a private step torch moved (core/private.py)
    if moved and value.detail:
        note = (note + "; " if note else "") + value.detail
    value = None if moved else _plain(value)
    fig = Figure(name, value, unit, expect, env.classes, env.torch_minor, env.device_class, note, on=on, moved=moved)
    if fig.status == "fail" and retry is not None and expect["kind"] != "exact":
        first = value
        value = _plain(retry())
        fig = Figure(name, value, unit, expect, env.classes, env.torch_minor, env.device_class,
                     (note + "; " if note else "") + f"re-measured once: the first measurement, "
                     f"{format_value(first, unit)}, missed", on=on)
    RECORDED[name] = fig
    meta = {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX},
            META_KEY: {**fig.as_meta(), **({"on": on} if on else {}), **({MOVED_KEY: moved} if moved else {})}}
    _display({GLUE_PREFIX + "text/plain": repr("unverified" if moved else value)}, meta)
    if not quiet:
        print(f"{name} = {'not measured' if moved else format_value(value, unit)}  [{check_mark(fig.status, fig.rule)}]"
              + (f" ({fig.note})" if fig.note else ""))
    return None


def words(name: str, text: str, *, from_figures: list[str]) -> None:
    """Glue a phrase that is worded from checked figures ("faster", "2 graphs") for the prose (ch02).

    Use it where a sentence's direction or noun depends on the run: the phrase is derived from the
    figures named in ``from_figures``, which must already be recorded (or replayed from the canonical
    run, ``helpers.replay``) in this notebook, so the sentence is as true as they are. Shown in prose with
    ``{glue:text}`name```.
    """
    missing = [f for f in from_figures if f not in RECORDED and f not in REPLAYED]
    if not from_figures or missing:
        raise ValueError(f"words {name!r} must be derived from recorded figures; not recorded: {missing or 'none given'}")
    moved = [RECORDED[f].rule for f in from_figures if f in RECORDED and RECORDED[f].moved]
    if is_unverified(text):  # worded from a private step that torch moved (core/private.py)
        moved, text = moved or [text.reason], str(text)
    if not isinstance(text, str):
        raise TypeError("words() glues text; record numbers with figure()")
    meta = {"name": name, "value": text, "unit": "", "origin": "words", "source": ", ".join(from_figures),
            **({MOVED_KEY: moved[0]} if moved else {})}
    _display({GLUE_PREFIX + "text/plain": text}, {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX},
                                                 META_KEY: meta})


def check_mark(status: str, rule: str) -> str:
    """How a check reads under a cell and in tables: '✓ == 12', '✗ FAILED sm90: 3..4.3', ..."""
    return {"pass": f"✓ {rule}", "fail": f"✗ FAILED {rule}", "record": rule,
            "unverified": f"? unverified: {rule}"}.get(status, f"{status}: {rule}")


COUNT_NOUNS = {"graphs", "breaks", "kernels", "launches", "guards", "compiles", "recompiles", "ops", "nodes",
               "instructions", "frames", "entries", "calls", "inputs", "outputs", "functions", "handlers",
               "times", "bytes", "recompilations", "compilations", "lines", "symbols", "records", "restarts",
               "resumes", "rounds", "slots", "placeholders", "packets", "overloads", "operators", "steps",
               "threads", "cores", "elements", "loads", "stores", "loops", "tensors", "values", "changes",
               "opcodes", "names", "reasons", "edges", "errors", "sites", "exercises", "tries", "attempts", "leaves",
               "skips", "recordings", "replays", "configs", "choices", "files", "buffers", "modules"}


def unit_for(value, unit: str) -> str:
    """'graphs' → 'graph' when the value is one."""
    if unit in COUNT_NOUNS and value == 1 and not isinstance(value, bool):
        if unit == "leaves":
            return "leaf"
        if unit.endswith("ies"):
            return unit[:-3] + "y"
        return unit[:-2] if unit.endswith(("ches", "shes", "xes")) else unit[:-1]
    return unit


def format_value(value, unit: str = "") -> str:
    if isinstance(value, float):
        text = f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    else:
        text = str(value)
    return with_unit(text, value, unit)


def with_unit(text: str, value, unit: str) -> str:
    """``text`` (the formatted ``value``) followed by its unit: "3 graphs", "1 graph", "2.5×"."""
    unit = unit_for(value, unit)
    if not unit:
        return text
    return f"{text}{unit}" if unit in ("×", "%") else f"{text} {unit}"
