"""Stall watchdog: a campaign never hangs silently.

The runner calls ``beat()`` whenever a batch moves (reaches the main thread, or is written).
A daemon thread checks that the last beat is recent: the limit is ``base_s`` (default 300 s,
room for a compile) or ``factor`` times the median of the recent gaps between beats, whichever
is larger, so a campaign of slow batches is not mistaken for a stall. When the limit
passes, the watchdog writes every thread's stack (``faulthandler``) to
``DIR/stall-<time>.txt``, records a :class:`CampaignStalled` error and calls ``on_stall``
(the runner then stops waiting and raises it). A rerun resumes the campaign from its ledger.
"""

from __future__ import annotations

import collections
import faulthandler
import pathlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DEFAULT_STALL_S = 300.0


class CampaignStalled(RuntimeError):
    """No batch moved for longer than the watchdog's limit (``path``: the thread dump)."""

    def __init__(self, message: str, path: pathlib.Path | None = None):
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class WatchdogConfig:
    """base_s: the stall limit before batches are timed [s] (<= 0 disables the watchdog);
    factor: the limit is at least factor x the median recent gap between batches; poll_s: how
    often the watchdog looks [s] (default: limit / 20, at most 5 s)."""

    base_s: float = DEFAULT_STALL_S
    factor: float = 10.0
    poll_s: float | None = None


class Watchdog:
    """Thread watching ``beat()``s; see the module docstring. Use as a context manager."""

    def __init__(self, directory, config: WatchdogConfig, on_stall: Callable[[CampaignStalled], None]):
        self.directory = pathlib.Path(directory)
        self.config = config
        self.on_stall = on_stall
        self.error: CampaignStalled | None = None
        self._last = time.monotonic()
        self._gaps: collections.deque = collections.deque(maxlen=32)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None
        if config.base_s > 0:
            self._thread = threading.Thread(target=self._watch, name="drivesim-watchdog", daemon=True)
            self._thread.start()

    def limit_s(self) -> float:
        """The current stall limit [s]."""
        typical = float(np.median(self._gaps)) if self._gaps else 0.0
        return max(self.config.base_s, self.config.factor * typical)

    def beat(self) -> None:
        """A batch moved."""
        now = time.monotonic()
        with self._lock:
            self._gaps.append(now - self._last)
            self._last = now

    def check(self) -> None:
        """Raise the stall error in the calling thread once the watchdog has fired."""
        if self.error is not None:
            raise self.error

    def _watch(self) -> None:
        while not self._stop.wait(self.config.poll_s or min(5.0, self.limit_s() / 20)):
            with self._lock:
                idle, limit = time.monotonic() - self._last, self.limit_s()
            if idle > limit:
                self._fire(idle, limit)
                return

    def _fire(self, idle: float, limit: float) -> None:
        path = self.directory / f"stall-{time.strftime('%Y%m%dT%H%M%S')}.txt"
        try:
            with open(path, "w") as fh:
                fh.write(
                    f"drivesim campaign stalled: no batch moved for {idle:.1f} s (limit {limit:.1f} s)\n"
                )
                fh.write("stacks of every thread:\n")
                fh.flush()
                faulthandler.dump_traceback(fh, all_threads=True)
        except OSError:
            dump = None
        else:
            dump = path
        where = f"; thread stacks in {dump}" if dump else ""
        self.error = CampaignStalled(
            f"campaign stalled: no batch moved for {idle:.0f} s (limit {limit:.0f} s){where}; "
            "rerun the same command to resume it",
            dump,
        )
        self.on_stall(self.error)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> Watchdog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
