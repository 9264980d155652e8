"""The book builds with warnings as errors; every built page renders its glue, tables and outputs cleanly."""
import re
import subprocess

import pytest
import yaml
from conftest import ROOT, chromium

RAW_ROLE = re.compile(r"\{(?:glue|doc|ref|numref|term|eq|index|cite)(?::\w+)?\}")
# a class of its own, not part of another (a cell tagged remove-stderr has the class tag_remove-stderr)
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|class=\"[^\"]*(?<![\w-])(?:output traceback|output stderr|stderr)\b")


def pages(html_dir):
    return [p for p in sorted(html_dir.rglob("*.html"))
            if "_static" not in p.parts and p.name not in ("genindex.html", "search.html")]


def chapter_pages(html_dir):
    return [p for p in pages(html_dir) if re.match(r"ch\d\d_", p.name)]


def text_of(raw: str) -> str:
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    return re.sub(r"<[^>]+>", " ", raw)


@pytest.mark.book
def test_book_builds_without_warnings(built_book):
    assert built_book["rc"] == 0, built_book["log"][-4000:]
    assert built_book["seconds"] < 120, f"book build took {built_book['seconds']:.0f} s"
    from helpers.pipeline.student import book_chapters

    assert len(chapter_pages(built_book["html"])) == len(book_chapters())


def test_the_stderr_check_sees_an_output_not_a_tag():
    assert TRACEBACK.search('<div class="output stderr highlight">') and TRACEBACK.search('<div class="stderr">')
    assert not TRACEBACK.search('<div class="cell tag_remove-stderr docutils container">')


@pytest.mark.book
def test_no_page_shows_raw_roles_tracebacks_or_stderr(built_book):
    problems = []
    for page in pages(built_book["html"]):
        raw = page.read_text(encoding="utf-8")
        for hit in sorted(set(RAW_ROLE.findall(text_of(raw)))):
            problems.append(f"{page.name}: raw role text {hit}")
        if TRACEBACK.search(raw):
            problems.append(f"{page.name}: a traceback or stderr block")
    assert not problems, "\n".join(problems)


@pytest.mark.book
def test_every_chapter_ends_with_a_real_numbers_table_naming_one_run(built_book):
    problems = []
    for page in chapter_pages(built_book["html"]):
        raw = page.read_text(encoding="utf-8")
        start = raw.find('id="numbers-in-this-chapter"')
        if start < 0:
            problems.append(f"{page.name}: no 'Numbers in this chapter' section")
            continue
        end = raw.find("<section", start + 10)
        section = raw[start:end if end > 0 else len(raw)]
        if "<table" not in section:
            problems.append(f"{page.name}: the numbers section has no HTML table")
        if "Your run" in text_of(section):
            problems.append(f"{page.name}: the published table still has a 'Your run' column")
        commits = set(re.findall(r"course commit ([0-9a-f]{7,40}\S*)", text_of(raw)))
        if len(commits) != 1:
            problems.append(f"{page.name}: names {len(commits)} runs ({sorted(commits)}), not one")
    assert not problems, "\n".join(problems)


@pytest.mark.book
def test_every_chapter_page_opens_with_its_last_verified_line(built_book):
    problems = []
    for page in chapter_pages(built_book["html"]):
        raw = page.read_text(encoding="utf-8")
        m = re.search(r'<p class="last-verified">(.*?)</p>', raw, re.S)
        if not m:
            problems.append(f"{page.name}: no 'Last verified' line")
            continue
        line = text_of(m.group(1))
        if not re.search(r"Last verified \d{4}-\d\d-\d\d: (\d+) of \1 checked figures passed", line):
            problems.append(f"{page.name}: {line.strip()[:120]}")
        if 'verification.html' not in m.group(1) or raw.find("last-verified") > raw.find('id="numbers-in-this-chapter"'):
            problems.append(f"{page.name}: the line must link the verification page and sit at the top")
    assert not problems, "\n".join(problems)


@pytest.mark.book
def test_glue_is_resolved_in_the_html(built_book):
    html = (built_book["html"] / "chapters" / "ch02_four_stations.html").read_text()
    pasted = re.findall(r'class="pasted-text">([^<]+)<', html)
    assert "768" in pasted and "128" in pasted and len(pasted) > 20


@pytest.mark.book
def test_code_spans_in_glued_phrases_render_as_code(built_book):
    """A phrase that helpers.words glued with `backticks` shows code, not backticks (_ext/glued_code.py)."""
    problems = []
    for page in chapter_pages(built_book["html"]):
        for span in re.findall(r'<span class="pasted-text">(.*?)</span>', page.read_text(encoding="utf-8"), re.S):
            if "`" in span:
                problems.append(f"{page.name}: {span[:100]}")
    assert not problems, "\n".join(problems)
    ch28 = (built_book["html"] / "chapters" / "ch28_custom_backend.html").read_text(encoding="utf-8")
    assert re.search(r'class="pasted-text">[^<]*<code[^>]*>(?:<span[^>]*>)?onnxrt', ch28)


