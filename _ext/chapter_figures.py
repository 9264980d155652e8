"""Number figures, tables and code blocks per chapter: the k-th figure of
``chapters/chNN_*.(ipynb|md)`` is "Figure NN.k" (no leading zero).

Sphinx (``numfig = True``) numbers enumerable nodes in
``TocTreeCollector.assign_figure_numbers``, called from the ``env-get-updated``
event (default priority 500) on every build, full or incremental.  It stores the
numbers in ``env.toc_fignumbers[docname][figtype][node_id] = tuple``; both the
HTML caption prefix (``HTML5Translator.add_fignumber`` via
``builder.fignumbers``) and ``{numref}`` (``StandardDomain.get_fignumber``) read
that mapping at write time.  We connect to the same event with a later priority
and replace the numbers of chapter documents with ``(NN, k)``.

Documents that are not chapters (intro, part pages, glossary, ...) get no
numbers: their figures are captioned without "Figure N", and a ``{numref}``
to them fails the -W build ("no number is assigned") instead of printing a
misleading book-global number.
"""
from __future__ import annotations

import re

CHAPTER_RE = re.compile(r"(?:^|/)ch(\d+)_[^/]*$")
_STASH = "_chapter_figures_old"


def chapter_number(docname: str) -> int | None:
    m = CHAPTER_RE.search(docname)
    return int(m.group(1)) if m else None


def _stash_old(app, env):
    # Runs before Sphinx's collector (priority 500) replaces env.toc_fignumbers.
    setattr(env, _STASH, dict(env.toc_fignumbers))
    return []


def _renumber(app, env):
    old = getattr(env, _STASH, {})
    new: dict[str, dict[str, dict[str, tuple[int, ...]]]] = {}
    for docname, by_type in env.toc_fignumbers.items():
        chapter = chapter_number(docname)
        if chapter is None:
            continue
        new[docname] = {}
        for figtype, ids in by_type.items():
            # Sphinx assigned the numbers in document order; keep that order.
            ordered = sorted(ids, key=lambda i: ids[i])
            new[docname][figtype] = {
                fig_id: (chapter, k) for k, fig_id in enumerate(ordered, start=1)
            }
    env.toc_fignumbers = new
    if hasattr(env, _STASH):
        delattr(env, _STASH)
    # A changed number must also reach every page that {numref}s it, which
    # Sphinx does not track: if anything changed, rewrite every page.
    if new != old:
        return sorted(env.found_docs)
    return []


def setup(app):
    app.connect("env-get-updated", _stash_old, priority=100)
    app.connect("env-get-updated", _renumber, priority=900)
    return {
        "version": "0.1",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
        "env_version": 1,
    }
