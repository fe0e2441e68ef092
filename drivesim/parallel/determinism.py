"""Bitwise-reproducible CPU programs whatever the device count.

Why results could differ: XLA:CPU always lets LLVM contract a multiply and a dependent add
into one FMA instruction (``AllowFPOpFusion = Fast``, not configurable) wherever both end up in
the same kernel. A one-device program (``num_partitions=1``) goes through a different pipeline
than a multi-device one (the SPMD pipeline inlines calls and runs CSE before the main passes),
so XLA cuts the kernels differently, other multiply-adds get contracted, and a few results
differ in their last bits.
Every multi-device program agrees with every other, whatever its device count (2, 3, 4, 8),
backend, block of scenarios per device, chunk or process count.

Two ways to the same guarantee:

* **Paired** (the CLI's default): FMA stays on, and an executor never compiles a one-partition
  CPU program: a run given one CPU device takes a pair of them (:func:`paired`; the CLI makes 4
  virtual CPU devices per core, so the pair shares the same cores, and raises an ``XLA_FLAGS``
  count of one CPU device to two). Full CPU speed. A process that starts JAX with a single CPU
  device itself (the library without the CLI) cannot pair and logs a warning.
* **FMA-free** (``DRIVESIM_FMA_FREE=1``, or :func:`enable` before JAX starts): cap XLA's
  instruction set at AVX (``--xla_cpu_max_isa=AVX``: 256-bit vectors, no FMA3). Without
  contraction the results no longer depend on how XLA fuses the program, so the plain jitted
  engine on one device agrees as well; about 16% slower at W32. The test suite runs this way.

GPU programs are not covered by this guarantee. On non-x86 CPUs (aarch64: FMA is baseline) the
ISA cap does not remove contraction; pairing still applies.
"""

from __future__ import annotations

import functools
import logging
import os

from drivesim.parallel import xla_flags
from drivesim.parallel.cpu_devices import COUNT_FLAG

log = logging.getLogger(__name__)

_NAME = "xla_cpu_max_isa"
FMA_FREE_ENV = "DRIVESIM_FMA_FREE"
FLAG = f"--{_NAME}=AVX"
_FMA_FREE_ISAS = {"SSE4_2", "AVX"}


def with_flag(flags: str | None) -> str:
    """``flags`` (an XLA_FLAGS string) with :data:`FLAG` added, unless it already sets
    ``--xla_cpu_max_isa``."""
    return xla_flags.with_flag(flags, _NAME, "AVX")


def _is_fma_free(isa: str | None) -> bool:
    return isa is not None and isa.upper() in _FMA_FREE_ISAS


def flags_are_fma_free(flags: str | None) -> bool:
    """Whether ``flags`` caps the CPU instruction set below FMA (SSE4_2 or AVX)."""
    return _is_fma_free(xla_flags.last_value(flags, _NAME))


def enable() -> bool:
    """Add :data:`FLAG` to ``XLA_FLAGS`` if JAX has not started its backends yet (an
    ``--xla_cpu_max_isa`` already there wins).

    Returns whether this process runs FMA-free (see :func:`active`); logs a warning when the
    backends already started without the flag (too late to change it)."""
    isa = xla_flags.ensure(_NAME, "AVX")
    if isa is None:
        log.warning("determinism: JAX already started without %s; 1-device results may differ", FLAG)
    return _is_fma_free(isa)


def active() -> bool:
    """Whether ``XLA_FLAGS`` (as this process sees it) makes CPU programs FMA-free."""
    return flags_are_fma_free(os.environ.get("XLA_FLAGS"))


def configure() -> bool:
    """The CLI's choice, before JAX starts: FMA-free programs when ``DRIVESIM_FMA_FREE=1``,
    else paired ones: an ``XLA_FLAGS`` that forces a single CPU device is given a second one
    (:func:`pair_forced_single_device`), since one CPU device alone cannot be paired. Returns
    whether this process runs FMA-free."""
    if os.environ.get(FMA_FREE_ENV) == "1":
        return enable()
    if active():
        return True
    pair_forced_single_device()
    return False


def pair_forced_single_device() -> bool:
    """Raise an ``XLA_FLAGS`` host device count of 1 to 2 (the later flag wins) before JAX
    starts, so that :func:`paired` finds a second CPU device: a single CPU device with FMA on
    compiles one-partition programs, whose last bits differ from every multi-device program
    (module docstring). Both devices share the same cores.
    Returns whether the count was raised."""
    flags = os.environ.get("XLA_FLAGS", "")
    if xla_flags.last_value(flags, COUNT_FLAG) != "1" or xla_flags.backend_started():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} --{COUNT_FLAG}=2"
    log.info("determinism: XLA_FLAGS forces one CPU device; using 2 so it runs as a pair (FMA on)")
    return True


def paired(devices: list) -> list:
    """``devices`` for an executor: a single CPU device becomes the first two CPU devices of
    this process when programs may contract FMAs (not :func:`active`) and a second exists, so
    every CPU program goes through the multi-device pipeline (see the module docstring)."""
    if len(devices) != 1 or devices[0].platform != "cpu" or active():
        return devices
    import jax

    cpus = [d for d in jax.local_devices() if d.platform == "cpu"]
    if len(cpus) < 2:
        _warn_single_device()
        return devices
    first = devices[0]
    second = next(d for d in cpus if d.id != first.id)
    return [first, second]


@functools.cache
def _warn_single_device() -> None:
    log.warning(
        "determinism: one CPU device with FMA on, so results may differ in the last bits from "
        "multi-device runs (force CPU devices in XLA_FLAGS, or call determinism.enable() first)"
    )
