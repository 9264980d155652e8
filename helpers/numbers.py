"""The series' reference values, the canonical run's values, and the side-by-side table (ch01)."""
from __future__ import annotations

import json
from pathlib import Path

from .figures import GLUE_PREFIX, META_KEY, RECORDED, _display, _plain, format_value

CANONICAL_DIR = Path(__file__).resolve().parent / "canonical"
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
    from .session import _STATE

    chapter = chapter or _STATE["chapter"]
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
    return fig["value"]


def table(rows: list[tuple], chapter: str | None = None):
    """Show the chapter's numbers: series value, canonical run, your run, check status.

    ``rows`` are ``(label, reference_name_or_None, figure_name, fmt)`` tuples.
    """
    from .session import _STATE, current_env

    chapter = chapter or _STATE["chapter"]
    record = canonical(chapter) or {"figures": {}, "env": {}}
    cenv = record.get("env", {})
    env = current_env()
    canon_head = (f"Canonical ({cenv.get('device_name', '?')}, torch {str(cenv.get('torch', '?')).split('+')[0]})"
                  if record["figures"] else "Canonical (not yet published)")
    where = env.device_name if env.on_gpu else "CPU"
    lines = [f"| Figure | Series (L40S, torch 2.8) | {canon_head} | Your run ({where}) | Check |",
             "|---|---|---|---|---|"]
    marks = {"pass": "✅ pass", "fail": "❌ fail", "record": "recorded", "unbanded": "no band here"}
    for label, ref, name, fmt in rows:
        series = REFERENCES.get(ref) if ref else None
        series_txt = _fmt(series["value"], fmt, series["unit"]) if series else "—"
        c = record["figures"].get(name)
        canon_txt = _fmt(c["value"], fmt, c.get("unit", "")) if c else "—"
        mine = RECORDED.get(name)
        mine_txt = _fmt(mine.value, fmt, mine.unit) if mine else "not measured here"
        status = marks[mine.status] + f" ({mine.rule})" if mine else "—"
        lines.append(f"| {label} | {series_txt} | {canon_txt} | {mine_txt} | {status} |")
    if record["figures"]:
        lines.append("")
        lines.append(f"Canonical run verified {record.get('verified')} on {cenv.get('device_name')}, "
                     f"driver {cenv.get('driver')}, torch {cenv.get('torch')}, triton {cenv.get('triton')}, "
                     f"Python {cenv.get('python')}, commit {cenv.get('git_commit')}.")
    text = "\n".join(lines)
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return None
    except ImportError:
        pass
    print(text)
    return None


def _fmt(value, fmt: str, unit: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and fmt:
        text = format(value, fmt)
    else:
        text = str(value)
    if not unit:
        return text
    return f"{text}{unit}" if unit in ("×", "%") else f"{text} {unit}"
