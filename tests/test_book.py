"""The book builds with warnings as errors; every built page renders its glue, tables and outputs cleanly."""
import re
import subprocess

import pytest
from conftest import ROOT, chromium

RAW_ROLE = re.compile(r"\{(?:glue|doc|ref|numref|term|eq|index|cite)(?::\w+)?\}")
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|class=\"[^\"]*\b(?:output traceback|output stderr|stderr)\b")


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
    assert len(chapter_pages(built_book["html"])) == len(list((ROOT / "chapters").glob("ch*.ipynb")))


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
def test_glue_is_resolved_in_the_html(built_book):
    html = (built_book["html"] / "chapters" / "ch02_four_stations.html").read_text()
    pasted = re.findall(r'class="pasted-text">([^<]+)<', html)
    assert "768" in pasted and "128" in pasted and len(pasted) > 20


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
