"""``XLA_FLAGS`` settings that must be in place before JAX starts its backends.

:mod:`drivesim.parallel.cpu_devices` and :mod:`drivesim.parallel.determinism` each add one flag
through :func:`ensure`: a value already in ``XLA_FLAGS`` wins, and once JAX has started it is
too late to add one.
"""

from __future__ import annotations

import os
import re


def _pattern(name: str) -> re.Pattern:
    return re.compile(rf"--{re.escape(name)}=(\S+)")


def last_value(xla_flags: str | None, name: str) -> str | None:
    """The value of the last ``--name=value`` in ``xla_flags`` (None when absent)."""
    found = _pattern(name).findall(xla_flags or "")
    return found[-1] if found else None


def with_flag(xla_flags: str | None, name: str, value: str) -> str:
    """``xla_flags`` with ``--name=value`` appended, unless it already sets ``--name``."""
    flags = (xla_flags or "").strip()
    if last_value(flags, name) is not None:
        return flags
    return f"{flags} --{name}={value}".strip()


def backend_started() -> bool:
    """Whether JAX has initialised its backends (XLA_FLAGS is read then, once).

    JAX has no public query for this; it refuses (RuntimeError) to change
    ``jax_num_cpu_devices`` exactly when its backends exist, so this tries a change and
    undoes it."""
    import jax

    current = int(jax.config.values["jax_num_cpu_devices"])
    try:
        jax.config.update("jax_num_cpu_devices", current - 1)
    except RuntimeError:
        return True
    jax.config.update("jax_num_cpu_devices", current)
    return False


def ensure(name: str, value: str) -> str | None:
    """Add ``--name=value`` to this process's ``XLA_FLAGS`` unless it already sets ``--name``
    or JAX has started. Returns the value in force: the one already there, ``value`` when
    added, or None when JAX started without the flag (too late)."""
    flags = os.environ.get("XLA_FLAGS", "")
    current = last_value(flags, name)
    if current is not None:
        return current
    if backend_started():
        return None
    os.environ["XLA_FLAGS"] = with_flag(flags, name, value)
    return value
