"""One plot style for the course: labelled axes with units, the device in the title (ch02)."""
from __future__ import annotations

from .state import current_env

PALETTE = {"eager": "#7f7f7f", "compiled": "#1f77b4", "fused": "#1f77b4", "ceiling": "#d62728",
           "alt": "#ff7f0e", "extra": "#2ca02c"}


def style() -> None:
    """Apply the house style to matplotlib (idempotent)."""
    import matplotlib

    matplotlib.rcParams.update({
        "figure.figsize": (7.0, 3.8), "figure.dpi": 110, "savefig.dpi": 110,
        "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
        "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9, "legend.frameon": False,
    })


def new(title: str, xlabel: str, ylabel: str, env=None, logx: bool = False, logy: bool = False):
    """A styled figure and axes whose title names the device it was measured on."""
    import matplotlib.pyplot as plt

    style()
    env = env or current_env()
    fig, ax = plt.subplots()
    where = env.device_name if env.on_gpu else f"CPU, {env.cpu_count} cores"
    ax.set_title(f"{title}\n({where}, torch {env.torch.split('+')[0]})")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    return fig, ax


def show(fig) -> None:
    """Tighten and display a figure (and close it, so it is not drawn twice)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    plt.show()
    plt.close(fig)
