"""Compile caches: an empty Inductor/Triton cache for measuring a cold compile (ch02; chapter 24 measures
what each cache layer saves).
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..core.env import cache_root, use_cache_dir
from ..dynamo.state import clear_compile_state


@contextmanager
def fresh_compile_cache():
    """A brand-new, empty Inductor/Triton cache for the block, for measuring cold compiles.

    Inductor's precompiled C++ headers live under $TMPDIR (the runner gives each run its own), not in
    this cache: a 'cold' CPU compile here excludes that one-off cost once an earlier compile of the
    run has built them.
    """
    saved = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="course_cold_", dir=root) as tmp:
        use_cache_dir(tmp)
        clear_compile_state()
        try:
            yield Path(tmp)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            clear_compile_state()
