"""What the running notebook has set up: its chapter and its resolved environment (ch01).

A leaf module: figures, numbers and plots read the environment from here, and ``session`` (the setup
and parameters cells) writes it, so none of them imports another in a circle.
"""
from __future__ import annotations

from .env import Env, detect

STATE: dict = {"chapter": None, "env": None}


def current_env() -> Env:
    """The configured Env (configuring with defaults if the notebook has not yet)."""
    if STATE["env"] is None:
        env = detect(chapter=STATE["chapter"])
        STATE["env"] = env
    return STATE["env"]
