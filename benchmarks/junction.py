"""The junction zone's capacity: intersection throughput and fallback share per capacity.

    .venv/bin/python benchmarks/junction.py                       # 32 agents, 1024 scenarios
    .venv/bin/python benchmarks/junction.py --agents 128 --scenarios 256 --capacities 8 12 24

For each ``SearchPlan.junction_capacity`` it times ``simulate`` (IDM ego, one device, 80 steps)
on the synthetic intersection and reports the share of scenarios the exact all-pairs
fallback re-ran (a step with more agents in the zone than the capacity). Highway, which has
no crossing routes, is timed first and last in the same run as the reference. Prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from drivesim.bench.workloads import Workload, make_batch
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.types import SimConfig


def rate(batch, config: SimConfig, repeats: int) -> tuple[float, float, float, float]:
    """(median scenarios/s, min, max over ``repeats`` timed calls after one warm-up) and the
    fallback share of the batch."""
    out = jax.block_until_ready(simulate(batch, idm_policy(), config))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(simulate(batch, idm_policy(), config))
        times.append(time.perf_counter() - start)
    count = batch.valid.shape[0]
    rates = count / np.asarray(times)
    return (
        float(np.median(rates)),
        float(rates.min()),
        float(rates.max()),
        float(np.mean(out.window_overflow)),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--scenarios", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--capacities", type=int, nargs="*", default=[4, 6, 8, 12, 16])
    args = parser.parse_args(argv)
    batches = {
        f: jax.device_put(make_batch(Workload(scenarios=args.scenarios, agents=args.agents, family=f)))
        for f in ("highway", "intersection")
    }
    base = SimConfig(num_steps=80)
    runs = [("highway", base)]
    runs += [("intersection", base.with_search(junction_capacity=c)) for c in args.capacities]
    runs += [("highway", base)]
    rows = [
        (family, config.search.junction_capacity, *rate(batches[family], config, args.repeats))
        for family, config in runs
    ]
    reference = np.median([r[2] for r in rows if r[0] == "highway"])
    print("| workload | capacity | scenarios/s median (min–max) | vs highway | fallback |")
    print("|---|---|---|---|---|")
    for family, capacity, median, low, high, fallback in rows:
        cap = str(capacity) if family == "intersection" else "–"
        print(
            f"| {family}-{args.agents} | {cap} | {median:,.0f} ({low:,.0f}–{high:,.0f}) "
            f"| {median / reference:.2f} | {fallback:.1%} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
