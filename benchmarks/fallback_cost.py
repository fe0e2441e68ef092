"""What the exact fallback costs: ``simulate`` with and without it, per family, on any device.

    python benchmarks/fallback_cost.py --scenarios 4096 --repeats 5 --families highway intersection_turns

For each family (``NAME`` or ``NAME:AGENTS``, 32 agents by default) builds one batch on the
default device and times ``simulate`` with ``SimConfig(neighbours="window")`` (the default: the
window search, and the scenarios it could not prove exact simulated again with all pairs,
drivesim.core.fallback), with ``"window_only"`` (the same search, no fallback), and with
``neighbours="all_pairs", edge_search="all_lanes"`` (exact by itself: every pair and every
lane each step, no proof and no fallback; O(N^2) work in fewer, larger kernels). Wall-clock
medians of ``--repeats`` calls after one warm-up (each ends with ``block_until_ready``); the
share of flagged scenarios is what the fallback simulated again. On an accelerator the
fallback's chunk is a whole serial rollout, so its cost there is not proportional to the
share.
"""

from __future__ import annotations

import time

import jax
import numpy as np
from engine_variants import family_args  # beside this script

from drivesim.bench.workloads import Workload, make_batch
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.types import SimConfig

CONFIGS = {
    "window": {"neighbours": "window"},
    "window_only": {"neighbours": "window_only"},
    "all_pairs": {"neighbours": "all_pairs", "edge_search": "all_lanes"},
}


def family_batch(spec: str, scenarios: int, steps: int):
    """Batch of ``scenarios`` of family ``spec`` (NAME[:AGENTS]) on the default device: the
    scenarios `drivesim bench engine` times."""
    name, _, agents = spec.partition(":")
    return jax.device_put(make_batch(Workload(scenarios, int(agents or 32), steps, name)))


def timed(batch, config: SimConfig, repeats: int) -> tuple[float, float, int, float]:
    """(compile+first call s, median s, flagged scenarios, p5-p95 half-spread s) of ``simulate``."""
    policy = idm_policy()
    t0 = time.perf_counter()
    out = jax.block_until_ready(simulate(batch, policy, config))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(simulate(batch, policy, config))
        times.append(time.perf_counter() - t0)
    p5, p95 = np.percentile(times, [5, 95])
    return first, float(np.median(times)), int(np.sum(np.asarray(out.window_overflow))), (p95 - p5) / 2


def main() -> None:
    args = family_args(__doc__, "repeats")
    print("| family | with fallback ms | window only ms | fallback share | flagged | all pairs ms |")
    print("|---|---|---|---|---|---|")
    for spec in args.families:
        batch = family_batch(spec, args.scenarios, args.steps)
        configs = {name: SimConfig(num_steps=args.steps, **kw) for name, kw in CONFIGS.items()}
        rows = {s: timed(batch, config, args.count) for s, config in configs.items()}
        full, only = rows["window"][1], rows["window_only"][1]
        flagged = rows["window"][2]
        print(
            f"| {spec} | {full * 1e3:.2f} (±{rows['window'][3] * 1e3:.2f}) | {only * 1e3:.2f} "
            f"(±{rows['window_only'][3] * 1e3:.2f}) | {1 - only / full:.0%} | "
            f"{flagged} of {args.scenarios} ({flagged / args.scenarios:.1%}) | "
            f"{rows['all_pairs'][1] * 1e3:.2f} (±{rows['all_pairs'][3] * 1e3:.2f}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
