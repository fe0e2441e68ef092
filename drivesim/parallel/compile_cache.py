"""JAX's persistent compilation cache, on by default for the command line and the library.

Compiled programs are stored under ``$DRIVESIM_JAX_CACHE`` (default: the user's cache
directory, ``$XDG_CACHE_HOME/drivesim/jax/KEY`` or ``~/.cache/drivesim/jax/KEY``, KEY a digest
of the processor's model and instruction sets: drivesim.parallel.processor.key), so a second run of the
same shapes loads them instead of compiling. XLA compiles for the processor it runs on, and
two processors give different bits for the same program; a home directory shared by machines
with other processors (a cluster's) keeps each processor's programs apart.
``DRIVESIM_JAX_CACHE=off`` turns it off; ``JAX_COMPILATION_CACHE_DIR`` set by the user wins
over both. ``import drivesim`` turns it on for the process (:func:`enable_on_import`), so a
library user's ``simulate`` loads what an earlier run compiled.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from drivesim.parallel import processor

ENV = "DRIVESIM_JAX_CACHE"
OFF = ("", "0", "off", "none", "false")


def cache_dir() -> Path | None:
    """The cache directory this process would use, or None when turned off."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in OFF else Path(value).expanduser()
    return default_dir("jax")


def default_dir(name: str) -> Path:
    """``$XDG_CACHE_HOME/drivesim/NAME/KEY`` (or ``~/.cache/...``), KEY the processor's
    (drivesim.parallel.processor.key): a folder per processor."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "drivesim" / name / processor.key()


def enable(path: str | Path | None = None) -> Path | None:
    """Turn the persistent cache on at ``path`` (default :func:`cache_dir`); returns the
    directory, or None when turned off or not writable (then JAX compiles as usual)."""
    import jax

    target = Path(path) if path is not None else cache_dir()
    if target is None:
        return None
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(target))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return target


def enable_on_import() -> Path | None:
    """The library's default (called by ``import drivesim``): the cache on for every program
    of this process, unless the user chose: ``JAX_COMPILATION_CACHE_DIR`` or a cache folder
    already set in ``jax.config`` wins, ``DRIVESIM_JAX_CACHE=off`` leaves it off. Before JAX is
    imported it only sets JAX's environment variables (no JAX import, inherited by worker
    processes); after, it updates ``jax.config``. Returns the folder, or None."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    target = cache_dir()
    if target is None:
        return None
    jax = sys.modules.get("jax")
    if jax is not None:
        if jax.config.jax_compilation_cache_dir:
            return Path(jax.config.jax_compilation_cache_dir)
        return enable(target)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(target)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    return target
