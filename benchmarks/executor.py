"""Executor benchmarks: sharding overhead on forced CPU devices, and real multi-process speed-up.

1. overhead: W32 (4096 highway scenarios x 32 agents x 80 steps) through the sharding backend
   on 8 forced CPU devices vs on 1 device of the same process. The forced devices share the
   same cores, so the ratio measures the executor's overhead (goal: >= 0.95).
2. speedup: the same campaign in 2 processes pinned to cores 0 and 1 (``taskset``, joined by
   jax.distributed with gloo) vs 1 process pinned to core 0 (goal: >= 1.8x).

Prints one JSON object per measurement on stdout. ``--quick``: a tiny workload (checks that
the script runs; the figures mean nothing).

    .venv/bin/python benchmarks/executor.py [--quick] [--only overhead|speedup] [--repeats N]
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

FULL = dict(count=4096, agents=32, steps=80)
QUICK = dict(count=64, agents=8, steps=10)


def _throughput(executor, batch, policy, repeats: int) -> tuple[float, list[float]]:
    """Median scenarios/s of put + run + fetch (first run, the compile, dropped)."""
    executor.fetch(executor.run(executor.put(batch), policy))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        executor.fetch(executor.run(executor.put(batch), policy))
        times.append(time.perf_counter() - start)
    rows = int(batch.valid.shape[0])
    return rows / statistics.median(times), times


def overhead(size: dict, repeats: int) -> dict:
    """Throughput of 8 forced devices relative to 1 device, sharding backend."""
    from drivesim.core.policies import idm_policy
    from drivesim.core.types import SimConfig
    from drivesim.parallel.executor import Executor, ExecutorConfig
    from drivesim.parallel.worker import CampaignSpec, host_batch

    spec = CampaignSpec(**size)
    batch = host_batch(range(spec.count), spec)
    sim = SimConfig(num_steps=spec.steps)
    out = {"bench": "executor_overhead", **size, "repeats": repeats}
    for devices in (1, 8):
        ex = Executor(ExecutorConfig(backend="sharding", devices=devices), sim)
        rate, times = _throughput(ex, batch, idm_policy(), repeats)
        out[f"scenarios_per_s_{devices}dev"] = rate
        out[f"times_s_{devices}dev"] = times
    out["ratio_8_over_1"] = out["scenarios_per_s_8dev"] / out["scenarios_per_s_1dev"]
    out["goal"] = ">= 0.95"
    return out


def speedup(size: dict, repeats: int) -> dict:
    """Throughput of 2 processes on cores 0 and 1 relative to 1 process on core 0."""
    from drivesim.parallel.worker import CampaignSpec, LaunchConfig, launch

    spec = CampaignSpec(**size, repeats=repeats)
    out = {"bench": "executor_multiprocess_speedup", **size, "repeats": repeats}
    for procs, cpus in ((1, (0,)), (2, (0, 1))):
        with tempfile.TemporaryDirectory() as tmp:
            summaries = launch(
                spec, pathlib.Path(tmp), LaunchConfig(processes=procs, cpus=cpus, timeout_s=3600)
            )
        # a campaign step ends when the slowest process ends
        step = statistics.median(max(ts) for ts in zip(*(s["times_s"] for s in summaries), strict=True))
        out[f"scenarios_per_s_{procs}proc"] = spec.count / step
    out["speedup_2_over_1"] = out["scenarios_per_s_2proc"] / out["scenarios_per_s_1proc"]
    out["goal"] = ">= 1.8"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="Executor overhead and multi-process speed-up")
    parser.add_argument("--quick", action="store_true", help="tiny workload: check that it runs")
    parser.add_argument("--only", choices=("overhead", "speedup"), default=None)
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default 5, quick 2)")
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    repeats = args.repeats or (2 if args.quick else 5)
    if args.only in (None, "overhead"):
        print(json.dumps(overhead(size, repeats)), flush=True)
    if args.only in (None, "speedup"):
        print(json.dumps(speedup(size, repeats)), flush=True)


if __name__ == "__main__":
    main()
