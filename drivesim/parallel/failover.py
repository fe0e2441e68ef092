"""Device failure: finding the failed devices, and a test hook that makes a dispatch fail.

When a dispatch raises a ``jax.errors.JaxRuntimeError`` (XLA's runtime error), the executor
asks :func:`failed_device_ids` which devices to drop: devices named in the error message
("device 3", "TFRT_CPU_3", "cuda:3" ...) plus those that fail a tiny probe computation. It
then rebuilds its mesh without them and redoes the whole batch from its host copy.

:class:`FailureInjector` is the documented test hook (``ExecutorConfig.inject_failure``): it
is called before each dispatch and raises a real ``JaxRuntimeError`` naming a device, so the
executor's recovery path runs exactly as it would for a runtime failure.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.errors import JaxRuntimeError

_DEVICE_PATTERNS = (r"\bdevice[ _:=#]*(\d+)", r"TFRT_CPU_(\d+)", r"\b(?:cuda|gpu|tpu|rocm):(\d+)")


@dataclass(frozen=True)
class DispatchInfo:
    """One dispatch about to run: chunk index, the device ids of the mesh, the backend."""

    chunk: int
    device_ids: tuple[int, ...]
    backend: str


@dataclass(eq=False)
class FailureInjector:
    """Test hook: make device ``device_id`` fail at dispatch ``at_dispatch`` (counted over
    every dispatch this injector sees), ``times`` times. Thread-safe."""

    device_id: int
    at_dispatch: int = 0
    times: int = 1
    seen: int = 0
    fired: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, info: DispatchInfo) -> None:
        with self._lock:
            index = self.seen
            self.seen += 1
            if self.device_id not in info.device_ids or self.fired >= self.times or index < self.at_dispatch:
                return
            self.fired += 1
        raise JaxRuntimeError(
            f"INTERNAL: injected failure on device {self.device_id} (dispatch {index}, chunk {info.chunk})"
        )


def named_device_ids(error: BaseException, known: set[int]) -> set[int]:
    """Device ids among ``known`` that the error message names."""
    text = str(error)
    found: set[int] = set()
    for pattern in _DEVICE_PATTERNS:
        found.update(int(m) for m in re.findall(pattern, text, flags=re.IGNORECASE))
    return found & known


def probe_failed(devices: list) -> set[int]:
    """Ids of the (addressable) devices where a tiny computation fails."""
    bad = set()
    for device in devices:
        if device.process_index != jax.process_index():
            continue
        try:
            value = jax.device_put(np.ones(2, np.float32), device)
            np.asarray(value + 1.0)
        except JaxRuntimeError:
            bad.add(device.id)
    return bad


def failed_device_ids(error: BaseException, devices: list) -> set[int]:
    """The devices to drop after ``error``: named in the message, or failing a probe."""
    return named_device_ids(error, {d.id for d in devices}) | probe_failed(devices)
