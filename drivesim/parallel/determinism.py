"""Bitwise-reproducible CPU programs whatever the device count: no fused multiply-add.

Why: XLA:CPU always lets LLVM contract a multiply and a dependent add into one FMA
instruction (``AllowFPOpFusion = Fast``, not configurable) wherever both end up in the same
kernel. A one-device program (``num_partitions=1``) goes through a different pipeline than a
multi-device one (the SPMD pipeline inlines calls and runs CSE before the main passes), so XLA
cuts the kernels differently, other multiply-adds get contracted, and a few results differ in
their last bits (seen as ``progress_m`` of 1 device vs 2, 3, 8; multi-device programs, whatever
their backend, chunk or process count, agree with each other).

Fix: cap XLA's instruction set at AVX (``--xla_cpu_max_isa=AVX``: 256-bit vectors, no FMA3).
Without contraction the results no longer depend on how XLA fuses the program, so 1 device,
N devices and the plain jitted engine agree bit for bit. The flag is read once, when JAX
starts its CPU backend: call :func:`enable` (or put :data:`FLAG` in ``XLA_FLAGS``) before
anything touches a device. It costs some arithmetic throughput on CPU; GPU programs are not
affected (and not covered by this guarantee). On non-x86 CPUs (aarch64: FMA is baseline) the
flag does not remove contraction.
"""

from __future__ import annotations

import logging
import os

from drivesim.parallel import xla_flags

log = logging.getLogger(__name__)

_NAME = "xla_cpu_max_isa"
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
