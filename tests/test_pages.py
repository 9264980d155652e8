"""Every built page as a reader sees it: no markup shown as text, no machine paths or NaN in outputs, tables
that fit the text column at 1280 px and at 390 px, no console errors, and — with the network off — every
page reads fully (no request leaves file://, math typeset from the book's own MathJax).

The static checks read the HTML; the layout checks drive the system Chromium (.ci/install-chromium) with
the playwright package (pyproject's test extra), which is given that browser: no browser is downloaded.
"""
from __future__ import annotations

import html as htmllib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT, chromium

WIDTHS = (1280, 390)

# ---------------------------------------------------------------------------------------------------------
# Static checks on the HTML text


def book_pages(html_dir: Path) -> list[Path]:
    """Every page a reader can open (chapters, intro, glossary, verification, references, ...)."""
    return [p for p in sorted(html_dir.rglob("*.html"))
            if "_static" not in p.parts and "_sources" not in p.parts
            and p.name not in ("genindex.html", "search.html")
            and 'http-equiv="refresh"' not in p.read_text(encoding="utf-8")[:2000].lower()]  # index.html: a redirect


def _article(raw: str) -> str:
    start, end = raw.find("<article"), raw.rfind("</article>")
    return raw[start:end] if start >= 0 and end > start else raw


def _strip(raw: str, *tags: str) -> str:
    raw = re.sub(r"<!--.*?-->", " ", raw, flags=re.S)  # a comment the browser hides
    for tag in ("script", "style", *tags):
        raw = re.sub(rf"<{tag}\b.*?</{tag}>", " ", raw, flags=re.S)
    return raw


def visible_text(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment))


def prose_text(raw: str) -> str:
    """The article's text outside code, outputs and math: what a reader reads as sentences."""
    body = _strip(_article(raw), "pre", "code")
    body = re.sub(r'<(span|div) class="math[^"]*"[^>]*>.*?</\1>', " ", body, flags=re.S)
    return visible_text(body)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _OutputText(HTMLParser):
    """Collects the text inside elements of the given classes (and everything nested in them)."""

    def __init__(self, classes: tuple[str, ...]):
        super().__init__(convert_charrefs=True)
        self.classes, self.depth, self.inside, self.parts = classes, 0, [], []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        self.depth += 1
        cls = (dict(attrs).get("class") or "").split()
        if any(c in cls for c in self.classes) and not any(d is not None for d in self.inside):
            self.inside.append(self.depth)
            self.parts.append("\n")
        else:
            self.inside.append(None)

    def handle_endtag(self, tag):
        if tag in VOID or not self.inside:
            return
        self.inside.pop()
        self.depth -= 1

    def handle_data(self, data):
        if any(d is not None for d in self.inside):
            self.parts.append(data)


def output_text(raw: str) -> str:
    """What the page shows of the notebook's outputs: output blocks and glued values in the prose."""
    parser = _OutputText(("cell_output", "pasted-text"))
    parser.feed(_strip(_article(raw)))
    return "".join(parser.parts)


# markup a reader should never see as text
RAW_MARKUP = re.compile(r"<!--|-->|```|^\s*:::|</?(?:div|span|p|a|img|table|br|details|summary)\b[^<>]{0,80}>"
                        r"|\{(?:code-cell|figure|note|warning|admonition)\}", re.M)
# a name whose <...> part was swallowed as an HTML tag: fn.<locals>.inner shown as fn..inner
DROPPED_ANGLE = re.compile(r"[A-Za-z_)\]]\.\.[A-Za-z_]")
# an absolute path of the machine that ran the notebook
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:home|root|usr|opt|work|mnt|srv|tmp|var/lib|var/tmp|Users)/[^\s'\"<>]*"
                          r"|site-packages|dist-packages|\.venv/|[A-Z]:\\\\Users")
NAN = re.compile(r"(?<![\w.])(?:nan|NaN|NAN)(?![\w(])(?:\s*(?:ms|s|µs|us|%|×|x|MiB|GiB|KiB|bytes))?")


