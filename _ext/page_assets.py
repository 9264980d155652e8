"""Every built page reads fully offline, and loads each of its scripts once.

* MathJax comes from the book's own ``_static/mathjax/`` (``mathjax_path`` in ``_config.yml``), copied at
  the end of the build from the pinned npm package that ``make setup`` installs (``.ci/install-mathjax``
  into ``.ci/.mathjax``). A missing copy stops the build with a message saying how to get it: the book
  never falls back to a CDN.
* Sphinx 7.4 adds an inline script (``app.add_js_file(None, body=...)``) registered after the builder
  started twice to a page: once as filename ``None`` and once, when the builder re-reads its registry, as
  ``''``, which its duplicate check tells apart. sphinx-thebe's ``const THEBE_JS_URL = ...`` then raised
  "Identifier 'THEBE_JS_URL' has already been declared" on every page (and sphinx-togglebutton's selector
  was set twice). Each page keeps the first of scripts that are the same but for that.
* The theme's light/dark mode has a default ("auto", what the theme fell back to anyway): without one,
  the first page a new reader opens logged "Got invalid theme mode: . Resetting to auto." to the console.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
MATHJAX_PACKAGE = ROOT / ".ci" / ".mathjax" / "node_modules" / "mathjax"
MATHJAX_ENTRY = "mathjax/tex-mml-chtml.js"  # relative to the built book's _static/ (mathjax_path)
# what tex-mml-chtml.js loads on demand: input extensions, the CHTML fonts, the menu and accessibility
MATHJAX_PARTS = ("tex-mml-chtml.js", "input", "output", "ui", "a11y", "sre", "adaptors")


def mathjax_source() -> Path:
    return MATHJAX_PACKAGE / "es5"


def _dedupe_scripts_and_set_mode(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if scripts:
        scripts[:] = unique_scripts(list(scripts))
    # pydata-sphinx-theme's layout reads the template variable default_mode (html_context), not an option
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


def _check_mathjax(app, config) -> None:
    if config.mathjax_path != MATHJAX_ENTRY:
        raise ConfigError(f"mathjax_path is {config.mathjax_path!r}: the book serves MathJax itself; set "
                          f"mathjax_path: {MATHJAX_ENTRY} under sphinx.config in _config.yml")
    if not (mathjax_source() / "tex-mml-chtml.js").is_file():
        raise ConfigError(f"MathJax is missing ({mathjax_source() / 'tex-mml-chtml.js'} does not exist): run "
                          "`make setup` (or .ci/install-mathjax, which needs npm); the book does not load "
                          "MathJax from a CDN")


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        src = mathjax_source() / part
        if src.is_dir():
            shutil.copytree(src, target / part, dirs_exist_ok=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / part)


def _script_key(script) -> tuple:
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {})
    return (str(filename), tuple(sorted((k, str(v)) for k, v in attributes.items())))


def unique_scripts(scripts: list) -> list:
    """``scripts`` without the later copies of a script (the same file, or the same inline body)."""
    seen, kept = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    return kept


def setup(app):
    app.connect("config-inited", _check_mathjax)
    app.connect("html-page-context", _dedupe_scripts_and_set_mode, priority=900)  # after every extension added its own
    app.connect("build-finished", _copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
