"""Background stages joined by bounded queues (after grain's prefetch: each queue item
carries ``(value, position, error)``, so an exception in a stage surfaces in the consumer
with its cause instead of a hang).

``Prefetcher(produce, depth)`` runs ``produce(stop)`` (a generator function) in a thread and
hands its values to the consumer through a queue of ``depth`` items. ``close()`` (also on
``with`` exit, on consumer error, or after the last item) stops the thread and joins it: no
thread outlives the pipeline. Stages chain: the device stage's ``produce`` iterates the host
stage.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

_END = object()


class PipelineError(RuntimeError):
    """A background stage failed; ``__cause__`` is the original exception."""


@dataclass(frozen=True)
class QueueItem:
    """What travels through a stage's queue: a value, its position in the source (a batch
    id, for logs) and the exception the stage raised (value None then)."""

    value: Any
    position: int | None
    error: BaseException | None = None


class Prefetcher:
    """Run ``produce(stop_event)`` in a daemon thread; iterate to get its values in order.

    produce yields ``(position, value)`` pairs and should check ``stop_event`` between items
    (the queue put also gives up once stop is set). depth: queue capacity (>= 1).
    """

    def __init__(
        self,
        produce: Callable[[threading.Event], Generator[tuple[int, Any], None, None]],
        depth: int,
        name: str = "drivesim-prefetch",
        upstream: Prefetcher | None = None,
    ):
        self.upstream = upstream
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._produce = produce
        self._aborted: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        """Put unless stopped; returns False when the consumer has gone."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _work(self) -> None:
        position = None
        values = self._produce(self._stop)
        try:
            for position, value in values:
                if not self._put(QueueItem(value, position)):
                    return
        except BaseException as exc:  # noqa: BLE001 - every error must reach the consumer
            self._put(QueueItem(None, position, exc))
            return
        finally:
            values.close()
        self._put(QueueItem(_END, None))

    def __iter__(self) -> Iterator[Any]:
        try:
            while True:
                item = self._get()
                if item.value is _END:
                    return
                if item.error is not None and item.error is self._aborted:
                    raise item.error
                if item.error is not None:
                    raise PipelineError(
                        f"{self._thread.name} failed near position {item.position}: "
                        f"{type(item.error).__name__}: {item.error}"
                    ) from item.error
                yield item.position, item.value
        finally:
            self.close()

    def abort(self, error: BaseException) -> None:
        """Make the consumer's next wait raise ``error`` (from another thread, e.g. a watchdog)."""
        self._aborted = error

    def _get(self) -> QueueItem:
        while True:
            if self._aborted is not None:
                return QueueItem(None, None, self._aborted)
            try:
                return self._queue.get(timeout=0.1)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    return QueueItem(None, None, RuntimeError("stage thread ended without a result"))

    def close(self, timeout: float = 30.0) -> None:
        """Stop the producer (and the stages upstream), drain the queue and join the thread.
        After ``abort`` a stuck thread is left behind after 2 s (the abort error says why)."""
        self._stop.set()
        if self._aborted is not None:
            timeout = min(timeout, 2.0)
        if self.upstream is not None:
            if self._aborted is not None and self.upstream._aborted is None:
                self.upstream._aborted = self._aborted
            self.upstream.close(timeout)
        while self._thread.is_alive():
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)
            timeout -= 0.05
            if timeout <= 0:
                if self._aborted is not None:
                    return
                raise PipelineError(f"{self._thread.name} did not stop")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def chain(
    upstream: Prefetcher,
    transform: Callable[[int, Any], Any],
    depth: int,
    name: str = "drivesim-device-prefetch",
) -> Prefetcher:
    """A second stage applying ``transform(position, value)`` to each upstream value in its own
    thread (e.g. ``device_put`` of the next batch while the current one computes). Closing it
    also closes ``upstream``."""

    def produce(stop: threading.Event):
        try:
            for position, value in upstream:
                if stop.is_set():
                    return
                yield position, transform(position, value)
        finally:
            upstream.close()

    return Prefetcher(produce, depth, name, upstream=upstream)
