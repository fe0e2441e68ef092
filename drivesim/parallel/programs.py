"""A bounded, thread-safe LRU of compiled programs, owned by the object that compiles them.

Executors and trainers each hold one: a program lives as long as its owner and at most
``maxsize`` of them at once (the least recently used is dropped, not the whole cache).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class ProgramCache:
    """``get(key, build)``: the cached value for ``key``, built by ``build()`` on a miss."""

    def __init__(self, maxsize: int = 32):
        if maxsize < 1:
            raise ValueError(f"ProgramCache.maxsize: expected >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.RLock()

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The value for ``key`` (most recently used now); ``build()`` runs under the lock,
        so two threads never compile the same program twice."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            value = build()
            self._items[key] = value
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
            return value

    def peek(self, key: Hashable) -> Any | None:
        """The value for ``key`` if cached, else None (does not change the order)."""
        with self._lock:
            return self._items.get(key)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
