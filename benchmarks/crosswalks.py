"""Pedestrians at crosswalks: engine throughput of ``intersection?pedestrians`` against the plain
intersection and highway W32 (same run, interleaved repeats after one warm-up each), with the
share of scenarios the exact fallback re-ran and the pedestrian collisions of the IDM traffic.

    python benchmarks/crosswalks.py [--scenarios 512] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from drivesim.bench.families import family_batches, interleaved_throughput

AGENTS, STEPS = 32, 80
WORKLOADS = {  # name -> (family, FamilyConfig flags)
    "highway": ("highway", {}),
    "intersection": ("intersection", {}),
    "intersection?pedestrians": ("intersection", {"pedestrians": True}),
    "intersection?signals,pedestrians": ("intersection", {"pedestrians": True, "signals": True}),
}


def throughput(count: int, repeats: int) -> dict:
    """Median and spread of agent-steps/s per workload, fallback share and pedestrian hits.
    Host records stacked by pad_and_stack (routes and points padded to the batch's largest:
    16 routes x 2 points with pedestrians, 8 x 2 without)."""
    batches = family_batches(WORKLOADS, count, AGENTS, STEPS)
    result, metrics = interleaved_throughput(batches, count, AGENTS, STEPS, repeats)
    for name, m in metrics.items():
        result[name] |= dict(
            fallback_share=float(np.mean(np.asarray(m.window_overflow))),
            pedestrians=int(np.sum(np.asarray(batches[name].agents.kind) == 1)),
            pedestrians_collided=int(np.sum(np.asarray(m.pedestrians_collided))),
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = throughput(args.scenarios, args.repeats)
    if args.json:
        print(json.dumps(result))
        return
    for name, r in result.items():
        print(
            f"{name:34s} {r['median_agent_steps_per_s'] / 1e6:6.2f} M agent-steps/s "
            f"({r['min'] / 1e6:.2f}-{r['max'] / 1e6:.2f}) {r['scenarios_per_s']:7.1f} scen/s "
            f"x{r['vs_highway']:.2f} highway, fallback {100 * r['fallback_share']:.1f} %, "
            f"pedestrians {r['pedestrians']} (collided {r['pedestrians_collided']})"
        )


if __name__ == "__main__":
    main()
