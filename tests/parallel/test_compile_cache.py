"""The command line's compilation cache folder: one per processor under the user's cache."""

from __future__ import annotations

import re

from drivesim.parallel import compile_cache, processor


def test_default_folder_is_per_processor(monkeypatch, tmp_path):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.delenv(compile_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    key = processor.key()
    assert re.fullmatch(r"[0-9a-f]{12}", key) and processor.key() == key
    assert compile_cache.cache_dir() == tmp_path / "drivesim" / "jax" / key


def test_named_folders_and_off(monkeypatch, tmp_path):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "mine"))
    assert compile_cache.cache_dir() == tmp_path / "mine"  # a folder the user names is used as named
    monkeypatch.setenv(compile_cache.ENV, "off")
    assert compile_cache.cache_dir() is None
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax"))
    assert compile_cache.cache_dir() == tmp_path / "jax"
