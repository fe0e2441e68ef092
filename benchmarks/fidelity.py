"""Fidelity of the engine against a float64 all-pairs reference, per family and agent count.

    .venv/bin/python benchmarks/fidelity.py                  # 64 scenarios per family/size
    .venv/bin/python benchmarks/fidelity.py --scenarios 16   # quicker

For highway, merge, intersection and intersection_turns at 32 and 128 agents (IDM and constant-speed egos: the
latter runs into traffic, so collisions occur), and the CommonRoad logs in
../shared/data/commonroad (IDM mode: agents present at step 0 are simulated, later ones
replayed), it traces every step (drivesim.core.trace) and counts leader misses, leader
false alarms, collision misses and false alarms (agent-steps) against the brute force of
drivesim.bench.fidelity, for the window search alone ("window_only") and for what the
engine delivers ("window": the scenarios not proven exact are simulated with the
all-pairs search). Also: share of scenarios that fall back, the share of agents braking
harder than -4 m/s^2 at step 0, and CommonRoad IDM agent-steps off the mapped road.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

from drivesim.bench.fidelity import batch_counts, delivered_traces, hard_braking_share, offroad_agent_steps
from drivesim.core.policies import idm_policy
from drivesim.core.types import SimConfig
from drivesim.pipeline.policy_names import policy_named
from drivesim.scenarios.batching import pad_and_stack

DATA = pathlib.Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "commonroad"


def synthetic_batch(family: str, agents: int, count: int, steps: int):
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    cfg = FamilyConfig(num_agents=agents, steps=steps)
    return pad_and_stack([generate(family, i, cfg).scenario for i in range(count)], num_agents=agents)


def commonroad_batch(folder: pathlib.Path):
    from drivesim.scenarios.commonroad import load_commonroad

    records = [load_commonroad(p) for p in sorted(folder.glob("*.xml"))]
    size = max(r.scenario.num_agents for r in records)
    return pad_and_stack([r.scenario for r in records], num_agents=size)


def measure(name: str, batch, steps: int, policy: str = "idm") -> dict:
    config = SimConfig(num_steps=steps, policy=policy_named(policy))
    win, got, flag = delivered_traces(batch, idm_policy() if policy == "idm" else None, config)
    valid = np.asarray(batch.valid)
    totals = {"window_only": batch_counts(win, valid), "window": batch_counts(got, valid)}
    row = {
        "case": f"{name} ({policy} ego)",
        "scenarios": int(valid.sum()),
        "fallback": float(flag[valid].mean()),
    }
    row |= {"only_" + k: v for k, v in vars(totals["window_only"]).items()}
    row |= vars(totals["window"])
    row["hard_braking_step0"] = hard_braking_share(got)
    road = batch.road
    row["idm_offroad_agent_steps"] = offroad_agent_steps(
        got, np.asarray(road.centers), np.asarray(road.widths), np.asarray(road.lane_valid)
    )
    return row


def markdown(rows: list[dict]) -> str:
    head = (
        "| case | scenarios | fallback | leader relations | leader misses (window only) | "
        "leader misses | leader false alarms | collision agent-steps | collision misses (window only) | "
        "collision misses | collision false alarms | pair-count errors | borderline | "
        "step-0 accel < -4 | IDM agent-steps off road |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['scenarios']} | {r['fallback']:.1%} | {r['leader_relations']:,} | "
            f"{r['only_leader_misses']} | {r['leader_misses']} | {r['leader_false']} | "
            f"{r['collision_agent_steps']:,} | {r['only_collision_misses']} | {r['collision_misses']} | "
            f"{r['collision_false']} | {r['pair_count_errors']} | {r['borderline']} | "
            f"{r['hard_braking_step0']:.1%} | {r['idm_offroad_agent_steps']} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=64)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--agents", type=int, nargs="*", default=[32, 128])
    parser.add_argument(
        "--families", nargs="*", default=["highway", "merge", "intersection", "intersection_turns"]
    )
    parser.add_argument("--policies", nargs="*", default=["idm", "constant"], help="ego policies")
    parser.add_argument("--commonroad", type=pathlib.Path, default=DATA, help="CommonRoad XML folder")
    args = parser.parse_args(argv)
    rows = []
    for family in args.families:
        for agents in args.agents:
            batch = synthetic_batch(family, agents, args.scenarios, args.steps)
            for policy in args.policies:
                rows.append(measure(f"{family}-{agents}", batch, args.steps, policy))
                print(rows[-1], file=sys.stderr, flush=True)
    if args.commonroad.is_dir() and any(args.commonroad.glob("*.xml")):
        rows.append(measure("commonroad, IDM mode", commonroad_batch(args.commonroad), args.steps))
        print(rows[-1], file=sys.stderr, flush=True)
    print(markdown(rows))
    bad = sum(
        r["leader_misses"] + r["leader_false"] + r["collision_misses"] + r["collision_false"] for r in rows
    )
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
