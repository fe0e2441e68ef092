"""SIGTERM inside ``sigterm_interrupts``: the exception the handler raises, and the pending
signal a loop still sees when a finalizer swallowed that exception."""

from __future__ import annotations

import gc
import os
import signal
import sys

import pytest

from drivesim.pipeline.interrupt import Interrupted, raise_if_pending, sigterm_interrupts


def test_sigterm_raises_interrupted_in_the_main_thread():
    with pytest.raises(Interrupted) as caught, sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs at the next bytecode boundary
            pass
    assert caught.value.signal_name == "SIGTERM"


def test_a_sigterm_swallowed_by_a_finalizer_is_still_pending(monkeypatch):
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: dropped.append(unraisable.exc_type))

    class SignalledWhileFinalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler raises here; Python prints and drops it
                pass

    with sigterm_interrupts():
        SignalledWhileFinalized()
        gc.collect()
        assert dropped == [Interrupted]  # "Exception ignored in ... __del__": the loop went on
        with pytest.raises(Interrupted):
            raise_if_pending()
    raise_if_pending()  # outside the block nothing is pending


def test_nothing_is_pending_without_a_signal():
    with sigterm_interrupts():
        raise_if_pending()
