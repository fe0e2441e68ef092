"""A bounded, thread-safe LRU of compiled programs.

Executors share one process-wide cache (:data:`EXECUTOR_PROGRAMS`): a second campaign, bench
or test in the same process that needs the same program (same backend, devices, SimConfig and
argument shapes) reuses the compiled executable instead of tracing and compiling it again.
Trainers hold their own. At most ``maxsize`` programs are kept (the least recently used is
dropped, not the whole cache), and every cache is dropped when the process nears the kernel's
memory-mapping limit (:mod:`drivesim.parallel.code_memory`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from drivesim.parallel import code_memory


class ProgramCache:
    """``get(key, build)``: the cached value for ``key``, built by ``build()`` on a miss."""

    def __init__(self, maxsize: int = 32):
        if maxsize < 1:
            raise ValueError(f"ProgramCache.maxsize: expected >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.RLock()
        self._building: dict[Hashable, threading.Lock] = {}
        self.builds = 0  # misses so far (programs built)
        code_memory.register(self)  # dropped when the process nears its mapping limit

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The value for ``key`` (most recently used now). Two threads asking for the same
        key build it once (the second waits); different keys build concurrently."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._building.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:  # built by another thread while this one waited
                    self._items.move_to_end(key)
                    return self._items[key]
            code_memory.relieve()  # a new program: make room for its code first
            try:
                value = build()
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                self.builds += 1
                self._items[key] = value
                while len(self._items) > self.maxsize:
                    self._items.popitem(last=False)
            return value

    def peek(self, key: Hashable) -> Any | None:
        """The value for ``key`` if cached, else None (does not change the order)."""
        with self._lock:
            return self._items.get(key)

    def clear(self) -> None:
        """Drop every cached program (their device memory is freed with them)."""
        with self._lock:
            self._items.clear()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


EXECUTOR_PROGRAMS = ProgramCache(64)  # every Executor of this process
