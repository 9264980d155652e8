"""``python -m helpers publish``: copy a fully verified GPU run's outputs into ``chapters/``, re-render
each numbers table from that run and write ``helpers/canonical/chNN.json``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from ..core.env import CourseError
from .run import CHAPTER_FILE, CHAPTERS_DIR, NOT_MEASURED_HERE, record_of
from .sources import differences, source_of
from .verify import NotebookResult, verify_notebook


def publish(run_dir: str, chapters_dir: Path = CHAPTERS_DIR, allow_dirty: bool = False,
            only: list[str] | None = None) -> int:
    """Copy a fully verified GPU run's notebooks into chapters/ and write their canonical records.

    ``only`` (chapter ids such as ``ch17``) publishes just those chapters of the run; each of them must
    have passed, whatever the run's other chapters did.
    """
    from ..core.numbers import CANONICAL_DIR

    run_path = Path(run_dir)
    report_file = run_path / "report.json"
    if not report_file.exists():
        raise CourseError(f"{run_path}: no report.json here; publish takes a folder written by `helpers run`.")
    report = json.loads(report_file.read_text())
    if only:
        ids = {Path(nb["path"]).name[:4]: nb for nb in report["notebooks"]}
        missing = sorted(set(only) - set(ids))
        if missing:
            raise CourseError(f"refusing to publish {run_path}: it did not run {', '.join(missing)}.")
        report = dict(report, notebooks=[ids[c] for c in sorted(set(only))])
        report["ok"] = all(nb["ok"] for nb in report["notebooks"])
    failed = [Path(nb["path"]).name for nb in report["notebooks"] if not nb["ok"]]
    if failed or not report.get("ok"):
        raise CourseError(f"refusing to publish {run_path}: these notebooks did not pass: "
                          f"{', '.join(failed) or 'see report'}. Fix them and run again.")
    if report.get("device") != "cuda":
        raise CourseError(f"refusing to publish {run_path}: it ran on {report.get('device')}; the committed "
                          "outputs come from the canonical GPU run (make run on the GPU machine).")
    # verify again from the files themselves (a report can be edited, the notebooks are the record)
    results = [verify_notebook(run_path / Path(nb["path"]).name) for nb in report["notebooks"]]
    if not all(r.ok for r in results):
        raise CourseError(f"refusing to publish {run_path}: re-verification failed.")
    dirty = sorted({str((r.env or {}).get("git_commit")) for r in results
                    if str((r.env or {}).get("git_commit", "")).endswith("+dirty") or not (r.env or {}).get("git_commit")})
    if dirty and not allow_dirty:
        raise CourseError(f"refusing to publish {run_path}: it ran from a working tree with uncommitted changes "
                          f"({', '.join(dirty)}), so no commit names the code that produced it. Commit, run again, "
                          "and publish that run.")
    prepared = []
    for r in results:
        nb = json.loads(Path(r.path).read_text(encoding="utf-8"))
        drop_injected_parameters(nb, r.env or {})
        drop_hidden_stderr(nb)
        rerender_tables(nb, r)
        prepared.append((r, nb))
    stale = [p for r, nb in prepared for p in differences(nb, source_of(r.path), name=Path(r.path).name)]
    if stale:
        raise CourseError(f"refusing to publish {run_path}: its cells are not this checkout's sources/ "
                          f"({stale[0]}{' and more' if len(stale) > 1 else ''}). Publish from the commit that ran.")
    CANONICAL_DIR.mkdir(exist_ok=True)
    for r, nb in prepared:
        src = Path(r.path)
        chapter = CHAPTER_FILE.match(src.name).group(1)
        nbformat.write(nbformat.from_dict(nb), chapters_dir / src.name)  # the layout jupytext writes too
        record = record_of(r, report.get("finished", "")[:10])
        (CANONICAL_DIR / f"{chapter}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"published {src.name} ({len(record['figures'])} figures)")
    if chapters_dir == CHAPTERS_DIR:  # the book's own publish: its verification page follows the records
        from . import verification

        print(f"wrote {verification.write()}")
    return 0


def drop_hidden_stderr(nb: dict) -> int:
    """Remove the stderr streams of cells tagged ``remove-stderr``: the page hides them, and what they hold
    (library warnings with the run machine's paths) is no part of the chapter's record. Returns how many."""
    dropped = 0
    for cell in nb["cells"]:
        if "remove-stderr" in cell.get("metadata", {}).get("tags", []) and cell.get("outputs"):
            kept = [o for o in cell["outputs"] if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
            dropped += len(cell["outputs"]) - len(kept)
            cell["outputs"] = kept
    return dropped


def drop_injected_parameters(nb: dict, env: dict) -> bool:
    """Remove papermill's injected-parameters cell when it only says what the run's banner says.

    ``--device cuda`` on a GPU machine injects ``device = "cuda"``, which ``"auto"`` resolves to anyway;
    the page then shows the chapter as a reader runs it. A cell that changed anything else stays.
    """
    for i, cell in enumerate(nb["cells"]):
        if "injected-parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        src = "".join(cell.get("source", ""))
        pairs = dict(re.findall(r'^(\w+) = "([^"]*)"$', src, re.M))
        lines = [l for l in src.splitlines() if l.strip() and not l.startswith("#")]
        if len(pairs) == len(lines) and all(env.get(k) == v for k, v in pairs.items()):
            del nb["cells"][i]
            return True
    return False


def rerender_tables(nb: dict, result: NotebookResult) -> int:
    """Make a notebook's numbers tables show its own run as the book's run (no "your run" column)."""
    from ..core.numbers import TABLE_META_KEY, render_table

    series = {f["name"]: f for f in result.figures if f["status"] == "reference"}
    own = {f["name"]: f for f in result.figures if f["status"] not in NOT_MEASURED_HERE}
    n = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            spec = (out.get("metadata") or {}).get(TABLE_META_KEY)
            if not spec:
                continue
            text = render_table(spec["rows"], series, own, result.env)
            out["data"] = {"text/markdown": text, "text/plain": text}
            n += 1
    return n