def markup_shown_as_text(raw: str) -> list[str]:
    text = prose_text(raw)
    hits = [m.group(0) for m in RAW_MARKUP.finditer(text)]
    hits += [f"backtick: …{text[max(0, m.start() - 40):m.start() + 40]}…" for m in re.finditer("`", text)]
    return hits


def dropped_angle_brackets(raw: str) -> list[str]:
    text = visible_text(_strip(_article(raw)))
    return [text[max(0, m.start() - 30):m.end() + 30] for m in DROPPED_ANGLE.finditer(text)]


def machine_paths(raw: str) -> list[str]:
    text = output_text(raw)
    return [text[max(0, m.start() - 30):m.end() + 10] for m in MACHINE_PATH.finditer(text)]


# A NaN a chapter shows on purpose: ch14's softmax without the max subtracted overflows to inf/inf at logits of 1000
NAN_TAUGHT = {"ch14_decomposition": ("sum(exp(x)) at x = [1000, 1000]",)}


def nans(raw: str) -> list[str]:
    text = output_text(raw)
    return [text[max(0, m.start() - 40):m.end() + 10] for m in NAN.finditer(text)]


REF_LINK = re.compile(r'<a class="reference internal" href="[^"]*"><span class="std std-ref">(.*?)</span></a>', re.S)
HEADING = re.compile(r"<h[1-6][^>]*>(.*?)<a class=\"headerlink\"", re.S)


def heading_titles(pages_raw: list[str]) -> set[str]:
    return {visible_text(h).strip() for raw in pages_raw for h in HEADING.findall(raw)}


def titles_dropped_mid_sentence(raw: str, titles: set[str]) -> list[str]:
    """Links whose text is a whole section title, dropped into a sentence after a lowercase word ("and On
    the GPU: a package of GPU binaries reports ..."): a bare {ref} to a section; give the link its text."""
    hits = []
    body = _article(raw)
    for m in REF_LINK.finditer(body):
        text = visible_text(m.group(1)).strip()
        if text not in titles or not text[:1].isupper():
            continue
        before = visible_text(re.sub(r"<!--.*?-->", "", body[max(0, m.start() - 400):m.start()]))
        if re.search(r"\b[a-z]+\s+$", before):
            hits.append(f"…{before[-30:].strip()} {text}")
    return hits


def test_the_static_checks_catch_each_class_of_problem():
    titles = heading_titles(['<h2>On the GPU: a package of GPU binaries<a class="headerlink" href="#x">#</a></h2>'])
    dropped = ('<article><p>a background process, and <a class="reference internal" href="#ch29-gpu"><span '
               'class="std std-ref">On the GPU: a package of GPU binaries</span></a> reports it</p></article>')
    given = dropped.replace("On the GPU: a package of GPU binaries", "the section on the GPU package")
    assert titles_dropped_mid_sentence(dropped, titles) and not titles_dropped_mid_sentence(given, titles)
    split = ('<article><p>applies heuristics: a fused node may hold at most</p>\n'
             '<!-- not-measured: why --> `config.max_fusion_size` nodes</article>')
    assert any("backtick" in h for h in markup_shown_as_text(split))
    assert markup_shown_as_text("<article><p>a &lt;!-- note --&gt; shown</p></article>")
    assert not markup_shown_as_text('<article><p>fine <code>`x`</code> <!-- hidden --></p>'
                                    '<div class="highlight"><pre>```</pre></div></article>')
    assert dropped_angle_brackets("<article><p>f..inner is the name</p></article>")
    assert not dropped_angle_brackets("<article><p>f.&lt;locals&gt;.inner; within 0.1..60</p></article>")
    out = ('<article><div class="cell_output docutils container"><pre># gelu in '
           'torch/.venv/lib/python3.12/site-packages/torch/_refs/x.py\n/usr/lib/python3.12/runpy.py\n'
           'File "/tmp/runC/compile-cache/tmp/ipykernel_17763/3896126592.py", line 3\n'
           'second      nan ms</pre></div></article>')
    assert len(machine_paths(out)) >= 3 and nans(out)
    clean = ('<article><div class="cell_output docutils container"><pre># gelu in torch/_refs/x.py\n'
             'second not measured; torch.nanmean; finite</pre></div>'
             '<p>see <code>/usr/bin/g++</code> nan</p></article>')
    assert not machine_paths(clean) and not nans(clean)
    assert nans('<article><p>took <span class="pasted-text">nan</span> ms</p></article>')


