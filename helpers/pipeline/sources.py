"""Chapter text sources: each ``chapters/chNN_*.ipynb`` is paired with ``sources/chNN_*.md`` (MyST Markdown).

Authors edit the text source; ``make sync`` (jupytext, configured in ``jupytext.toml``) writes its cells
into the notebook and keeps the notebook's verified outputs. ``differences`` is what the sync test and
``python -m helpers lint`` report when the two disagree on any cell.
"""
from __future__ import annotations

from pathlib import Path

from ..core.env import REPO_ROOT

SOURCES_DIR = REPO_ROOT / "sources"
# cell metadata a run adds (papermill, execution times) or jupytext bookkeeping: not part of a source
RUN_METADATA = ("papermill", "execution", "lines_to_next_cell")


def source_of(notebook: str | Path) -> Path:
    """The text source paired with a chapter notebook."""
    return SOURCES_DIR / (Path(notebook).stem + ".md")


def _authored(cell) -> tuple:
    meta = {k: v for k, v in cell.get("metadata", {}).items() if k not in RUN_METADATA and v not in ([], {})}
    source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    return cell["cell_type"], source, meta


def differences(notebook, source: str | Path | None = None, *, name: str | None = None) -> list[str]:
    """Cells on which a notebook (a path, or a loaded notebook with ``name``) and its text source disagree.

    Compared per cell: type, source and authored metadata (tags, myst-nb options), not outputs or the
    run's bookkeeping.
    """
    import jupytext
    import nbformat

    if isinstance(notebook, (str, Path)):
        name = Path(notebook).name
        source = Path(source) if source else source_of(notebook)
        notebook = nbformat.read(notebook, as_version=4)
    source = Path(source)
    if not source.exists():
        return [f"{name}: no text source {source.parent.name}/{source.name} (run `make sync`)"]
    executed = [_authored(c) for c in notebook["cells"]]
    text = [_authored(c) for c in jupytext.read(source).cells]
    problems = []
    for i, (a, b) in enumerate(zip(executed, text)):
        for what, x, y in zip(("type", "source", "metadata"), a, b):
            if x != y:
                first = next((ln for ln in zip(str(x).splitlines(), str(y).splitlines()) if ln[0] != ln[1]), None)
                detail = f": notebook {first[0][:60]!r} vs source {first[1][:60]!r}" if first else ""
                problems.append(f"{name} cell {i + 1}: {what} differs from {source.name}{detail}")
                break
    if len(executed) != len(text):
        problems.append(f"{name}: {len(executed)} cells, but {source.name} has {len(text)}")
    return problems
