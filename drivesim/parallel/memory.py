"""Memory readings: what a compiled program needs, device memory in use / peak, host RSS.

One definition of each, used by the executor (chunk="auto"), the campaign ledger, the live
view and the benchmarks.
"""

from __future__ import annotations

import os

import jax


def compiled_bytes(compiled) -> int | None:
    """Bytes a compiled executable needs per call (arguments + outputs + temporaries -
    aliased), from ``memory_analysis()``; None where the backend does not report it."""
    try:
        ma = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 - some backends raise instead of returning None
        return None
    if ma is None:
        return None
    total = ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
    return int(total - ma.alias_size_in_bytes + ma.generated_code_size_in_bytes)


def device_memory() -> tuple[int | None, int | None]:
    """(bytes in use summed over local devices, largest per-device peak) from
    ``memory_stats()``; (None, None) where it does not exist (CPU)."""
    in_use, peak, seen = 0, 0, False
    for device in jax.local_devices():
        try:
            stats = device.memory_stats()
        except Exception:  # noqa: BLE001
            stats = None
        if not stats:
            continue
        seen = True
        in_use += int(stats.get("bytes_in_use", 0))
        peak = max(peak, int(stats.get("peak_bytes_in_use", stats.get("bytes_in_use", 0))))
    return (in_use, peak) if seen else (None, None)


def host_rss() -> int | None:
    """Resident set size of this process in bytes (psutil, else /proc, else None)."""
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:
        pass
    try:
        with open(f"/proc/{os.getpid()}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def memory_fields(compiled=None) -> dict:
    """The memory fields of a BenchRecord, measured now."""
    in_use, peak = device_memory()
    return {
        "compiled_bytes": compiled_bytes(compiled) if compiled is not None else None,
        "device_bytes_in_use": in_use,
        "device_peak_bytes": peak,
        "host_rss_bytes": host_rss(),
    }
