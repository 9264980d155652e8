"""Unit tests of helpers/runtime/caches.py."""
import os

from helpers.runtime.caches import fresh_compile_cache


def test_fresh_compile_cache_is_empty_inside_and_restores_the_caches_after():
    before = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    with fresh_compile_cache() as path:
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(path)
        assert os.environ["TRITON_CACHE_DIR"] == str(path / "triton")
        assert [p for p in path.iterdir() if p.name != "triton"] == []
    assert not path.exists()
    assert {k: os.environ.get(k) for k in before} == before
