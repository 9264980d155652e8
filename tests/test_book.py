"""The book builds with warnings as errors, shows glued values, and renders in a real browser."""
import re
import subprocess

import pytest

from conftest import chromium


@pytest.mark.book
def test_book_builds_without_warnings(built_book):
    assert built_book["rc"] == 0, built_book["log"][-4000:]
    assert built_book["seconds"] < 60, f"book build took {built_book['seconds']:.0f} s"
    assert (built_book["html"] / "chapters" / "ch02_four_stations.html").exists()


@pytest.mark.book
def test_glue_is_resolved_in_the_html(built_book):
    html = (built_book["html"] / "chapters" / "ch02_four_stations.html").read_text()
    assert "{glue" not in html
    pasted = re.findall(r'class="pasted-text">([^<]+)<', html)
    assert "768" in pasted and "128" in pasted and len(pasted) > 20


@pytest.mark.browser
def test_chapter_page_renders_in_headless_chromium(built_book, tmp_path):
    browser = chromium()
    assert browser, "chromium is not installed: `apt-get install chromium` (make setup does this as root)"
    page = built_book["html"] / "chapters" / "ch02_four_stations.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=3000"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    text = re.sub(r"<[^>]+>", " ", dom)
    assert "{glue" not in text
    assert re.search(r"Eager moves\s+768\s+MiB, fused\s+128\s+MiB", text), "glued traffic figures missing"
    assert "NVIDIA H200" in text  # the environment of the canonical run is shown
    shot = tmp_path / "ch02.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
