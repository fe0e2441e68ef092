"""Keep the compiled programs of one process under the kernel's memory-mapping limit.

XLA:CPU loads every compiled program as many small memory mappings: about 900 for one
``simulate`` program of 8 agents, 1,000–1,500 for a campaign program on 8 CPU devices
(measured with jax 0.10.2: a 3-family campaign of 14 programs left 20,400 mappings). Linux
allows ``vm.max_map_count`` mappings per process (65,530 by default); past it, the next
compile cannot map its code and the process dies with a segmentation fault inside XLA. A
process that compiles many shapes (a notebook, a script of campaigns, the test suite) can
reach it, because the program caches and JAX's own jit caches keep every executable alive.

:func:`relieve` is called before a new program is built (``ProgramCache.get`` on a miss):
when the process holds more than ``fraction`` of the limit, every registered program cache
and JAX's caches are dropped, so executables no one references any more are unmapped.
Programs still in use (an executor held by a running campaign) stay alive and are rebuilt
only if asked for again. Elsewhere than Linux (no ``/proc``) it does nothing.
"""

from __future__ import annotations

import gc
import logging
import threading
import weakref
from pathlib import Path
from typing import Protocol

LOG = logging.getLogger(__name__)
MAPS = Path("/proc/self/maps")
LIMIT = Path("/proc/sys/vm/max_map_count")
FRACTION = 0.5  # relieve above half the limit: one more program is far below the other half


class Clearable(Protocol):
    def clear(self) -> None: ...


_CACHES: weakref.WeakSet = weakref.WeakSet()
_LOCK = threading.Lock()
reliefs = 0  # times this process dropped its caches


def register(cache: Clearable) -> None:
    """Let :func:`relieve` clear ``cache`` (held weakly)."""
    _CACHES.add(cache)


def mapping_count() -> int | None:
    """Memory mappings of this process now, or None where ``/proc`` is missing."""
    try:
        with MAPS.open("rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def mapping_limit() -> int | None:
    """The kernel's per-process mapping limit (``vm.max_map_count``), or None if unknown."""
    try:
        return int(LIMIT.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def drop_compiled_programs() -> None:
    """Clear every registered program cache and JAX's caches, then collect garbage."""
    import jax

    from drivesim.core.rollout import simulate

    for cache in list(_CACHES):
        cache.clear()
    simulate.clear()  # its fast passes compiled from kept StableHLO (core.traced_cache)
    jax.clear_caches()
    gc.collect()


def relieve(fraction: float | None = None) -> bool:
    """Drop compiled programs when this process holds more than ``fraction`` (default
    :data:`FRACTION`) of its mapping limit; True when it did."""
    global reliefs
    fraction = FRACTION if fraction is None else fraction
    count, limit = mapping_count(), mapping_limit()
    if count is None or limit is None or count <= fraction * limit:
        return False
    with _LOCK:
        before = mapping_count() or count
        if before <= fraction * limit:  # another thread relieved it meanwhile
            return False
        drop_compiled_programs()
        reliefs += 1
        after = mapping_count()
    LOG.warning(
        "compiled programs used %d of %d memory mappings (vm.max_map_count); dropped the "
        "program caches: %s mappings now",
        before,
        limit,
        after,
    )
    return True
