"""The series' reference values, the canonical run's values, and the side-by-side table (ch01)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .figures import GLUE_PREFIX, META_KEY, RECORDED, REPLAYED, _display, _plain, check_mark, format_value, with_unit
from .state import STATE, current_env
from .text import show_markdown

CANONICAL_DIR = Path(__file__).resolve().parent.parent / "canonical"


REFERENCES: dict[str, dict] = {}


@dataclass(frozen=True)
class SeriesMachine:
    """A machine the original series printed its figures on (its syllabus sheet names it) (ch01)."""

    key: str
    name: str     # as a table cell says it
    kind: str     # "cuda" or "cpu": what a comparison with the book's run must match
    torch: str
    where: str    # how the series ran there


# Every series value names one of these where it is declared (``reference(..., on=KEY)``). Days 1-15, 21, 23
# and 25 ran on the L40S (on Modal); days 16-20, 24 and 26-29 on the author's laptop CPU under macOS
# (clang, 8 OpenMP threads); day 22's sheet names that laptop's chip, an Apple M1 Max (arm64).
SERIES_MACHINES: dict[str, SeriesMachine] = {m.key: m for m in (
    SeriesMachine("l40s", "NVIDIA L40S", "cuda", "2.8.0+cu128", "a cloud GPU (Modal), Python 3.12"),
    SeriesMachine("laptop", "macOS laptop CPU", "cpu", "2.8.0", "the author's laptop: macOS, clang, 8 OpenMP threads"),
    SeriesMachine("m1", "Apple M1 Max CPU", "cpu", "2.8.0", "the author's laptop: arm64, macOS, clang, 8 threads"),
    # quoted, not measured: no machine, so any run may stand beside them
    SeriesMachine("post", "the series' text", "", "2.8.0", "a figure a post states without a run"),
    SeriesMachine("pytorch", "PyTorch's announcement", "", "", "the PyTorch 2.0 announcement"),
    SeriesMachine("datasheet", "vendor datasheet", "", "", "a GPU vendor's published specification"),
)}


def series_machine(key: str | None) -> SeriesMachine | None:
    """The machine a series value was printed on, or None for a value declared before machines were recorded."""
    if key is None:
        return None
    if key not in SERIES_MACHINES:
        raise ValueError(f"unknown series machine {key!r}: one of {', '.join(SERIES_MACHINES)}")
    return SERIES_MACHINES[key]


def reference(name: str, value, unit: str = "", *, source: str, on: str) -> None:
    """Glue a figure the original series reported (quoted data: shown, never checked).

    ``on`` names the machine the series printed it on (a key of ``SERIES_MACHINES``): every table, report
    row and map row shows it, and a comparison with the book's run says whether the machines are alike.
    """
    machine = series_machine(on)
    value = _plain(value)
    meta = {"name": name, "value": value, "unit": unit, "origin": "reference", "source": source,
            "machine": machine.key}
    REFERENCES[name] = meta
    _display({GLUE_PREFIX + "text/plain": repr(value)},
             {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}, META_KEY: meta})


def canonical(chapter: str) -> dict | None:
    """The published canonical record of a chapter (written by ``python -m helpers publish``)."""
    path = CANONICAL_DIR / f"{chapter}.json"
    return json.loads(path.read_text()) if path.exists() else None


def replay(name: str, chapter: str | None = None):
    """Glue the canonical GPU value of ``name`` where this machine cannot measure it (GPU-only cell).

    Asked again for a name this kernel already replayed, it returns the value without gluing it a second
    time (a glue key set twice is a problem of the run: ``pipeline.verify``)."""
    if name in REPLAYED and chapter is None:
        return REPLAYED[name]
    chapter = chapter or STATE["chapter"]
    record = canonical(chapter) or {"figures": {}}
    fig = record["figures"].get(name)
    if fig is None:
        print(f"{name}: needs a CUDA GPU, and no canonical run of {chapter} has been published yet.")
        return None
    env = record.get("env", {})
    meta = {"name": name, "value": fig["value"], "unit": fig.get("unit", ""), "origin": "canonical",
            "source": f"canonical run on {env.get('device_name')} ({record.get('verified')})"}
    _display({GLUE_PREFIX + "text/plain": repr(fig["value"])},
             {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}, META_KEY: meta})
    print(f"{name} = {format_value(fig['value'], fig.get('unit', ''))}  [needs a GPU: value from the {meta['source']}]")
    REPLAYED[name] = fig["value"]
    return fig["value"]


TABLE_META_KEY = "course_table"


def table(rows: list[tuple], chapter: str | None = None):
    """Show the chapter's numbers: the series' value, this book's run, your run, and the check.

    ``rows`` are ``(label, reference_name_or_None, figure_name, fmt)`` tuples, or, for a series value this
    book cannot re-measure, ``(label, reference_name, None, fmt, why)``: the book's cell says why (a file
    the run does not write, a measurement only the series' laptop made). The book's values come
    from the published record of this chapter (``helpers/canonical``); ``publish`` re-renders the
    table of the notebooks it publishes so that the page shows only its own run.
    """
    chapter = chapter or STATE["chapter"]
    spec = [list(r) for r in rows]
    record = canonical(chapter) or {"figures": {}, "env": {}}
    env = current_env().as_dict()
    mine = {name: {"value": f.value, "unit": f.unit, "status": f.status, "rule": f.rule, "note": f.note, "on": f.on}
            for name, f in RECORDED.items()}
    text = render_table(spec, REFERENCES, record["figures"], record.get("env") or None, mine, env)
    show_markdown(text, metadata={TABLE_META_KEY: {"rows": spec, "chapter": chapter}})


def run_label(env: dict | None) -> str:
    """A one-line name of a run: device, versions, date and commit."""
    if not env:
        return "no published run"
    dev = env.get("device_name") if env.get("device") == "cuda" else f"CPU ({env.get('device_name')})"
    tri = f", triton {env['triton']}" if env.get("triton") else ""
    drv = f", driver {env['driver']}" if env.get("driver") else ""
    return (f"{dev}{drv}, torch {env.get('torch')}{tri}, Python {env.get('python')}, "
            f"{env.get('date')}, course commit {env.get('git_commit')}")


def short_device(env: dict | None) -> str:
    if not env:
        return "?"
    return env.get("device_name", "?") if env.get("device") == "cuda" else "CPU"


def render_table(spec: list, series: dict, book: dict, book_env: dict | None, mine: dict | None = None,
                 mine_env: dict | None = None) -> str:
    """The numbers table as Markdown (a pure function: ``table`` and ``publish`` both call it).

    ``series``: reference name → glued reference (with the ``machine`` it was printed on); ``book`` and
    ``mine``: figure name → value, unit, status, rule. Without ``mine`` the table is the book's page:
    series, book, check. The series' column names its machine; a time or ratio the series measured on
    another kind of machine than the book's run (a laptop CPU beside a GPU) is marked as not comparable.
    """
    reader = mine is not None
    used = [series.get(row[1]) for row in spec if row[1] and series.get(row[1])]
    machines = {s.get("machine") for s in used}
    one = series_machine(next(iter(machines))) if len(machines) == 1 and None not in machines else None
    head = ["Figure", series_header(machines), f"This book ({short_device(book_env)})"]
    if reader:
        head += [f"Your run ({short_device(mine_env)})"]
    head += ["Check" + (" (your run)" if reader else "")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    unlike: set[str] = set()
    for label, ref, name, fmt, *why in spec:
        s = series.get(ref) if ref else None
        b = book.get(name) if name else None
        cell = "—"
        if s:
            cell = _fmt(s["value"], fmt, s.get("unit", ""))
            machine = series_machine(s.get("machine"))
            if machine and one is None:
                cell += f" ({machine.name})"
            if machine and b and not comparable(machine, b, book_env):
                cell += " †"
                unlike.add(machine.name)
        not_measured = f"not re-measured: {why[0]}" if why and not name else "—"
        cells = [label, cell, _fmt(b["value"], fmt, b.get("unit", "")) if b else not_measured]
        judged = ((mine or {}).get(name) if name else None) if reader else b
        if reader:
            cells.append(_fmt(judged["value"], fmt, judged.get("unit", "")) if judged else
                         "not measured here" if name else "—")
        cells.append(_short_check(judged) if judged and judged.get("status") else "—")
        lines.append("| " + " | ".join(markdown_cell(c) for c in cells) + " |")
    if unlike:
        lines += ["", f"† Not a like-for-like pair: the machine decides this value (a time, a speed, what the "
                      f"processor offers), and the series measured it on {' and '.join(sorted(unlike))}, this book "
                      "on another machine. Read each against its own machine; what torch alone decides (a count, "
                      "a name) compares across machines."]
    lines += ["", f"**This book:** {run_label(book_env)}" + ("." if reader else
              " — the run every output on this page comes from.")]
    if reader:
        lines += ["", f"**Your run:** {run_label(mine_env)}."]
    return "\n".join(lines)


def series_cell(s: dict, fmt: str, fig: dict | None, env: dict | None) -> str:
    """A series value for a report row: the value, its machine, and † where it is no like-for-like pair
    with ``fig`` of the run ``env`` (``comparable``)."""
    text = _fmt(s["value"], fmt, s.get("unit", ""))
    machine = series_machine(s.get("machine"))
    if machine is None:
        return text
    mark = " †" if fig and not comparable(machine, fig, env) else ""
    return f"{text} ({machine.name}){mark}"


def series_header(machines: set) -> str:
    """The series column's header: its one machine, or "torch 2.8" with the machine in each cell."""
    if len(machines) == 1 and None not in machines:
        m = series_machine(next(iter(machines)))
        return f"Series ({m.name}" + (f", torch {m.torch[:3]})" if m.torch else ")")
    return "Series"


