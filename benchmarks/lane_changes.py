"""Lane changes: the highway (32 agents unless --agents) with MOBIL against the plain highway.

    .venv/bin/python benchmarks/lane_changes.py                  # 512 scenarios, 5 repeats
    .venv/bin/python benchmarks/lane_changes.py --quick          # 64 scenarios, 1 repeat (smoke test)

Variants: "base" (SimConfig defaults, no lane changes) and "wKeE" (window K, MOBIL decisions
every E steps), each optionally ":window_only" or ":all_pairs" (the neighbour search; e.g.
"w12e1000:window_only": the lane-change machinery without decisions or fallback). For each:
the median wall time of ``simulate`` on one CPU device (first call apart), agent-steps/s, the
fallback rate (share of scenarios simulated again with the all-pairs search) and collided
agents per scenario; then the time ratio base / variant, and lane changes per agent-minute of
the first variant with lane changes (64 scenarios, from the trajectory: an agent's nearest
lane centre changing).
"""

from __future__ import annotations

import argparse
import json
import time


def _config(variant: str):
    """SimConfig of a variant: "base" or "wKeE", optionally ":NEIGHBOURS" ("window_only",
    "all_pairs") for the neighbour search."""
    from drivesim.core.search_plan import SearchPlan
    from drivesim.core.types import LaneChangeConfig, SimConfig

    name, _, neighbours = variant.partition(":")
    config = SimConfig(num_steps=80)
    if name != "base":
        window, every = name[1:].split("e")
        lanes = LaneChangeConfig(decide_every=int(every))
        config = SimConfig(num_steps=80, lane_changes=lanes, search=SearchPlan(window=int(window)))
    return config.with_search(neighbours=neighbours) if neighbours else config


def lane_changes_per_agent_minute(host, config) -> float:
    """Nearest-lane changes per agent-minute over ``host`` (a host batch of highways)."""
    import jax
    import numpy as np

    from drivesim.core.policies import idm_policy
    from drivesim.core.trajectory import simulate_trajectory

    _m, tr = jax.device_get(simulate_trajectory(host, idm_policy(), config))
    axis = np.asarray(host.road.sort_axis, np.float64)
    normal = np.stack([-axis[:, 1], axis[:, 0]], -1)
    lane_lat = np.einsum("blk,bk->bl", np.asarray(host.road.centers, np.float64)[:, :, 0, :], normal)
    lat = np.asarray(tr.x) * normal[:, None, None, 0] + np.asarray(tr.y) * normal[:, None, None, 1]
    dist = np.abs(lat[..., None] - lane_lat[:, None, None, :])
    lane = np.argmin(np.where(np.asarray(host.road.lane_valid)[:, None, None, :], dist, np.inf), -1)
    ok = np.asarray(tr.valid)
    changes = ((lane[:, 1:] != lane[:, :-1]) & ok[:, 1:] & ok[:, :-1]).sum()
    return float(changes / (ok.sum() * config.dt / 60.0))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 scenarios, 1 repeat")
    parser.add_argument("--scenarios", type=int, default=512)
    parser.add_argument("--agents", type=int, default=32, help="agents per highway scenario")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variants", default="base,w6e5,w6e10,w12e5")
    args = parser.parse_args(argv)
    scenarios, repeats = (64, 1) if args.quick else (args.scenarios, args.repeats)
    import jax
    import numpy as np

    from drivesim.bench.workloads import Workload, make_batch
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate

    host = make_batch(Workload(scenarios=scenarios, agents=args.agents, steps=80))
    batch, policy = jax.device_put(host), idm_policy()
    variants = args.variants.split(",")
    results = {}
    for variant in variants:
        config = _config(variant)
        start = time.perf_counter()
        jax.block_until_ready(simulate(batch, policy, config))
        first = time.perf_counter() - start
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            metrics = jax.block_until_ready(simulate(batch, policy, config))
            times.append(time.perf_counter() - start)
        median = float(np.median(times))
        results[variant] = median
        row = dict(
            variant=variant,
            median_s=median,
            min_s=min(times),
            max_s=max(times),
            first_call_s=first,
            agent_steps_per_s=scenarios * args.agents * 80 / median,
            fallback_rate=float(np.mean(np.asarray(metrics.window_overflow))),
            agents_collided=float(np.mean(np.asarray(metrics.agents_collided))),
        )
        print(json.dumps(row), flush=True)
    if "base" in results:
        for variant in variants:
            ratio = results["base"] / results[variant]
            print(json.dumps({"variant": variant, "time_ratio_base_over_variant": ratio}))
    changing = [v for v in variants if not v.startswith("base")]
    if changing:
        small = jax.tree_util.tree_map(lambda leaf: leaf[:64], host)
        rate = lane_changes_per_agent_minute(small, _config(changing[0]))
        print(json.dumps({"variant": changing[0], "lane_changes_per_agent_minute": rate}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
