"""Sentences that state the state of the book — which chapters are in it, which runs are published, what a
page holds — agree with the book itself (its table of contents, its published records, its own pages)."""
import re

import yaml
from conftest import ROOT

STATE = re.compile(
    r"no passing (?:GPU )?run|(?:when|once|until) (?:its|their|the chapter's) (?:GPU )?runs? (?:is|are) published|"
    r"fills? in when|awaits? (?:its|their)|awaiting (?:its|their)|not (?:yet )?(?:been )?published|"
    r"no (?:GPU )?run yet|CPU-verified but", re.I)
CHAPTER_REF = re.compile(r"\bch(\d\d)_\w+|\b[Cc]hapters? (\d{1,2})\b")
CODE = re.compile(r"```.*?```|:::.*?:::", re.S)


def published(number: int) -> bool:
    return (ROOT / "helpers" / "canonical" / f"ch{number:02d}.json").exists()


def prose_pages():
    """README, the book's Markdown pages and the chapters' text sources, without their code."""
    for path in [ROOT / "README.md", *sorted((ROOT / "chapters").glob("*.md")), *sorted((ROOT / "sources").glob("ch*.md"))]:
        yield path, CODE.sub(" ", path.read_text(encoding="utf-8"))


def sentences(text: str):
    return re.split(r"(?<=[.!?])\s+(?=[A-Z{(*])", re.sub(r"\s+", " ", text))


def stale_state_sentences(text: str, is_published=published) -> list[str]:
    """Sentences that call a chapter unpublished or awaiting its run while its record is published."""
    out = []
    for sentence in sentences(text):
        if not STATE.search(sentence):
            continue
        named = {int(a or b) for a, b in CHAPTER_REF.findall(sentence)}
        if any(is_published(n) for n in named):
            out.append(sentence.strip()[:200])
    return out


def test_the_state_check_catches_the_sentences_it_was_written_for():
    readme = ("An open course in thirty chapters (twenty-nine are in the book: chapter 29, `torch.export`, is written "
              "and CPU-verified but has no passing GPU run yet) that follows one line.")
    ch30 = ("{doc}`ch25_cuda_graphs` measures it on the H200 (its rows in the map fill in when its GPU run is "
            "published); the series measured more.")
    always = lambda n: True  # noqa: E731
    assert stale_state_sentences(readme, always) and stale_state_sentences(ch30, always)
    assert not stale_state_sentences("A chapter whose GPU run is not published yet has no record.", always)
    assert not stale_state_sentences("Chapter 25 measured 1.3×.", always)


def test_no_sentence_calls_a_published_chapter_unpublished():
    problems = [f"{path.relative_to(ROOT)}: {s}" for path, text in prose_pages() for s in stale_state_sentences(text)]
    assert not problems, "\n".join(problems)


def test_each_part_page_introduces_every_chapter_of_its_part():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    problems = []
    for part in toc["chapters"]:
        if not part.get("sections"):
            continue
        page = (ROOT / f"{part['file']}.md").read_text(encoding="utf-8")
        for section in part["sections"]:
            stem = section["file"].split("/")[-1]
            if not re.search(rf"\{{doc\}}`(?:[^`<]*<)?{stem}>?`", page):
                problems.append(f"{part['file']}.md does not introduce {stem}")
    assert not problems, "\n".join(problems)


def test_a_page_that_speaks_of_columns_has_a_table():
    problems = []
    for path in sorted((ROOT / "chapters").glob("*.md")):
        text = CODE.sub(" ", path.read_text(encoding="utf-8"))
        if re.search(r"\bcolumns?\b", text) and not re.search(r"^\|.*\|\s*$|\{list-table\}|\{csv-table\}", text, re.M):
            problems.append(f"{path.name} speaks of a column but has no table")
    assert not problems, "\n".join(problems)