def machine_dependent(fig: dict) -> bool:
    """Whether the machine decides the figure: a time, a speed, what the processor offers (a record or a band),
    or an exact value that differs by device (``exact(by_device=...)``). An exact value torch alone decides
    (a count, a name, bytes by a model) is the same on every machine."""
    expect = fig.get("expect")
    if isinstance(expect, dict):
        return expect.get("kind") != "exact" or bool(expect.get("by_device"))
    if "machine_dependent" in fig:   # a canonical record (``helpers run``'s record_of)
        return bool(fig["machine_dependent"])
    return not str(fig.get("rule", "")).startswith("==")


def comparable(machine: SeriesMachine, fig: dict, env: dict | None) -> bool:
    """Whether the series' value and the run's figure make a like-for-like pair (ch01).

    A figure torch alone decides compares across machines. One the machine decides pairs only a GPU with a
    GPU (the L40S with the H200: the chapters measure where those two differ); a CPU's never pairs with
    another machine's, since the book never ran on the series' laptop. The figure's own ``on`` (a CPU
    measurement inside a GPU run) wins over the run's device.
    """
    if not machine.kind or not machine_dependent(fig):
        return True
    kind = fig.get("on") or (env or {}).get("device")
    return kind == machine.kind == "cuda"


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def markdown_cell(text: str) -> str:
    """A table cell's text with ``|`` escaped, and ``<``/``>`` outside code spans written as entities, so
    that ``make_pointwise.<locals>.inner`` is not read as an HTML tag and dropped."""
    text = str(text).replace("|", "\\|").replace("\n", " ")
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(text[pos:m.start()].replace("<", "&lt;").replace(">", "&gt;"))
        out.append(m.group(0))
        pos = m.end()
    out.append(text[pos:].replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(out)


def _short_check(fig: dict) -> str:
    """The check for a table cell: a long exact value is not repeated (it stands in the value columns)."""
    rule = fig.get("rule", "")
    if fig["status"] == "pass" and rule.startswith("== ") and len(rule) > 24:
        rule = "exact"
    return check_mark(fig["status"], rule)


def _fmt(value, fmt: str, unit: str) -> str:
    if value is None:   # a step a moved private API left unmeasured (private_step): no value to show
        return "not measured"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and fmt:
        text = format(value, fmt)
    elif isinstance(value, float):
        text = f"{value:.4g}"
    else:
        text = str(value)
    return with_unit(text, value, unit)
