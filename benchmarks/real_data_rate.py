"""Engine rate on the real datasets in ../shared/data against the synthetic highway W32.

    .venv/bin/python benchmarks/real_data_rate.py --rounds 3   # W32: 256 scenarios; the others as much work
    .venv/bin/python benchmarks/real_data_rate.py --quick      # 1 round, small batches (smoke test)
    .venv/bin/python benchmarks/real_data_rate.py --buckets classes   # each file in its size class

Every file of each dataset (WOMD GPUDrive JSON, Argoverse 2, CommonRoad) is imported as a
campaign imports it (recorded traffic replaying its log, and ``--mode idm``: IDM traffic from
the recorded start), its scenarios repeated to a batch of about the W32 batch's real
agent-steps, padded to one bucket (``--buckets classes``: each file's scenarios in a batch of
their own size class, as a campaign of many such files batches them; one call runs every
class's batch) and simulated with ``drivesim.simulate`` (IDM ego, 80 steps or the log's
length) on one device. The rate counts real agent-steps (each scenario's agents
times its simulated steps; padding slots are not counted). Each round times one call of every
workload, in alternating order; the first call (compile included) is reported apart. Prints
a JSON line per workload (median and range of agent-steps/s) and its ratio to W32 (median
of the per-round ratios, with their range).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
STEPS = 80


def _records(dataset: str, replay: bool) -> list:
    from drivesim.scenarios.av2 import load_av2
    from drivesim.scenarios.commonroad import ImportConfig, load_commonroad
    from drivesim.scenarios.womd import load_womd

    config = ImportConfig(replay=replay)
    if dataset == "womd":
        return [load_womd(p, config) for p in sorted((DATA / "womd").glob("*.json"))]
    if dataset == "av2":
        return [load_av2(p, config) for p in sorted((DATA / "av2").glob("scenario_*.parquet"))]
    return [load_commonroad(p, config) for p in sorted((DATA / "commonroad").glob("*.xml"))]


def _batches(records: list, copies: int, classes: bool) -> list:
    """Host batches of ``copies`` of every record: one padded to the records' largest bucket,
    or (``classes``) one per bucket key, each record in its own size class."""
    from drivesim.scenarios.batching import bucket_key, stack_bucket
    from drivesim.scenarios.remainders import merged_key

    if not classes:
        merged = merged_key(bucket_key(r.scenario) for r in records)
        return [stack_bucket([r for _ in range(copies) for r in records], merged)]
    groups: dict = {}
    for record in records:
        groups.setdefault(bucket_key(record.scenario), []).append(record)
    return [stack_bucket([r for _ in range(copies) for r in group], key) for key, group in groups.items()]


def _workloads(target_agent_steps: int, w32_scenarios: int, modes: list[str], classes: bool) -> dict:
    """name -> host batches of one call."""
    from drivesim.bench.workloads import Workload, make_batch

    out = {"W32": [make_batch(Workload(scenarios=w32_scenarios, agents=32, steps=STEPS))]}
    for dataset in ("womd", "av2", "commonroad"):
        for mode in modes:
            records = _records(dataset, replay=mode == "replay")
            per_round = sum(r.num_agents * STEPS for r in records)
            copies = max(1, round(target_agent_steps / per_round))
            out[f"{dataset}-{mode}"] = _batches(records, copies, classes)
    return out


def _agent_steps(batch, metrics) -> int:
    """Real agent-steps a call simulated: each scenario's valid agents x its steps."""
    import numpy as np

    agents = np.asarray(batch.agents.valid).sum(axis=-1)
    return int((agents * np.asarray(metrics.steps)).sum())


def _timed(run):
    import jax

    start = time.perf_counter()
    out = jax.block_until_ready(run())
    return time.perf_counter() - start, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round, W32 batch of 64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--w32-scenarios", type=int, default=256)
    parser.add_argument("--mode", choices=("replay", "idm", "both"), default="both")
    parser.add_argument("--buckets", choices=("one", "classes"), default="one", help="see the docstring")
    args = parser.parse_args(argv)
    rounds, w32 = (1, 64) if args.quick else (args.rounds, args.w32_scenarios)
    modes = ["replay", "idm"] if args.mode == "both" else [args.mode]
    import jax

    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.core.types import SimConfig

    config = SimConfig(num_steps=STEPS)
    workloads = _workloads(w32 * 32 * STEPS, w32, modes, args.buckets == "classes")
    placed = {name: [jax.device_put(b) for b in batches] for name, batches in workloads.items()}
    policy = idm_policy()
    runs = {name: (lambda bs=bs: [simulate(b, policy, config) for b in bs]) for name, bs in placed.items()}
    first, work = {}, {}
    for name, run in runs.items():
        first[name], metrics = _timed(run)
        pairs = zip(workloads[name], jax.device_get(metrics), strict=True)
        work[name] = sum(_agent_steps(batch, m) for batch, m in pairs)
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(rounds):
        for name in list(runs)[:: 1 if r % 2 == 0 else -1]:
            seconds, _ = _timed(runs[name])
            rates[name].append(work[name] / seconds)
    base = rates["W32"]
    for name, values in rates.items():
        ratios = [v / b for v, b in zip(values, base, strict=True)]
        batches = workloads[name]
        print(
            json.dumps(
                dict(
                    workload=name,
                    buckets=args.buckets,
                    scenarios=sum(int(b.agents.valid.shape[0]) for b in batches),
                    agent_slots=[int(b.agents.valid.shape[-1]) for b in batches],
                    lanes=[int(b.road.widths.shape[-1]) for b in batches],
                    points=[int(b.road.centers.shape[-2]) for b in batches],
                    agent_steps=work[name],
                    first_call_s=round(first[name], 2),
                    agent_steps_per_s=round(statistics.median(values)),
                    range=[round(min(values)), round(max(values))],
                    vs_w32=round(statistics.median(ratios), 3),
                    vs_w32_range=[round(min(ratios), 3), round(max(ratios), 3)],
                )
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
