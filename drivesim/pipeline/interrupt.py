"""SIGTERM as an interruption: a campaign stopped by a signal keeps what it wrote, closes
its session record with the signal's name and says what was saved (SIGKILL cannot be
caught; a resume recovers from it all the same)."""

from __future__ import annotations

import contextlib
import signal
import threading


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when a signal stops the run. signal_name: e.g. "SIGTERM";
    ``saved`` is set by the campaign runner (done, total, this_run) once it has stopped."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


@contextlib.contextmanager
def sigterm_interrupts():
    """Within the block, SIGTERM raises :class:`Interrupted` in the main thread (as Ctrl-C
    raises KeyboardInterrupt); the previous handler comes back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        _RECEIVED.append(signal.Signals(signum).name)
        _PENDING[:] = [_RECEIVED[-1]]
        raise Interrupted(_RECEIVED[-1])

    previous = signal.signal(signal.SIGTERM, handler)
    outer = list(_PENDING)
    _PENDING.clear()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _PENDING[:] = outer


def raise_if_pending() -> None:
    """Raise :class:`Interrupted` if SIGTERM arrived inside :func:`sigterm_interrupts`.

    The handler's own exception can be lost: raised while the main thread runs a finalizer
    (``__del__``, a weakref callback, garbage collection inside a library), Python prints it
    and goes on. Loops that must stop call this between steps."""
    if _PENDING:
        raise Interrupted(_PENDING[-1])


class Deferred:
    """What :func:`sigterm_deferred` saw: ``received``, the signal's name, or None."""

    received: str | None = None

    @property
    def status(self) -> int:
        """The shell's status of a process stopped by the received signal (128 + number)."""
        return 128 + int(getattr(signal, self.received or "SIGTERM"))


@contextlib.contextmanager
def sigterm_deferred():
    """Within the block, SIGTERM only sets the yielded :class:`Deferred`'s ``received``:
    for work inside native code (XLA, Arrow) that an exception raised at an arbitrary
    bytecode could abort; the caller checks it between steps."""
    seen = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handler(signum, frame):
        seen.received = signal.Signals(signum).name
        _RECEIVED.append(seen.received)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)


_RECEIVED: list[str] = []  # signals the handler turned into Interrupted, in order
_PENDING: list[str] = []  # the signal received inside the innermost sigterm_interrupts block


def signal_name(stop: KeyboardInterrupt) -> str:
    """The signal behind ``stop``: its own name, else the last one the handler received (a
    library may re-raise a plain KeyboardInterrupt in its place), else SIGINT."""
    return getattr(stop, "signal_name", None) or (_RECEIVED[-1] if _RECEIVED else "SIGINT")


def exit_status(stop: KeyboardInterrupt) -> int:
    """The shell's status of a process stopped by the signal: 128 + its number."""
    return 128 + int(getattr(signal, signal_name(stop), signal.SIGINT))
