"""Put a "Last verified" line under the title of every chapter page, read from the chapter's canonical
record (``helpers/canonical/chNN.json``, written by ``python -m helpers publish``), never typed.

It names the run whose outputs the page shows (the same machine, versions, date and commit as the setup
cell's banner and the numbers table), how many of its figures were checked and passed, and links to the
verification page, which lists every environment the chapter was verified in.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

CHAPTER_RE = re.compile(r"(?:^|/)(ch\d\d)_[^/]*$")
CHECKED = ("pass", "fail")


def line_for(record: dict) -> str:
    env = record["env"]
    statuses = [f.get("status") for f in record["figures"].values()]
    checked = sum(s in CHECKED for s in statuses)
    passed = statuses.count("pass")
    gpu = env.get("device_name") or env.get("device")
    return (f"Last verified {record['verified']}: {passed} of {checked} checked figures passed on {gpu} "
            f"(torch {env['torch']}, triton {env.get('triton') or 'none'}, Python {env['python']}), "
            f"course commit {env['git_commit']} — ")


def _insert(app, doctree):
    docname = app.env.docname
    m = CHAPTER_RE.search(docname)
    if not m:
        return
    path = Path(app.srcdir) / "helpers" / "canonical" / f"{m.group(1)}.json"
    if not path.exists():
        return
    app.env.note_dependency(str(path))
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children or not isinstance(section[0], nodes.title):
        return
    para = nodes.paragraph(classes=["last-verified"])
    para += nodes.emphasis(text=line_for(json.loads(path.read_text())))
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/chapters/verification",
                                refexplicit=True, refdoc=docname)
    ref += nodes.inline(text="where else it was verified")
    para += ref
    section.insert(1, para)


def setup(app):
    app.connect("doctree-read", _insert)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
