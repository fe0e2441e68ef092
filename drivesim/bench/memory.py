"""The batch-size sweep: throughput and memory against batch size, with the knee marked
(the readings themselves: drivesim.parallel.memory)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import jax


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
