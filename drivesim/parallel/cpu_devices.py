"""Several XLA CPU devices per usable core (DEVICES_PER_CORE).

One CPU device runs the engine slower than several on the same cores, because XLA:CPU
splits each of the step loop's fusions over its thread pool with a barrier after each:
independent device programs on cache-sized shards run side by side without those barriers
(``benchmarks/engine.py`` runs each workload on one device and on all of them). The device
count of the host platform is fixed when JAX starts, so
:func:`enable` must run before anything touches a device (the CLI calls it first thing).
"""

from __future__ import annotations

import logging
import os

from drivesim.parallel import xla_flags

log = logging.getLogger(__name__)

DEVICES_PER_CORE = 4
COUNT_FLAG = "xla_force_host_platform_device_count"  # the XLA_FLAGS name (without "--")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. 1 under ``taskset -c 0``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def enable(count: int | None = None) -> int:
    """Ask for ``count`` (default: DEVICES_PER_CORE x usable cores) CPU devices unless
    ``XLA_FLAGS`` already sets a count or JAX has started. Returns the count in force (0 if
    unknown)."""
    value = xla_flags.ensure(COUNT_FLAG, str(count or DEVICES_PER_CORE * usable_cores()))
    if value is None:
        log.warning("cpu_devices: JAX already started; keeping its CPU device count")
        return 0
    return int(value)