# Chapters whose committed outputs come from a GPU run older than the fix of what a page check finds: the
# fixed code is tested on CPU (test_the_helpers_print_no_machine_path_and_no_nan), and the chapter's next GPU
# run clears its page. Each names the run it excuses; once the chapter is republished the allowance is stale
# and test_stale_output_allowances_name_the_published_run fails until it is removed.
STALE_OUTPUTS: dict[str, str] = {}   # chapter stem → commit of a published run allowed to show stale outputs


def published_commit(stem: str) -> str:
    import json

    record = json.loads((ROOT / "helpers" / "canonical" / f"{stem[:4]}.json").read_text())
    return str((record.get("env") or {}).get("git_commit", ""))


def test_stale_output_allowances_name_the_published_run():
    for stem, commit in STALE_OUTPUTS.items():
        assert published_commit(stem).startswith(commit), (
            f"{stem} was republished ({published_commit(stem)}): remove its entry from STALE_OUTPUTS")


@pytest.mark.book
def test_no_page_shows_markup_dropped_names_titles_machine_paths_or_nan(built_book):
    problems = []
    titles = heading_titles([p.read_text(encoding="utf-8") for p in book_pages(built_book["html"])])
    for page in book_pages(built_book["html"]):
        raw = page.read_text(encoding="utf-8")
        name = page.relative_to(built_book["html"])
        stale = page.stem in STALE_OUTPUTS and published_commit(page.stem).startswith(STALE_OUTPUTS[page.stem])
        problems += [f"{name}: a section title dropped into a sentence: {h!r}" for h in titles_dropped_mid_sentence(raw, titles)]
        problems += [f"{name}: markup shown as text: {h!r}" for h in sorted(set(markup_shown_as_text(raw)))]
        problems += [f"{name}: a name lost its <...> part: {h!r}" for h in sorted(set(dropped_angle_brackets(raw)))]
        if not stale:
            problems += [f"{name}: an absolute path of the machine in an output: {h!r}" for h in sorted(set(machine_paths(raw)))]
            problems += [f"{name}: NaN in an output: {h!r}" for h in sorted(set(nans(raw)))
                         if not any(phrase in h for phrase in NAN_TAUGHT.get(page.stem, ()))]
    assert not problems, "\n".join(problems)


