"""What padding lanes and lane points costs the engine: W32 highway as host records stack it
(the family's real lanes, 2 points) against the on-device generator's batch of the same ids,
cut or padded to other (lanes x points) layouts.

    .venv/bin/python benchmarks/lane_padding.py                  # 1024 scenarios, 2 rounds
    .venv/bin/python benchmarks/lane_padding.py --layouts 8x2 8x4 --scenarios 4096

Engine rate as ``drivesim bench engine`` measures it (every device, IDM ego, 80 steps).
Extra points repeat a lane's last point (zero-length segments), extra lanes are invalid, as
the batching pads them. Prints one line per (round, layout).
"""

from __future__ import annotations

import argparse
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.bench.engine import EngineConfig, run_engine
from drivesim.bench.harness import HarnessConfig
from drivesim.bench.workloads import Workload, make_batch
from drivesim.scenarios.families import FamilyConfig, generate_batch


def relaid(batch, lanes: int, points: int):
    """``batch`` (a host Scenario) with its roads cut or padded to ``lanes`` x ``points``."""
    road = batch.road
    centers = np.asarray(road.centers)[:, :lanes, :points]
    if centers.shape[2] < points:
        extra = np.repeat(centers[:, :, -1:], points - centers.shape[2], axis=2)
        centers = np.concatenate([centers, extra], axis=2)
    grow = lanes - centers.shape[1]
    widths, valid = np.asarray(road.widths)[:, :lanes], np.asarray(road.lane_valid)[:, :lanes]
    if grow > 0:
        centers = np.pad(centers, ((0, 0), (0, grow), (0, 0), (0, 0)))
        widths, valid = np.pad(widths, ((0, 0), (0, grow))), np.pad(valid, ((0, 0), (0, grow)))
    road = dataclasses.replace(road, centers=centers, widths=widths, lane_valid=valid)
    return dataclasses.replace(batch, road=road)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--layouts", nargs="*", default=["8x4", "8x2", "5x4"], help="LANESxPOINTS")
    args = parser.parse_args()
    workload = Workload(scenarios=args.scenarios)
    host = make_batch(workload)
    ids = jnp.arange(args.scenarios, dtype=jnp.int32)
    cfg = FamilyConfig(num_agents=workload.agents, steps=workload.steps)
    generated = jax.jit(lambda i: generate_batch("highway", 0, i, cfg, workload.agents))(ids)
    generated = jax.tree_util.tree_map(np.asarray, generated)
    layouts = {"host records": host, "generated": generated}
    for layout in args.layouts:
        lanes, points = (int(v) for v in layout.split("x"))
        layouts[f"generated as {layout}"] = relaid(generated, lanes, points)
    config = EngineConfig(workload=workload, harness=HarnessConfig(repeats=args.repeats), devices=None)
    for index in range(args.rounds):
        for name, batch in layouts.items():
            shape = np.asarray(batch.road.centers).shape[1:3]
            record = run_engine(config, batch=batch)
            layout = f"{shape[0]} lanes x {shape[1]} points"
            print(f"round {index + 1}  {name:22s} {layout}: {record.rate():,.0f} scenarios/s")


if __name__ == "__main__":
    main()
