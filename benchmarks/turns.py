"""Engine throughput of the turning intersection against highway and the straight intersection
at 32 agents, in the same run, with the share of scenarios that fall back to the all-pairs
search and the lateral acceleration of agents on turning and straight routes.

    .venv/bin/python benchmarks/turns.py --scenarios 1024 --repeats 5

Rates come from drivesim.bench.engine.run_engine (IDM ego, all metrics, warm-up dropped);
the ratio column divides each family's median by highway's (``--families`` adds others,
e.g. merge). Lateral acceleration is
|v * d(heading)/dt| over 80 steps of the first 64 scenarios (non-ego agents), split by whether
the agent's route is a turn (intersection_turns: route slot >= the straight lane count).
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from drivesim.bench.engine import EngineConfig, run_engine
from drivesim.bench.harness import HarnessConfig
from drivesim.bench.workloads import Workload, make_batch
from drivesim.core.policies import idm_policy
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import SimConfig

FAMILIES = ("highway", "intersection", "intersection_turns")  # highway first: the ratios' base


def lateral(batch, steps: int, with_turns: bool) -> dict:
    """Fallback share and max / p99 lateral acceleration [m/s^2] on turning and straight routes."""
    metrics, traj = jax.device_get(simulate_trajectory(batch, idm_policy(), SimConfig(num_steps=steps)))
    lat = np.abs(traj.speed[:, 1:] * np.diff(traj.heading, axis=1) / 0.1)
    both = traj.valid[:, 1:] & traj.valid[:, :-1]
    n = batch.agents.valid.shape[1]
    others = batch.agents.valid & (np.arange(n)[None] != batch.ego_index[:, None])
    straight_lanes = batch.road.lane_valid.sum(axis=1) - 8  # intersection_turns: 8 turn slots
    turning = others & (batch.agents.route >= straight_lanes[:, None]) & with_turns
    out = {"fallback": float(np.mean(metrics.window_overflow))}
    for name, mask in (("turn", turning), ("straight", others & ~turning)):
        values = lat[both & mask[:, None, :]]
        out[name] = (float(values.max()), float(np.percentile(values, 99))) if values.size else None
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--families", nargs="*", default=list(FAMILIES), help="highway is added first")
    args = parser.parse_args(argv)
    rows = {}
    for family in ["highway"] + [f for f in args.families if f != "highway"]:
        wl = Workload(scenarios=args.scenarios, agents=args.agents, family=family)
        batch = make_batch(wl)
        record = run_engine(EngineConfig(workload=wl, harness=HarnessConfig(repeats=args.repeats)), batch)
        rate = record.scenarios_per_s
        small = jax.tree_util.tree_map(lambda a: a[:64], batch)
        lat = lateral(small, 80, family == "intersection_turns") if family != "highway" else None
        rows[family] = (rate, record.compile_s, lat)
        print(family, rate, record.compile_s, rows[family][2], flush=True)
    base = rows["highway"][0]["median"]
    print(
        "| family | scenarios/s median (p5–p95) | vs highway | compile s | fallback "
        "| lateral accel max turn / straight [m/s²] |"
    )
    print("|---|---|---|---|---|---|")
    for family, (rate, compile_s, lat) in rows.items():
        fallback = "–" if lat is None else f"{lat['fallback']:.0%}"
        pairs = [] if lat is None else [lat["turn"], lat["straight"]]
        peaks = ["–" if v is None else f"{v[0]:.3g}" for v in pairs]
        accel = " / ".join(peaks) or "–"
        print(
            f"| {family} | {rate['median']:.0f} ({rate['p5']:.0f}–{rate['p95']:.0f}) "
            f"| {rate['median'] / base:.2f} | {compile_s:.1f} | {fallback} | {accel} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
