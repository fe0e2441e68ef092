"""Campaigns on a local Ray cluster: strong scaling over pinned workers, Ray's cost per batch,
and recovery from a SIGKILLed worker.

    .venv/bin/python benchmarks/cluster.py            # 8192 W32 highway scenarios, batch 256, 3 repeats
    .venv/bin/python benchmarks/cluster.py --quick    # 512 W16 scenarios, 1 repeat (smoke test)
    .venv/bin/python benchmarks/cluster.py --json     # the records as JSON lines

1. Scaling (``drivesim.bench.cluster_scaling``, as ``drivesim scale --cluster ray``): the
   single-process campaign pinned to one core, then 1 and 2 Ray workers each pinned to a core;
   steady rates, efficiency = rate(N) / (N * rate(single)). Goals: >= 0.9 efficiency with 2
   workers, >= 0.95 of the single process with 1 worker.
2. Ray's cost per batch: batch / rate(1 worker) - batch / rate(single process), seconds.
3. Kill one worker: the same campaign on 2 pinned workers, once untouched and once with one
   worker SIGKILLed when a quarter of the batches are done; wall seconds of both (the
   difference is what the loss cost), and rows lost and duplicated (goal 0), and whether the
   results equal the untouched run's bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from drivesim.parallel import cpu_devices, determinism  # noqa: E402

cpu_devices.enable()  # the CLI's devices and FMA-free programs, passed on to the Ray workers
determinism.enable()

from drivesim.bench.cluster_scaling import PIN_ENV, ClusterScaleConfig, run_cluster_scaling  # noqa: E402
from drivesim.pipeline import results  # noqa: E402
from drivesim.pipeline.campaign import run_campaign  # noqa: E402


def _worker_of(directory: Path, batch_id: int) -> str:
    con = sqlite3.connect(f"{directory}/ledger.sqlite")
    try:
        return con.execute("SELECT worker FROM batches WHERE batch_id=?", (batch_id,)).fetchone()[0]
    finally:
        con.close()


def _rows(directory: Path):
    table = results.results_table(directory).drop(["batch_id", "process_index"])
    return table.sort_by([("scenario_id", "ascending"), ("policy_id", "ascending")])


def _same_bits(got, want) -> bool:
    """Every column equal, floats compared by their bits (so NaN equals NaN)."""
    if got.schema != want.schema or got.num_rows != want.num_rows:
        return False
    for name in got.column_names:
        a, b = got.column(name), want.column(name)
        if pa.types.is_floating(a.type):
            x, y = a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)
            if not np.array_equal(x.view(f"u{x.dtype.itemsize}"), y.view(f"u{y.dtype.itemsize}")):
                return False
        elif not a.equals(b):
            return False
    return True


def kill_one_worker(config: ClusterScaleConfig, work: Path) -> dict:
    """Untouched and one-worker-killed runs of the campaign on 2 pinned workers (see above)."""
    campaign = replace(config.campaign(work / "untouched"), cluster=config.cluster, workers=2)
    batches = -(-config.scenarios // config.batch_size)
    os.environ[PIN_ENV] = "1"
    run_campaign(replace(campaign, count=2 * config.batch_size, out=str(work / "kill-warm")))
    t0 = time.perf_counter()
    untouched = run_campaign(campaign)
    untouched_s = time.perf_counter() - t0
    out = work / "killed"
    seen: list[int] = []
    killed: dict = {}

    def kill_at_a_quarter(event):
        if event.kind != "batch":
            return
        seen.append(event.batch_id)
        if not killed and len(seen) >= batches // 4:
            name = _worker_of(out, event.batch_id)
            os.kill(int(name.rsplit(":", 1)[1]), signal.SIGKILL)
            killed.update(worker=name, at_s=time.perf_counter() - t1, batches_done=len(seen))

    t1 = time.perf_counter()
    result = run_campaign(replace(campaign, out=str(out)), progress=kill_at_a_quarter)
    killed_s = time.perf_counter() - t1
    got, want = _rows(out), _rows(Path(campaign.out))
    ids = set(got.column("scenario_id").to_pylist())
    return dict(
        mode="kill-one-worker",
        untouched_s=untouched_s,
        killed_s=killed_s,
        extra_s=killed_s - untouched_s,
        killed=killed,
        rows=got.num_rows,
        rows_lost=config.scenarios - len(ids),
        rows_duplicated=got.num_rows - len(ids),
        equal_to_untouched=_same_bits(got, want),
        done=(untouched.done, result.done),
        notes=list(result.notes),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--scenarios", type=int, default=8192)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", default="runs/bench/cluster.jsonl", help="JSON lines appended here")
    args = parser.parse_args(argv)
    import ray

    if args.quick:
        args.scenarios, args.batch_size, args.agents, args.steps, args.repeats = 512, 32, 16, 40, 1
    config = ClusterScaleConfig(
        scenarios=args.scenarios,
        batch_size=args.batch_size,
        agents=args.agents,
        steps=args.steps,
        repeats=args.repeats,
        max_workers=2,
    )
    store = 100 * 1024 * 1024
    ray.init(address="local", object_store_memory=store, include_dashboard=False, log_to_driver=False)
    try:
        scale = run_cluster_scaling(config)
        single, one = scale[0].rate(), scale[1].rate()
        summary = dict(
            mode="scaling",
            workload=config.workload,
            rates={f"{r.backend}-{r.device_count}": r.rate() for r in scale},
            steady_rates={f"{r.backend}-{r.device_count}": r.extra["steady_rates"] for r in scale},
            one_worker_vs_single=one / single,
            efficiency_2=scale[-1].efficiency,
            ray_cost_per_batch_s=config.batch_size / one - config.batch_size / single,
        )
        with tempfile.TemporaryDirectory(prefix="drivesim-cluster-kill-") as tmp:
            kill = kill_one_worker(config, Path(tmp))
    finally:
        ray.shutdown()
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as fh:
        for record in (summary, kill):
            fh.write(json.dumps(record | {"date": date}) + "\n")
    if args.json:
        print(json.dumps(summary))
        print(json.dumps(kill))
        return 0
    for name, rate in summary["rates"].items():
        runs = ", ".join(f"{x:,.0f}" for x in summary["steady_rates"][name])
        print(f"{name:>9}: {rate:,.0f} scenarios/s (runs {runs})")
    print(
        f"1 worker / single process: {summary['one_worker_vs_single']:.2f}; "
        f"efficiency with 2 workers: {summary['efficiency_2']:.2f}; "
        f"Ray's cost per batch: {summary['ray_cost_per_batch_s'] * 1e3:.1f} ms"
    )
    print(
        f"kill one worker at {kill['killed']['at_s']:.1f} s ({kill['killed']['batches_done']} batches done): "
        f"{kill['killed_s']:.1f} s against {kill['untouched_s']:.1f} s untouched; rows lost "
        f"{kill['rows_lost']}, duplicated {kill['rows_duplicated']}; equal to the untouched run: "
        f"{kill['equal_to_untouched']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
