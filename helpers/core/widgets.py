"""Interactive controls with a static fallback for the built book and headless runs (ch02)."""
from __future__ import annotations


def interactive_available() -> bool:
    """True in a live Jupyter front end with ipywidgets installed; False under papermill/CI."""
    import os

    if os.environ.get("COURSE_HEADLESS"):
        return False
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython

        shell = get_ipython()
        return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"
    except ImportError:
        return False


def explore(fn, static: dict, **controls):
    """Show ``fn`` under ipywidgets controls in a live notebook; otherwise call it once with ``static``.

    ``controls`` are ipywidgets-style abbreviations (a list of options, a (min, max, step) tuple).
    The static call is what papermill records and the book shows.
    """
    if interactive_available():
        import ipywidgets

        return ipywidgets.interact(fn, **controls)
    print("(static view for the book; run the notebook live to explore with controls: "
          + ", ".join(controls) + ")")
    return fn(**static)
