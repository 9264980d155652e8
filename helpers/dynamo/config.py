"""Read and temporarily change TorchDynamo's settings, ``torch._dynamo.config`` (ch06).

The settings module is private: it is reached through ``helpers.core.private.private``, and a setting this
torch lacks raises a CourseError that names it. A setting renamed by torch is looked up under its old
name too (``recompile_limit`` was ``cache_size_limit``). Everything here works on torch 2.11, 2.13 and 2.15.
"""
from __future__ import annotations

import contextlib

from ..core.env import VERIFIED_TORCH, CourseError
from ..core.private import private

#: Current name → the name older torch releases used.
_OLD_NAMES = {"recompile_limit": "cache_size_limit"}


def _resolve(config, name: str) -> str:
    """The attribute name ``name`` has on this torch's config (its old name if it was renamed)."""
    if hasattr(config, name):
        return name
    old = _OLD_NAMES.get(name)
    if old is not None and hasattr(config, old):
        return old
    import torch

    raise CourseError(f"torch {torch.__version__} has no Dynamo setting {name!r}; "
                      f"the course is verified on torch {', '.join(VERIFIED_TORCH)}.")


def has_setting(name: str) -> bool:
    """Whether this torch has the Dynamo setting ``name`` (under its current or its old name) (ch09)."""
    try:
        _resolve(private("torch._dynamo.config"), name)
    except CourseError:
        return False
    return True


def dynamo_setting(name: str):
    """The current value of one ``torch._dynamo.config`` setting, e.g. ``dynamo_setting("recompile_limit")`` (ch06)."""
    config = private("torch._dynamo.config")
    return getattr(config, _resolve(config, name))


@contextlib.contextmanager
def dynamo_config(**settings):
    """Set ``torch._dynamo.config`` settings for the block, e.g. ``dynamo_config(recompile_limit=2)`` (ch06).

    Uses the config module's own ``patch``, which restores the previous values on exit. Raises a
    CourseError naming the setting if this torch does not have it.
    """
    config = private("torch._dynamo.config")
    resolved = {_resolve(config, name): value for name, value in settings.items()}
    with config.patch(**resolved):
        yield


@contextlib.contextmanager
def dynamo_config_where_present(**settings):
    """Like ``dynamo_config``, but a setting this torch does not have is left out, not an error (ch07).

    For settings that exist only on some verified torch releases, e.g.
    ``computed_lazy_constant_max_nodes`` (new in torch 2.15). Yields the names that were applied.
    """
    present = {name: value for name, value in settings.items() if has_setting(name)}
    with dynamo_config(**present):
        yield sorted(present)
