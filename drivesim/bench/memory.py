"""Memory: compiled memory per batch, device memory in use / peak, host RSS, and the
batch-size sweep (throughput and memory against batch size, with the knee marked)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

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


def find_knee(sizes, throughputs, fraction: float = 0.9) -> int:
    """Index of the knee: the smallest batch size whose throughput reaches ``fraction`` of
    the best throughput (beyond it, larger batches cost memory for little gain)."""
    if len(sizes) != len(throughputs) or not sizes:
        raise ValueError("find_knee: sizes and throughputs must be non-empty and equally long")
    best = max(throughputs)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for i in order:
        if throughputs[i] >= fraction * best:
            return i
    return order[-1]


@dataclass(frozen=True)
class SweepConfig:
    """Batch sizes to try (ascending) for ``agents`` x ``steps`` highway scenarios."""

    sizes: tuple[int, ...] = (64, 256, 1024, 4096)
    agents: int = 32
    steps: int = 80
    repeats: int = 5
    warmup: int = 1


def sweep_batch_sizes(config: SweepConfig, log=None) -> list:
    """One ``kind="memory"`` BenchRecord per batch size (throughput, compiled/device/host
    memory); the knee is marked ``knee=True``."""
    from drivesim.bench.engine import EngineConfig, run_engine
    from drivesim.bench.harness import HarnessConfig
    from drivesim.bench.workloads import Workload, make_batch

    log = log or (lambda msg: print(msg, file=sys.stderr))
    sizes = sorted(config.sizes)
    harness = HarnessConfig(repeats=config.repeats, warmup=config.warmup)
    full = make_batch(Workload(scenarios=max(sizes), agents=config.agents, steps=config.steps))
    records = []
    for size in sizes:
        batch = jax.tree_util.tree_map(lambda leaf, n=size: leaf[:n], full)
        workload = Workload(scenarios=size, agents=config.agents, steps=config.steps)
        record = run_engine(EngineConfig(workload=workload, harness=harness), batch=batch, kind="memory")
        log(f"batch {size:>6}: {record.rate():,.0f} scenarios/s, compiled {record.compiled_bytes} B")
        records.append(record)
    knee = find_knee(sizes, [r.rate() for r in records])
    for i, record in enumerate(records):
        record.knee = i == knee
    return records
