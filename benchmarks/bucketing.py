"""Ragged batching: pad every scenario to the largest size class vs bucket by size class.

Generates a mix of synthetic scenarios (merge + intersection, agent counts 4-128 drawn
log-uniformly, or uniformly with --mix uniform), batches them both ways, simulates every
batch with IDM traffic and reports simulated agent-steps, padding waste (padded slots /
real slots) and real-agent throughput (real agent-steps per second, compile excluded).

    .venv/bin/python benchmarks/bucketing.py --quick
    .venv/bin/python benchmarks/bucketing.py --scenarios 2048 --steps 80 --batch 64 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def make_records(count: int, mix: str, seed: int):
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    rng = np.random.default_rng(seed)
    records = []
    for i in range(count):
        family = ("merge", "intersection")[i % 2]
        n = None
        if mix == "uniform":
            n = int(rng.integers(4, 129))
        records.append(generate(family, i, FamilyConfig(num_agents=n, seed=seed)))
    return records


def pad_all(records, batch_size: int):
    """Every scenario padded to 128 agents (and common lane/point classes)."""
    from drivesim.scenarios.batching import BucketKey, HostBatch, bucket_key, stack_bucket

    keys = [bucket_key(r.scenario) for r in records]
    lanes, points = max(k.lanes for k in keys), max(k.points for k in keys)
    key = BucketKey(agents=128, lanes=lanes, points=points, log_steps=None)
    batches = []
    for start in range(0, len(records), batch_size):
        chunk = records[start : start + batch_size]
        batches.append(
            HostBatch(
                scenario=stack_bucket(chunk, key),
                records=chunk,
                positions=list(range(start, start + len(chunk))),
                size_class=128,
            )
        )
    return batches


def bucketed(records, batch_size: int):
    from drivesim.scenarios.batching import bucket_records

    # the campaign planner's grouping; last batch of a bucket: real scenarios only
    return bucket_records(records, batch_size, pad_partial=False)


def run(batches, steps: int, repeats: int) -> dict:
    """Simulate every batch (first pass compiles, not timed); median wall time of repeats."""
    import jax

    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.core.types import SimConfig
    from drivesim.scenarios.batching import padding_waste

    config = SimConfig(num_steps=steps)
    policy = idm_policy()
    device = [jax.device_put(b.scenario) for b in batches]
    for sc in device:  # warm-up: one compile per distinct shape
        jax.block_until_ready(simulate(sc, policy, config))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = [simulate(sc, policy, config) for sc in device]
        jax.block_until_ready(out)
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    records = [r for b in batches for r in b.records]
    real_steps = sum(min(int(r.scenario.episode_length), steps) * r.num_agents for r in records)
    simulated = sum(b.agent_slots for b in batches) * steps
    return {
        "batches": len(batches),
        "shapes": len({(b.batch_size, b.size_class) for b in batches}),
        "padding_waste": padding_waste(batches),
        "simulated_agent_steps": simulated,
        "real_agent_steps": real_steps,
        "seconds": seconds,
        "real_agent_steps_per_s": real_steps / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--mix",
        choices=("log", "uniform"),
        default="log",
        help="agent counts 4-128: log-uniform (family default) or uniform",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="small run to check the script works")
    parser.add_argument("--json", action="store_true", help="print one JSON object, nothing else")
    args = parser.parse_args()
    if args.quick:
        args.scenarios, args.steps, args.batch, args.repeats = 48, 10, 8, 1
    records = make_records(args.scenarios, args.mix, args.seed)
    padded = run(pad_all(records, args.batch), args.steps, args.repeats)
    bucket = run(bucketed(records, args.batch), args.steps, args.repeats)
    result = {
        "benchmark": "bucketing",
        "scenarios": args.scenarios,
        "steps": args.steps,
        "batch": args.batch,
        "mix": args.mix,
        "mean_agents": float(np.mean([r.num_agents for r in records])),
        "pad_to_128": padded,
        "bucketed": bucket,
        "agent_steps_reduction": padded["simulated_agent_steps"] / bucket["simulated_agent_steps"],
        "throughput_gain": bucket["real_agent_steps_per_s"] / padded["real_agent_steps_per_s"],
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{args.scenarios} scenarios ({args.mix} mix, mean {result['mean_agents']:.1f} agents), "
        f"{args.steps} steps, batch {args.batch}"
    )
    for name in ("pad_to_128", "bucketed"):
        r = result[name]
        print(
            f"  {name:11s} batches {r['batches']:4d}  shapes {r['shapes']:2d}  "
            f"waste {r['padding_waste']:6.2f}  "
            f"agent-steps {r['simulated_agent_steps']:>12,d}  {r['seconds']:8.3f} s  "
            f"{r['real_agent_steps_per_s'] / 1e6:8.2f} M real agent-steps/s"
        )
    print(
        f"  agent-steps cut {result['agent_steps_reduction']:.2f}x, "
        f"real-agent throughput {result['throughput_gain']:.2f}x"
    )


if __name__ == "__main__":
    main()
