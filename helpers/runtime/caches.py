"""Compile caches: an empty Inductor/Triton cache for measuring a cold compile (ch02; chapter 24 measures
what each cache layer saves). The implementation is Dynamo's station's (``helpers.dynamo.state``), so that
Part 3 can use it too; ``helpers.fresh_compile_cache`` is this name.
"""
from __future__ import annotations

from ..dynamo.state import fresh_compile_cache

__all__ = ["fresh_compile_cache"]
