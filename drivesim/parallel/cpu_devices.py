"""One XLA CPU device per usable core.

Measured here (BENCHMARKS.md): one CPU device leaves part of the second core idle on the
engine's step loop (XLA:CPU splits only some loops across its thread pool), while one device
per core runs the shards side by side: W32 through the sharding backend is about 1.8x faster
on 2 cores. The device count of the host platform is fixed when JAX starts, so
:func:`enable` must run before anything touches a device (the CLI calls it first thing).
"""

from __future__ import annotations

import logging
import os
import re

log = logging.getLogger(__name__)

_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. 1 under ``taskset -c 0``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def enable(count: int | None = None) -> int:
    """Ask for ``count`` (default: usable cores) CPU devices unless ``XLA_FLAGS`` already
    sets a count or JAX has started. Returns the count in force (0 if unknown)."""
    flags = os.environ.get("XLA_FLAGS", "")
    found = _COUNT.findall(flags)
    if found:
        return int(found[-1])
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        log.warning("cpu_devices: JAX already started; keeping its CPU device count")
        return 0
    count = count or usable_cores()
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()
    return count
