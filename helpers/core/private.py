"""The one door to torch's private API (used by the station subpackages only).

``private("torch._dynamo.reset")`` imports a private name or raises a CourseError that names it, so a
release that moves an API fails with one clear line instead of a traceback from deep inside torch.
Only ``helpers.dynamo``, ``helpers.aot``, ``helpers.inductor`` and ``helpers.runtime`` call it.
"""
from __future__ import annotations

import importlib

from .env import VERIFIED_TORCH, CourseError


def private(path: str):
    """Import ``module.attr`` from torch's private API, or raise a CourseError that names it."""
    module, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        import torch

        raise CourseError(
            f"helpers needs the private torch API `{path}`, which torch {torch.__version__} does not have. "
            f"The course is verified on torch {', '.join(VERIFIED_TORCH)}; install one of those, or report "
            f"this so helpers/core/private.py can follow the move."
        ) from exc
