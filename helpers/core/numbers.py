"""The series' reference values, the canonical run's values, and the side-by-side table (ch01)."""
from __future__ import annotations

import json
from pathlib import Path

from .figures import GLUE_PREFIX, META_KEY, RECORDED, REPLAYED, _display, _plain, check_mark, format_value, with_unit
from .state import STATE, current_env
from .text import show_markdown

CANONICAL_DIR = Path(__file__).resolve().parent.parent / "canonical"


REFERENCES: dict[str, dict] = {}


def reference(name: str, value, unit: str = "", *, source: str) -> None:
    """Glue a figure the original series reported (quoted data: shown, never checked)."""
    value = _plain(value)
    meta = {"name": name, "value": value, "unit": unit, "origin": "reference", "source": source}
    REFERENCES[name] = meta
    _display({GLUE_PREFIX + "text/plain": repr(value)},
             {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}, META_KEY: meta})


def canonical(chapter: str) -> dict | None:
    """The published canonical record of a chapter (written by ``python -m helpers publish``)."""
    path = CANONICAL_DIR / f"{chapter}.json"
    return json.loads(path.read_text()) if path.exists() else None


def replay(name: str, chapter: str | None = None):
    """Glue the canonical GPU value of ``name`` where this machine cannot measure it (GPU-only cell)."""
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

    ``rows`` are ``(label, reference_name_or_None, figure_name, fmt)`` tuples. The book's values come
    from the published record of this chapter (``helpers/canonical``); ``publish`` re-renders the
    table of the notebooks it publishes so that the page shows only its own run.
    """
    chapter = chapter or STATE["chapter"]
    spec = [list(r) for r in rows]
    record = canonical(chapter) or {"figures": {}, "env": {}}
    env = current_env().as_dict()
    mine = {name: {"value": f.value, "unit": f.unit, "status": f.status, "rule": f.rule, "note": f.note}
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

    ``series``: reference name → glued reference; ``book`` and ``mine``: figure name → value, unit,
    status, rule. Without ``mine`` the table is the book's page: series, book, check.
    """
    reader = mine is not None
    head = ["Figure", "Series (L40S, torch 2.8)", f"This book ({short_device(book_env)})"]
    if reader:
        head += [f"Your run ({short_device(mine_env)})"]
    head += ["Check" + (" (your run)" if reader else "")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, ref, name, fmt in spec:
        s = series.get(ref) if ref else None
        b = book.get(name)
        cells = [label, _fmt(s["value"], fmt, s.get("unit", "")) if s else "—",
                 _fmt(b["value"], fmt, b.get("unit", "")) if b else "—"]
        judged = (mine or {}).get(name) if reader else b
        if reader:
            cells.append(_fmt(judged["value"], fmt, judged.get("unit", "")) if judged else "not measured here")
        cells.append(_short_check(judged) if judged and judged.get("status") else "—")
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", f"**This book:** {run_label(book_env)}" + ("." if reader else
              " — the run every output on this page comes from.")]
    if reader:
        lines += ["", f"**Your run:** {run_label(mine_env)}."]
    return "\n".join(lines)


def _short_check(fig: dict) -> str:
    """The check for a table cell: a long exact value is not repeated (it stands in the value columns)."""
    rule = fig.get("rule", "")
    if fig["status"] == "pass" and rule.startswith("== ") and len(rule) > 24:
        rule = "exact"
    return check_mark(fig["status"], rule)


def _fmt(value, fmt: str, unit: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and fmt:
        text = format(value, fmt)
    elif isinstance(value, float):
        text = f"{value:.4g}"
    else:
        text = str(value)
    return with_unit(text, value, unit)
