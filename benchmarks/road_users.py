"""Road-user types: engine throughput of traffic with cyclists and pedestrians vs plain
highway traffic (same shapes, same process), and of plain highway traffic alone (run it
with PYTHONPATH pointing at two checkouts to measure what the type field costs).

    .venv/bin/python benchmarks/road_users.py --mode both      # highway W32 and its VRU mix
    .venv/bin/python benchmarks/road_users.py --mode highway   # works on checkouts without types

The VRU mix is the highway batch with every 4th agent slot (the ego excepted) made a cyclist
(1.8 m x 0.6 m, v0 = speed = 5.5 m/s) and every 16th a pedestrian (0.5 m x 0.6 m, v0 =
speed = 1.3 m/s) walking along its lane: the vehicles behind them brake and queue, so the
neighbour search, the type limits and the per-type metrics all do real work. The calls of
the two workloads are interleaved. Prints one JSON line per workload (median scenarios/s and
agent-steps/s over the repeats, min/max, every time) and, with --mode both, the mix's
throughput relative to highway per interleaved pair.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import jax
import numpy as np


def vru_mix(batch):
    """The highway host batch with cyclists and pedestrians mixed in (see module doc)."""
    from drivesim.core.road_users import CYCLIST_SIZE, CYCLIST_SPEED, PEDESTRIAN_SIZE, PEDESTRIAN_SPEED
    from drivesim.core.types import CYCLIST, PEDESTRIAN, replace

    ag, idm = batch.agents, batch.idm
    slot = np.arange(ag.x.shape[-1])[None, :]
    not_ego = slot != np.asarray(batch.ego_index)[:, None]
    cyc = not_ego & (slot % 4 == 1) & ag.valid
    ped = not_ego & (slot % 16 == 3) & ag.valid
    kind = np.where(cyc, CYCLIST, np.where(ped, PEDESTRIAN, 0)).astype(np.int32)
    pick = lambda c, p, v: np.where(cyc, c, np.where(ped, p, v)).astype(np.float32)  # noqa: E731
    agents = replace(
        ag,
        kind=kind,
        length=pick(CYCLIST_SIZE[0], PEDESTRIAN_SIZE[0], ag.length),
        width=pick(CYCLIST_SIZE[1], PEDESTRIAN_SIZE[1], ag.width),
        speed=pick(CYCLIST_SPEED, PEDESTRIAN_SPEED, ag.speed),
        accel=pick(0.0, 0.0, ag.accel),
    )
    return replace(batch, agents=agents, idm=replace(idm, v0=pick(CYCLIST_SPEED, PEDESTRIAN_SPEED, idm.v0)))


def timed(batches: dict, steps: int, repeats: int) -> dict:
    """Wall times of ``simulate`` on each of ``batches`` (same shapes: one compile), the
    calls interleaved (a, b, a, b, ...) so that load on a shared machine hits them alike;
    one warm-up call each. Returns {name: summary dict}."""
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.core.types import SimConfig

    config = SimConfig(num_steps=steps)
    policy = idm_policy()
    placed = {name: jax.device_put(batch) for name, batch in batches.items()}
    first, metrics, times = {}, {}, {name: [] for name in batches}
    for name, batch in placed.items():
        start = time.perf_counter()
        metrics[name] = jax.block_until_ready(simulate(batch, policy, config))
        first[name] = time.perf_counter() - start
    for _ in range(repeats):
        for name, batch in placed.items():
            start = time.perf_counter()
            jax.block_until_ready(simulate(batch, policy, config))
            times[name].append(time.perf_counter() - start)
    return {name: _summary(batches[name], steps, first[name], times[name], metrics[name]) for name in batches}


def _summary(batch, steps: int, first: float, times: list[float], metrics) -> dict:
    b, n = batch.agents.x.shape
    med = statistics.median(times)
    out = dict(
        scenarios=b,
        agents=n,
        steps=steps,
        first_call_s=round(first, 2),
        median_s=round(med, 4),
        min_s=round(min(times), 4),
        max_s=round(max(times), 4),
        times_s=[round(t, 4) for t in times],
        scenarios_per_s=round(b / med, 1),
        agent_steps_per_s=round(b * n * steps / med),
        collision_rate=float(np.mean(np.asarray(metrics.ego_collided))),
        fallback_rate=float(np.mean(np.asarray(metrics.window_overflow))),
    )
    if hasattr(metrics, "pedestrians_collided"):
        out["pedestrians_collided"] = int(np.sum(np.asarray(metrics.pedestrians_collided)))
        out["cyclists_collided"] = int(np.sum(np.asarray(metrics.cyclists_collided)))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("highway", "both"), default="both")
    parser.add_argument("--scenarios", type=int, default=1024)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from drivesim.bench.workloads import Workload, make_batch

    batch = make_batch(Workload(scenarios=args.scenarios, agents=args.agents, steps=args.steps))
    batches = {"highway": batch}
    if args.mode == "both":
        batches["highway+vru"] = vru_mix(batch)
    results = timed(batches, args.steps, args.repeats)
    for name, summary in results.items():
        print(json.dumps({"workload": name, **summary}), flush=True)
    if args.mode == "both":  # throughput of the mix relative to highway, per interleaved pair
        pairs = zip(results["highway"]["times_s"], results["highway+vru"]["times_s"], strict=True)
        ratios = sorted(h / v for h, v in pairs)
        print(json.dumps({"vru_vs_highway": dict(median=round(statistics.median(ratios), 3), all=ratios)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
