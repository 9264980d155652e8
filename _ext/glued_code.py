"""Render `code spans` inside glued text as code.

``helpers.words`` glues phrases worded from a run ("does not list `onnxrt`"), and myst-nb pastes a glued
value into the prose as plain text (``{glue:text}`` makes an inline node of class ``pasted-text``), so
its backticks showed literally. This turns each pair of backticks in such a node into a literal node,
after myst-nb has pasted every value (``doctree-resolved``); nothing else of the text changes.
"""
from __future__ import annotations

import re

from docutils import nodes

CODE_SPAN = re.compile(r"`([^`]+)`")


def split_code_spans(text: str) -> list[nodes.Node]:
    """Plain text with `spans` → Text and literal nodes (the text itself when it has none)."""
    parts: list[nodes.Node] = []
    pos = 0
    for m in CODE_SPAN.finditer(text):
        if m.start() > pos:
            parts.append(nodes.Text(text[pos:m.start()]))
        parts.append(nodes.literal(m.group(1), m.group(1)))
        pos = m.end()
    if pos < len(text):
        parts.append(nodes.Text(text[pos:]))
    return parts


def _render(app, doctree, docname):
    for node in list(doctree.findall(nodes.inline)):
        if "pasted-text" not in node.get("classes", []) or len(node.children) != 1:
            continue
        if not isinstance(node[0], nodes.Text) or not CODE_SPAN.search(node.astext()):
            continue
        node[:] = split_code_spans(node.astext())


def setup(app):
    app.connect("doctree-resolved", _render)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
