"""The host processor as the OS describes it: its model, and a key for its instruction sets.
Imports no JAX."""

from __future__ import annotations

import functools
import hashlib
import pathlib
import platform

CPUINFO = pathlib.Path("/proc/cpuinfo")
KEY_FIELDS = ("model name", "flags", "Features", "CPU part")  # x86 and Arm names


@functools.cache
def first_processor() -> tuple[str, ...]:
    """The stripped lines of the first processor in /proc/cpuinfo (it describes them all);
    empty where there is no such file."""
    if not CPUINFO.is_file():
        return ()
    lines = []
    with CPUINFO.open(errors="replace") as cpuinfo:
        for line in cpuinfo:
            if not line.strip():
                break
            lines.append(line.strip())
    return tuple(lines)


def model() -> str:
    """The processor model (Linux: /proc/cpuinfo's model name), else platform's word."""
    for line in first_processor():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def key() -> str:
    """12 hex digits of the processor's model and instruction-set flags (elsewhere than
    Linux: platform's words alone)."""
    lines = [platform.machine(), platform.processor()]
    lines += [line for line in first_processor() if line.startswith(KEY_FIELDS)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]
