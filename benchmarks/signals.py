"""Traffic signals: engine throughput of the signalled intersection against the plain
intersection and highway W32 (same run, interleaved repeats), and the red-light violation
boundary of the amber_light catalogue family for the constant and the IDM ego.

    python benchmarks/signals.py [--scenarios 4096] [--repeats 5] [--boundary] [--quick]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from drivesim.bench.families import family_batches, interleaved_throughput
from drivesim.core import SimConfig, default_policy_params, simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.pipeline.policy_names import policy_named
from drivesim.scenarios import pad_and_stack
from drivesim.scenarios.catalogue import make_record

AGENTS, STEPS = 32, 80
WORKLOADS = {  # name -> (family, FamilyConfig flags)
    "highway": ("highway", {}),
    "intersection": ("intersection", {}),
    "intersection+signals": ("intersection", {"signals": True}),
}


def throughput(count: int, repeats: int) -> dict:
    """Median and spread of agent-steps/s per workload (interleaved repeats after a warm-up)."""
    batches = family_batches(WORKLOADS, count, AGENTS, STEPS)
    return interleaved_throughput(batches, count, AGENTS, STEPS, repeats)[0]


def boundary(speeds=(8.33, 13.89, 19.44)) -> list[dict]:
    """Per speed and ego policy: the dist values [m] (amber onset -> line, 0..100 by 1 m) where
    the ego runs the red (amber at its default, 3.28 s), as [lo, hi] runs of the violating region."""
    dists = np.arange(0.0, 100.5, 1.0)
    steps = 120
    rows = []
    points = [(v, d) for v in speeds for d in dists]
    records = [make_record("amber_light", {"speed": v, "dist": d}, steps) for v, d in points]
    batch = pad_and_stack([r.scenario for r in records], num_agents=8)
    for policy in ("constant", "idm"):
        config = SimConfig(
            num_steps=steps, policy=policy_named(policy), search=SearchPlan(neighbours="all_pairs")
        )
        flags = np.asarray(simulate(batch, default_policy_params(config), config).red_light_violation)
        for v in speeds:
            mine = np.array([f for (vv, _d), f in zip(points, flags, strict=True) if vv == v])
            runs, start = [], None
            for d, f in zip(dists, mine, strict=True):
                if f and start is None:
                    start = d
                if not f and start is not None:
                    runs.append([float(start), float(d - 1.0)])
                    start = None
            if start is not None:
                runs.append([float(start), float(dists[-1])])
            rows.append(dict(policy=policy, speed=v, violating_dist_m=runs))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--boundary", action="store_true")
    parser.add_argument("--quick", action="store_true", help="only check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.scenarios, args.repeats = 16, 1
    print(json.dumps({"throughput": throughput(args.scenarios, args.repeats)}, indent=1))
    if args.boundary:
        print(json.dumps({"amber_boundary": boundary()}, indent=1))


if __name__ == "__main__":
    main()
