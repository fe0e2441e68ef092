"""JAX's persistent compilation cache, on by default for the command line.

Compiled programs are stored under ``$DRIVESIM_JAX_CACHE`` (default: the user's cache
directory, ``$XDG_CACHE_HOME/drivesim/jax/KEY`` or ``~/.cache/drivesim/jax/KEY``, KEY a digest
of the processor's model and instruction sets: drivesim.parallel.processor.key), so a second run of the
same shapes loads them instead of compiling. XLA compiles for the processor it runs on, and
two processors give different bits for the same program; a home directory shared by machines
with other processors (a cluster's) keeps each processor's programs apart.
``DRIVESIM_JAX_CACHE=off`` turns it off; ``JAX_COMPILATION_CACHE_DIR`` set by the user wins
over both.
"""

from __future__ import annotations

import os
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
