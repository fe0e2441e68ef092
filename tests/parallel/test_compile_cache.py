"""The compilation cache folder: one per processor under the user's cache, on for the
command line and for any process that imports drivesim."""

from __future__ import annotations

import os
import re
import subprocess
import sys

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


def _cache_folder_of(code: str, tmp_path, **env) -> str:
    """The JAX cache folder a fresh process running ``code`` ends with (its last line)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", compile_cache.ENV)}
    clean.update(XDG_CACHE_HOME=str(tmp_path), **env)
    out = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_importing_drivesim_turns_the_cache_on_for_library_users(tmp_path):
    want = str(tmp_path / "drivesim" / "jax" / processor.key())
    show = "print(jax.config.jax_compilation_cache_dir)"
    assert _cache_folder_of(f"import drivesim, jax; {show}", tmp_path) == want  # before JAX
    assert _cache_folder_of(f"import jax; import drivesim; {show}", tmp_path) == want  # after JAX
    assert _cache_folder_of(f"import drivesim, jax; {show}", tmp_path, DRIVESIM_JAX_CACHE="off") == "None"
    mine = str(tmp_path / "mine")
    code = f"import jax; jax.config.update('jax_compilation_cache_dir', {mine!r}); import drivesim; {show}"
    assert _cache_folder_of(code, tmp_path) == mine  # the user's choice wins
