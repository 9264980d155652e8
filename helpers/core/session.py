"""The per-notebook session: setup cell, parameters → Env, and the environment record (ch01)."""
from __future__ import annotations

import os
import warnings

from . import figures, machine_lock, numbers
from .env import (
    Env,
    cache_root,
    detect,
    require_torch,
    resolve_device,
    seed_everything,
    use_cache_dir,
)
from .state import STATE, current_env

ENV_META_KEY = "course_env"


def setup(chapter: str) -> None:
    """Run once at the top of a chapter: check torch, point compile caches at this run's folder, seed."""
    require_torch()
    STATE["chapter"] = chapter
    STATE["env"] = None
    figures.RECORDED.clear()
    figures.REPLAYED.clear()
    numbers.REFERENCES.clear()
    use_cache_dir(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or cache_root())
    # Inductor's "TensorFloat32 tensor cores ... available but not enabled" (chapter 8 shows when it applies)
    warnings.filterwarnings("ignore", message="TensorFloat32 tensor cores")
    warnings.filterwarnings("ignore", message=".*TF32.*")
    seed_everything(0)
    _take_the_run_lock()


def _take_the_run_lock() -> None:
    """In a GPU run of several notebooks at once, make each cell take the run's lock (machine_lock)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    machine_lock.install(get_ipython())


def configure(device: str = "auto", scale: str = "auto", seed: int = 0, threads="auto") -> Env:
    """Resolve the parameters cell into an Env, record it in the notebook and print a banner.

    On a CPU, ``threads="auto"`` runs torch (eager and Inductor's generated code alike) on one thread:
    with every core in use, another program on the machine turns a 4 MiB copy from 0.2 ms into 10 ms,
    so only single-threaded timings mean the same on a laptop, a busy CI box and a workstation.
    """
    import torch

    if resolve_device(device) == "cpu":
        torch.set_num_threads(1 if threads == "auto" else int(threads))
    env = detect(device, scale, chapter=STATE["chapter"])
    STATE["env"] = env
    seed_everything(seed)
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display({"text/plain": env.banner()}, raw=True, metadata={ENV_META_KEY: env.as_dict()})
            return env
    except ImportError:
        pass
    print(env.banner())
    return env


def pick(quick, full):
    """Choose a size by the run's scale: ``pick(quick=2**20, full=2**24)``."""
    return full if current_env().scale == "full" else quick