@pytest.mark.book
def test_the_book_serves_its_own_mathjax(built_book):
    html = built_book["html"]
    assert (html / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    for page in book_pages(html):
        raw = page.read_text(encoding="utf-8")
        external = re.findall(r'<(?:script|link|img|iframe)\b[^>]*(?:src|href)="((?:https?:)?//[^"]+)"', raw)
        external = [u for u in external if not re.match(r'<link\b[^>]*rel="(?:canonical|next|prev)"', u)]
        assert not external, f"{page.name} loads {external}"


# ---------------------------------------------------------------------------------------------------------
# In the browser, offline: console, network, math, layout

MEASURE = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const article = document.querySelector('article.bd-article') || document.body;
  const outer = article.getBoundingClientRect(), pad = getComputedStyle(article);
  const box = {left: outer.left + parseFloat(pad.paddingLeft), right: outer.right - parseFloat(pad.paddingRight)};
  box.width = box.right - box.left;  // the text column: the article's content box
  const problems = [];
  const label = (el) => (el.innerText || '').trim().replace(/\s+/g, ' ').slice(0, 60);
  // tables: wholly inside the text column (a wide code table scrolls in its code box instead)
  for (const t of article.querySelectorAll('table')) {
    if (t.closest('.highlight, pre, mjx-container')) continue;
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;  // hidden (a closed solution)
    // the theme wraps a table in a scroll box: a table wider than that box hides its last columns
    const scroller = t.closest('.pst-scrollable-table-container, .table-wrapper');
    const hidden = scroller ? scroller.scrollWidth - scroller.clientWidth : 0;
    if (r.right > box.right + 1 || r.left < box.left - 1 || hidden > 1) {
      problems.push(`table wider than the text column (${Math.round(r.width)} px in ${Math.round(box.width)} px): ${label(t)}`);
    }
  }
  // the page itself never scrolls sideways
  const over = document.documentElement.scrollWidth - window.innerWidth;
  if (over > 1) problems.push(`the page scrolls sideways by ${over} px`);
  // math: every math span/div typeset by MathJax; no TeX left as text
  const maths = article.querySelectorAll('.math');
  let untypeset = 0;
  for (const m of maths) {
    if (!m.querySelector('mjx-container') && m.getBoundingClientRect().width > 0) untypeset++;
  }
  if (untypeset) problems.push(`${untypeset} of ${maths.length} math elements not typeset (raw TeX)`);
  if (/\\\(|\\\[|\$\$/.test(article.innerText)) problems.push('TeX delimiters shown as text');
  if (maths.length && !document.querySelector('mjx-container')) problems.push('MathJax did not run');
  // display math wider than the column must scroll in its own box, never widen the page
  for (const c of article.querySelectorAll('mjx-container[display="true"]')) {
    const r = c.getBoundingClientRect();
    if (r.right > box.right + 1 && getComputedStyle(c).overflowX === 'visible') {
      problems.push('display math wider than the text column');
    }
  }
  return problems;
}
"""


def browser_problems(html_dir: Path, pages: list[Path], widths=WIDTHS) -> dict[str, list[str]]:
    """Open every page at each width with the network off; the problems found, by page and width."""
    from playwright.sync_api import sync_playwright

    exe = chromium()
    found: dict[str, list[str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                           "--disable-component-update", "--no-first-run"])
        try:
            for width in widths:
                context = browser.new_context(viewport={"width": width, "height": 900}, offline=True,
                                              service_workers="block")
                left: list[str] = []

                def refuse(route):
                    if not route.request.url.startswith(("file://", "data:", "blob:", "about:")):
                        left.append(route.request.url)
                        return route.abort()
                    return route.continue_()

                context.route("**/*", refuse)
                page = context.new_page()
                errors: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
                for path in pages:
                    key = f"{path.relative_to(html_dir)} @ {width} px"
                    errors.clear()
                    left.clear()
                    page.goto(path.as_uri(), wait_until="load")
                    if page.url != path.as_uri():
                        found[key] = [f"the page went on to {page.url}"]
                        continue
                    problems = list(page.evaluate(MEASURE))
                    problems += [f"console error: {e[:160]}" for e in errors]
                    problems += [f"a request left file:// (network off): {u[:120]}" for u in sorted(set(left))]
                    if problems:
                        found[key] = problems
                context.close()
        finally:
            browser.close()
    return found


def _require_browser():
    if chromium() is None:
        pytest.fail("chromium is not installed: `apt-get install chromium` (make setup does this as root)")
    pytest.importorskip("playwright", reason="playwright is in pyproject's test extra: `make setup`")


@pytest.mark.browser
def test_the_browser_checks_catch_wide_tables_untypeset_math_errors_and_requests(tmp_path):
    _require_browser()
    (tmp_path / "bad.html").write_text(
        '<html><body><article class="bd-article" style="width:600px">'
        '<table><tr><td style="white-space:nowrap">triton_poi_fused_add_cos_mul_sin_tanh_0_' + "x" * 120 +
        '</td></tr></table><span class="math">\\(x^2\\)</span>'
        '<img src="https://cdn.example.invalid/a.png"><script>const A = 1;</script><script>const A = 2;</script>'
        '</article></body></html>')
    found = " ".join(browser_problems(tmp_path, [tmp_path / "bad.html"], widths=(1280,))["bad.html @ 1280 px"])
    for expected in ("table wider than the text column", "not typeset", "TeX delimiters",
                     "already been declared", "left file://"):
        assert expected in found, (expected, found)


@pytest.mark.browser
def test_every_page_reads_offline_with_tables_that_fit_and_no_console_errors(built_book):
    """Every page at 1280 px and 390 px, network off: tables inside the text column (code blocks may scroll
    in their own box), math typeset from the book's MathJax, no console error, no request off file://."""
    _require_browser()
    html = built_book["html"]
    found = browser_problems(html, book_pages(html))
    assert not found, "\n".join(f"{page}: {p}" for page, problems in found.items() for p in problems)


def test_the_helpers_print_no_machine_path_and_no_nan(monkeypatch, tmp_path):
    """The helpers behind ch14, ch24 and ch29's outputs name files relative to their package or variable,
    and say "not measured" where a child made no second call (it printed "second nan ms")."""
    import os

    import torch

    from helpers.aot.decompositions import torch_relative
    from helpers.runtime.cache_layers import FirstCall, env_relative
    from helpers.runtime.export_aoti import Compiler, program_text

    torch_dir = os.path.dirname(torch.__file__)
    assert torch_relative(os.path.join(torch_dir, "_refs", "__init__.py")) == "torch/_refs/__init__.py"
    assert torch_relative("/opt/torch/.venv/lib/python3.12/site-packages/torch/_refs/x.py") == "torch/_refs/x.py"
    counters = {"fx_miss": 1, "fx_hit": 0, "aot_miss": 1, "aot_hit": 0}
    stopped = FirstCall("cpp_wrapper", [2.2], 9.1, 16.5, counters, {}, True, extra={"stopped": True})
    assert stopped.second_s is None and "not measured" in stopped.line() and not nans(f'<span class="pasted-text">{stopped.line()}</span>')
    assert "0.523 ms" in FirstCall("n=768", [2.4, 0.000523], 8.0, 15.0, counters, {}, True).line()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    assert env_relative(str(tmp_path / "cache" / "triton" / "0")) == "$TORCHINDUCTOR_CACHE_DIR/triton/0"
    assert "/" + "usr" not in Compiler("/usr/bin/g++", "shared", ("libstdc++.so.6",)).name
    assert Compiler("/opt/gcc/bin/g++", "static", named_by="CXX").name == "g++ (named by CXX)"

    class Program:  # str(ep) of an ExportedProgram quotes the source files of its nodes
        def __str__(self):
            return (f"# File: {os.path.join(torch_dir, 'nn', 'modules', 'linear.py')}:134 in forward\n"
                    f"# File: {ROOT / 'helpers' / 'runtime' / 'export_aoti.py'}:52 in forward\n")

    text = program_text(Program())
    assert "# File: torch/nn/modules/linear.py:134" in text and "# File: helpers/runtime/export_aoti.py:52" in text
    assert not MACHINE_PATH.search(text)


def test_a_missing_mathjax_stops_the_build(monkeypatch, tmp_path):
    """The book never falls back to a CDN: without the npm copy (make setup) the build stops, saying so."""
    import sys
    from types import SimpleNamespace

    from sphinx.errors import ConfigError

    sys.path.insert(0, str(ROOT / "_ext"))
    import page_assets

    monkeypatch.setattr(page_assets, "MATHJAX_PACKAGE", tmp_path / "nothing")
    with pytest.raises(ConfigError, match="make setup"):
        page_assets._check_mathjax(None, SimpleNamespace(mathjax_path=page_assets.MATHJAX_ENTRY))
    with pytest.raises(ConfigError, match="mathjax_path"):
        page_assets._check_mathjax(None, SimpleNamespace(mathjax_path="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"))
    scripts = ["a.js", None, "", "a.js"]
    assert page_assets.unique_scripts(scripts) == ["a.js", None]