def test_split_code_spans():
    import sys

    sys.path.insert(0, str(ROOT / "_ext"))
    from glued_code import split_code_spans

    parts = split_code_spans("does not list `onnxrt`, nor `tvm`.")
    assert [type(p).__name__ for p in parts] == ["Text", "literal", "Text", "literal", "Text"]
    assert "".join(p.astext() for p in parts) == "does not list onnxrt, nor tvm."
    assert [p.astext() for p in split_code_spans("no code here")] == ["no code here"]


@pytest.mark.browser
def test_chapter_page_renders_in_headless_chromium(built_book, tmp_path):
    browser = chromium()
    assert browser, "chromium is not installed: `apt-get install chromium` (make setup does this as root)"
    page = built_book["html"] / "chapters" / "ch02_four_stations.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=3000",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    text = re.sub(r"<[^>]+>", " ", dom)
    assert "{glue" not in text
    assert re.search(r"768\s+MiB", text) and re.search(r"128\s+MiB", text), "glued traffic figures missing"
    assert "NVIDIA H200" in text  # the environment of the book's run is shown
    assert "<table" in dom
    shot = tmp_path / "ch02.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


PLAIN_CHAPTER = re.compile(r"\b[Cc]hapters?\s+\d+")
FIGURE_BLOCK = re.compile(r"<figure\b.*?</figure>", re.S)


def _outside_links_and_code(raw: str) -> str:
    """Page text without links, code, the sidebar/navigation and the hidden solutions' code."""
    body = raw[raw.find('<article'):raw.rfind('</article>')] if "<article" in raw else raw
    for pattern in (r"<a\b.*?</a>", r"<code\b.*?</code>", r"<pre\b.*?</pre>"):
        body = re.sub(pattern, " ", body, flags=re.S)
    return text_of(body)


def plain_chapter_mentions(raw: str) -> list[str]:
    return PLAIN_CHAPTER.findall(_outside_links_and_code(raw))


def uncaptioned_images(raw: str) -> list[str]:
    """Output images (plots, diagrams) that are not inside a numbered, captioned figure."""
    captioned = " ".join(f for f in FIGURE_BLOCK.findall(raw)
                         if "<figcaption" in f and re.search(r'class="caption-number">\s*Figure \d+\.\d+', f))
    images = re.findall(r'<img\b[^>]*src="([^"]*_images/[^"]+)"', raw)
    return [src for src in images if src not in captioned]


def test_the_page_checks_catch_plain_mentions_and_uncaptioned_plots():
    page = ('<article><p>As chapter 8 showed, see <a href="x.html">chapter 6</a> and <code>chapter 3</code>.</p>'
            '<figure><img src="../_images/a.png"><figcaption><span class="caption-number">Figure 2.1 </span>'
            'Caption</figcaption></figure><img src="../_images/b.png"></article>')
    assert plain_chapter_mentions(page) == ["chapter 8"]
    assert uncaptioned_images(page) == ["../_images/b.png"]


@pytest.mark.book
def test_chapters_cite_each_other_by_link_and_every_plot_is_a_numbered_figure(built_book):
    problems = []
    for page in pages(built_book["html"]):
        raw = page.read_text(encoding="utf-8")
        for hit in sorted(set(plain_chapter_mentions(raw))):
            problems.append(f"{page.name}: '{hit}' in plain text (use {{doc}}`chapter N <chNN_name>` or {{ref}})")
        if re.match(r"ch\d\d_", page.name):
            for src in uncaptioned_images(raw):
                problems.append(f"{page.name}: {src} has no numbered caption (mystnb.figure metadata)")
    assert not problems, "\n".join(problems)


@pytest.mark.book
def test_every_chapter_ends_with_its_references_and_the_book_has_an_index(built_book):
    html = built_book["html"]
    for page in chapter_pages(html):
        raw = page.read_text(encoding="utf-8")
        refs = raw.find('<section id="references"')
        assert refs > 0 and "doc-biblioentry" in raw[refs:], f"{page.name}: no References section listing a work"
    index = (html / "genindex.html").read_text(encoding="utf-8")
    for term in ("guard", "graph break", "FX"):
        assert re.search(rf">\s*{re.escape(term)}\s*<", index), f"the index has no entry '{term}'"


def test_scratch_dot_folders_are_not_read_as_book_sources():
    """A snapshot such as .snap/ (a copy of the tree) would otherwise bring tests' planted notebooks into the build."""
    from sphinx.util.matching import Matcher

    patterns = yaml.safe_load((ROOT / "_config.yml").read_text())["exclude_patterns"]
    excluded = Matcher(patterns)
    assert excluded(".snap/tests/pipeline/submissions/eve.ipynb") and excluded(".probe/x.ipynb")
    assert not excluded("chapters/ch01_origins.ipynb")
