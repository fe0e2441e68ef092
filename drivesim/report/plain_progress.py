"""Progress as plain lines, for a campaign whose stderr is not a terminal (a log file, a pipe,
CI): the live view's frames are not drawn there, so a long run would show nothing until it ends.

:class:`PlainProgress` prints one line at the start, then every ``every_s`` seconds while the
run goes on (also while no batch finishes: the first batches wait for XLA's compilation), and
one at the end: scenarios done of the total, the rate now and on average, failures, ETA, and the
compile time of the last batch when it had one.
"""

from __future__ import annotations

import threading
import time
from typing import IO

from drivesim.report.rates import rate

PLAIN_EVERY_S = 10.0


class PlainProgress:
    """Plain progress lines on ``stream`` from a :class:`drivesim.report.live.LiveState`."""

    def __init__(self, state, stream: IO[str], title: str, every_s: float | None = None):
        self.state, self.stream, self.title = state, stream, title
        self.every_s = PLAIN_EVERY_S if every_s is None else every_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._last_event = time.monotonic()
        self._thread = threading.Thread(target=self._beat, name="drivesim-progress", daemon=True)

    def start(self) -> None:
        self._started = time.monotonic()
        self.line()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.line()

    def updated(self) -> None:
        """A progress event arrived (the state holds it)."""
        self._last_event = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            self.line()

    def line(self) -> None:
        s = self.state
        parts = [f"{self.title}: {s.done:,}/{s.total:,}" if s.total else f"{self.title}: {s.done:,}"]
        if s.total:
            parts[0] += f" ({100.0 * s.done / s.total:.1f}%)"
        parts.append(f"{rate(s.rate_now)}/s now, {rate(s.rate_mean)}/s mean")
        if s.failed:
            parts.append(f"{s.failed:,} failed")
        if s.total and s.rate_mean > 0 and s.done < s.total:
            parts.append(f"ETA {_clock((s.total - s.done) / s.rate_mean)}")
        compile_s = (s.phases or {}).get("compile_s") or 0.0
        if compile_s:
            parts.append(f"last batch compiled {compile_s:.1f} s")
        quiet = time.monotonic() - self._last_event
        if quiet >= self.every_s and not self._stop.is_set():
            parts.append(f"no batch finished for {_clock(quiet)} (compiling or computing)")
        with self._lock:
            print(", ".join(parts), file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
