"""Plain-text layout the chapters share: two listings side by side (ch09, ch13); a Markdown output (every numbers table; the map, ch30); text without the machine's paths."""
from __future__ import annotations

import os
import re
import sys
import sysconfig

_CELL = re.compile(r"(?:/[^\s\"':]+)?/ipykernel_\d+/\d+\.py")   # the file IPython names a notebook cell after


def columns(left: list[str], right: list[str], titles: tuple[str, str], width: int) -> str:
    """``left`` and ``right`` in two columns, row by row; a left line is cut at ``width`` characters."""
    rows = [f"{titles[0]:<{width}}  {titles[1]}", f"{'-' * (width - 2):<{width}}  {'-' * (width - 2)}"]
    for k in range(max(len(left), len(right))):
        a = left[k] if k < len(left) else ""
        b = right[k] if k < len(right) else ""
        rows.append(f"{a[:width]:<{width}}  {b}")
    return "\n".join(rows)


def show_markdown(text: str, metadata: dict | None = None) -> None:
    """Display ``text`` as a Markdown output (rendered as MyST in the book), or print it outside IPython."""
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display({"text/markdown": text, "text/plain": text}, raw=True, metadata=metadata or {})
            return
    except ImportError:
        pass
    print(text)


def machine_free(text: str, *, keep_local: bool = False) -> str:
    """``text`` without the absolute paths of the machine that ran it (ch01): a notebook cell's file becomes
    ``<cell>``; a file of an installed package is named from its package (``torch/_dynamo/eval_frame.py``),
    one of Python's own from the standard library (``runpy.py``); the compile cache and the temporary folder
    become ``$TORCHINDUCTOR_CACHE_DIR`` and ``$TMPDIR``, and the course's files are named from its root.
    ``keep_local``: leave the course's, the temporary folder's and other local files as they are (a log that
    the triage reads for the reader's own file and line)."""
    from .env import REPO_ROOT

    text = _CELL.sub("<cell>", text)
    prefixes = [(p, "") for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}]
    prefixes += [(p, "") for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    prefixes += [(sysconfig.get_paths()["stdlib"], "")]
    if not keep_local:
        for var in ("TORCHINDUCTOR_CACHE_DIR", "TMPDIR"):
            if os.environ.get(var):
                prefixes.append((os.environ[var], f"${var}"))
        prefixes.append((str(REPO_ROOT), ""))
    text = re.sub(r"(?<![\w.$])/[^\s\"':]*/lib/python3\.\d+/(?:(?:site|dist)-packages/)?", "", text)  # another Python's
    for prefix, name in sorted(prefixes, key=lambda p: -len(p[0])):   # the longest (most specific) first
        prefix = prefix.rstrip(os.sep)
        if prefix:
            text = re.sub(re.escape(prefix) + r"(?=/|\b)/?", (name + "/") if name else "", text)
    return text
