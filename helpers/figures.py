"""Glue a measured value with its expectation into the notebook, and check it (ch01).

A figure is emitted as a myst-nb glue output (so prose can cite it with ``{glue:text}``) whose
output metadata also carries the value, the unit, the expectation and the device it ran on.
Verification later reads those outputs back from the executed notebook alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

GLUE_PREFIX = "application/papermill.record/"  # myst-nb's prefix for hidden glue outputs
META_KEY = "course_figure"

# ---------------------------------------------------------------- expectations


def exact(value=None, *, by_torch: dict | None = None, by_device: dict | None = None) -> dict:
    """Device-independent value (counts, bytes). Per torch minor version or device class if needed."""
    if by_torch is not None:
        return {"kind": "exact", "by": "torch", "values": dict(by_torch)}
    if by_device is not None:
        return {"kind": "exact", "by": "device", "values": dict(by_device)}
    return {"kind": "exact", "value": value}


def exact_by_python(table: dict) -> dict:
    """Exact value of something CPython's bytecode decides (instruction counts, offsets) (ch03).

    Keys are a Python minor version ("3.12") or a Python/torch pair ("3.12/2.11", either order) when
    what Dynamo writes matters too. Resolved for the running interpreter when the figure is recorded;
    an interpreter the table does not list is reported as "no exact value here", never as a failure.
    """
    import platform

    import torch

    py = ".".join(platform.python_version().split(".")[:2])
    tv = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    for key in (f"{py}/{tv}", f"{tv}/{py}", py):
        if key in table:
            return exact(table[key])
    return {"kind": "exact", "by": "interpreter", "values": {str(k): v for k, v in table.items()}}


def band(**bands) -> dict:
    """Hardware-dependent value: ``band(cpu=(lo, hi), sm90=(lo, hi), cuda=(lo, hi))``, inclusive."""
    for cls, (lo, hi) in bands.items():
        if not lo <= hi:
            raise ValueError(f"band for {cls}: low {lo} is above high {hi}")
    return {"kind": "band", "bands": {k: [float(lo), float(hi)] for k, (lo, hi) in bands.items()}}


def record() -> dict:
    """Absolute times and other values only recorded (their ratios carry the checks)."""
    return {"kind": "record"}


EXPECTATION_KINDS = ("exact", "band", "record")


def check(value, expect: dict, classes: list[str], torch_minor: str) -> tuple[str, str]:
    """Return (status, rule) for ``value``: status is pass / fail / record / unbanded."""
    kind = expect.get("kind") if isinstance(expect, dict) else None
    if kind == "record":
        return "record", "record only"
    if kind == "exact":
        if "value" in expect:
            want = expect["value"]
        elif expect.get("by") == "interpreter":
            return "unbanded", "no exact value for this Python/torch"
        else:
            key = torch_minor if expect.get("by") == "torch" else next(
                (c for c in classes if c in expect.get("values", {})), None)
            if key not in expect.get("values", {}):
                return "unbanded", f"no exact value for {key or classes[0]}"
            want = expect["values"][key]
        ok = _equal(value, want)
        return ("pass" if ok else "fail"), f"== {want!r}"
    if kind == "band":
        bands = expect.get("bands", {})
        cls = next((c for c in classes if c in bands), None)
        if cls is None:
            return "unbanded", f"no band for {classes[0]}"
        lo, hi = bands[cls]
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


# ---------------------------------------------------------------- recording


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
    status: str = field(init=False)
    rule: str = field(init=False)

    def __post_init__(self):
        self.status, self.rule = check(self.value, self.expect, self.classes, self.torch_minor)

    def as_meta(self) -> dict:
        return {"name": self.name, "value": self.value, "unit": self.unit, "expect": self.expect,
                "classes": self.classes, "torch_minor": self.torch_minor,
                "device_class": self.device_class, "status": self.status, "note": self.note}


RECORDED: dict[str, Figure] = {}


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
        from IPython.display import display
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is not None:
        display(data, raw=True, metadata=metadata)


def figure(name: str, value, unit: str = "", *, expect: dict, note: str = "", quiet: bool = False):
    """Record ``value`` as figure ``name``: glue it for the prose and check its expectation now.

    Prints one line (value, unit, rule, status) unless ``quiet``. Returns None, so a figure call
    at the end of a cell adds no stray output.
    """
    from . import session

    if expect is None or expect.get("kind") not in EXPECTATION_KINDS:
        raise ValueError(f"figure {name!r} needs expect=exact(...), band(...) or record()")
    env = session.current_env()
    value = _plain(value)
    fig = Figure(name, value, unit, expect, env.classes, env.torch_minor, env.device_class, note)
    RECORDED[name] = fig
    meta = {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}, META_KEY: fig.as_meta()}
    _display({GLUE_PREFIX + "text/plain": repr(value)}, meta)
    if not quiet:
        mark = {"pass": "ok", "fail": "FAILED", "record": "recorded", "unbanded": "no band for this device"}
        print(f"{name} = {format_value(value, unit)}  [{fig.rule}: {mark[fig.status]}]")
    return None


def format_value(value, unit: str = "") -> str:
    if isinstance(value, float):
        text = f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    else:
        text = str(value)
    if not unit:
        return text
    return f"{text}{unit}" if unit in ("×", "%") else f"{text} {unit}"
