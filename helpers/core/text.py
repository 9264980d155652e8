"""Plain-text layout the chapters share: two listings side by side (ch09, ch13); a Markdown output (every numbers table; the map, ch30)."""
from __future__ import annotations


def columns(left: list[str], right: list[str], titles: tuple[str, str], width: int) -> str:
    """``left`` and ``right`` in two columns, row by row; a left line is cut at ``width`` characters."""
    rows = [f"{titles[0]:<{width}}  {titles[1]}", f"{'-' * (width - 2):<{width}}  {'-' * (width - 2)}"]
    for k in range(max(len(left), len(right))):
        a = left[k] if k < len(left) else ""
        b = right[k] if k < len(right) else ""
        rows.append(f"{a[:width]:<{width}}  {b}")
    return "\n".join(rows)


def show_markdown(text: str, metadata: dict | None = None) -> None:
    """Display ``text`` as a Markdown output (rendered as MyST in the book), or print it outside IPython."""
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display({"text/markdown": text, "text/plain": text}, raw=True, metadata=metadata or {})
            return
    except ImportError:
        pass
    print(text)
