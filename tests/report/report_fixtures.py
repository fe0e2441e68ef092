"""Writers of small but real campaign directories in the documented format (docs/CAMPAIGN_FORMAT.md).

Real Parquet shards (pyarrow, the documented ``results`` schema), a real SQLite ledger in WAL
mode (tables batches / phases / meta), real JSON-line bench and scale records written by
``drivesim.bench.records.BenchRecord``, and a busy.json. Hostile text (a script tag) sits in a
family name, a source file name and an error message, so tests can check it is escaped.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivesim.pipeline import results

HOSTILE = "<script>alert(1)</script>"
FAMILIES = ("highway", "merge", HOSTILE)
POLICIES = ("idm", "idm[T=1.2,v0=30]")
HOSTILE_DIR = "camp <img src=x onerror=alert(2)>"
BATCH = 16
T0 = 1_700_000_000.0


def shard_table(batch_id: int, rng: np.random.Generator) -> pa.Table:
    """One batch: BATCH scenarios × 2 policies, some failed with a hostile error message."""
    rows = []
    for k in range(BATCH):
        sid = batch_id * BATCH + k
        family = FAMILIES[sid % len(FAMILIES)]
        failed = sid % 11 == 5
        source = f"/data/{HOSTILE}.xml" if family == HOSTILE else "synthetic"
        for pid, policy in enumerate(POLICIES):
            agents = int(rng.integers(4, 30))
            ok = not failed
            rows.append(
                dict(
                    scenario_id=sid,
                    family=family,
                    source=source,
                    name=f"{family}-{sid}",
                    num_agents=agents,
                    size_class=32,
                    policy_id=pid,
                    policy=policy,
                    status="ok" if ok else "failed",
                    error=None if ok else f"{source}: scenario {sid}: field 'velocity' is NaN {HOSTILE}",
                    ego_collided=bool(rng.random() < 0.1 + 0.1 * pid) if ok else None,
                    collision_step=int(rng.integers(0, 80)) if ok else None,
                    collision_pairs=int(rng.integers(0, 3)) if ok else None,
                    offroad=bool(rng.random() < 0.05) if ok else None,
                    progress_m=float(rng.normal(200 + 30 * pid, 20)) if ok else None,
                    min_ttc_s=float(rng.exponential(3.0))
                    if ok and rng.random() < 0.8
                    else (float("inf") if ok else None),
                    max_jerk=float(rng.gamma(2.0, 1.5)) if ok else None,
                    steps=80 if ok else None,
                    has_nan=False if ok else None,
                    log_div_mean=float("nan") if ok else None,
                    log_div_final=float("nan") if ok else None,
                    window_overflow=False if ok else None,
                    **_displacement(ok, family == HOSTILE, sid, rng),
                    batch_id=batch_id,
                    process_index=0,
                )
            )
    return pa.Table.from_pylist(rows, schema=results.SCHEMA)  # columns left out are null


def _displacement(ok: bool, logged: bool, sid: int, rng: np.random.Generator) -> dict:
    """ADE/FDE columns: growing with the horizon for the recorded (file) family, NaN for the
    synthetic ones, 8 s not reached in every other recorded row."""
    if not ok:
        return {}
    values = {}
    for h, scale in (("1s", 0.3), ("3s", 1.5), ("8s", 6.0)):
        reached = logged and (h != "8s" or sid % 2 == 0)
        values[f"ade_{h}"] = float(rng.gamma(2.0, scale / 2)) if reached else float("nan")
        values[f"fde_{h}"] = float(rng.gamma(2.0, scale)) if reached else float("nan")
    return values


def write_shard(root: Path, batch_id: int, seed: int = 0) -> Path:
    """Write results/part-BBBBBBBB.parquet atomically (tmp name + rename), as the pipeline does."""
    folder = root / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{batch_id:08d}.parquet"
    tmp = folder / f".part-{batch_id:08d}.parquet.tmp"
    pq.write_table(shard_table(batch_id, np.random.default_rng(seed + batch_id)), tmp)
    tmp.rename(path)
    return path


def write_ledger(root: Path, num_batches: int, failed_batch: int | None = None) -> None:
    """ledger.sqlite with the documented tables; phase times make compute the bottleneck."""
    con = sqlite3.connect(root / "ledger.sqlite")
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript("""
        CREATE TABLE batches(batch_id INTEGER PRIMARY KEY, scenario_ids TEXT, status TEXT, error TEXT,
                             attempts INTEGER, shard TEXT, updated_at REAL);
        CREATE TABLE phases(batch_id INTEGER PRIMARY KEY, num_scenarios INTEGER, size_class INTEGER,
                            wall_start REAL, wall_end REAL, load_s REAL, h2d_s REAL, compute_s REAL,
                            d2h_s REAL, write_s REAL, compiled_bytes INTEGER, device_bytes_in_use INTEGER,
                            device_peak_bytes INTEGER, host_rss_bytes INTEGER);
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);""")
    rng = np.random.default_rng(1)
    t = T0
    for b in range(num_batches):
        ids = json.dumps(list(range(b * BATCH, (b + 1) * BATCH)))
        if b == failed_batch:
            con.execute(
                "INSERT INTO batches VALUES (?,?,?,?,?,?,?)",
                (b, ids, "failed", f"XlaRuntimeError: {HOSTILE} out of memory", 2, None, t),
            )
            continue
        compute = 0.5 + 0.1 * rng.random()
        start, end = t, t + compute + 0.12
        t = end - 0.05
        con.execute(
            "INSERT INTO batches VALUES (?,?,?,?,?,?,?)",
            (b, ids, "done", None, 1, f"results/part-{b:08d}.parquet", end),
        )
        con.execute(
            "INSERT INTO phases VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                b,
                BATCH,
                32,
                start,
                end,
                0.05,
                0.01,
                compute,
                0.005,
                0.03,
                40_000_000,
                None,
                60_000_000 + b * 1000,
                500_000_000 + b * 2_000_000,
            ),
        )
    meta = dict(
        machine="testhost x86_64",
        program=json.dumps({"engine": "0123456789abcdef", "jax": "0.10.2", "device": f"Test {HOSTILE} CPU"}),
        devices=json.dumps(["cpu"] * 8),
        jax_version="0.10.2",
        backend="sharding",
        device_count="8",
        workload=f"synthetic:{HOSTILE} × 200",
        started_at=str(T0),
        finished_at=str(t),
    )
    con.executemany("INSERT INTO meta VALUES (?,?)", list(meta.items()))
    con.commit()
    con.close()


def rate(median: float) -> dict:
    return dict(
        median=median,
        p5=0.9 * median,
        p95=1.1 * median,
        ci_low=0.95 * median,
        ci_high=1.05 * median,
        mean=median,
        std=0.05 * median,
        n=5,
        ci_method="bootstrap",
    )


def write_bench(root: Path) -> None:
    """bench/*.jsonl (engine, pipeline, memory sweep) and scale/*.jsonl (strong scaling + Amdahl)."""
    from drivesim.bench.records import BenchRecord, append_records

    common = dict(
        workload="W32",
        backend="sharding",
        device_kind="cpu",
        jax_version="0.10.2",
        agents=32,
        steps=80,
        repeats=5,
    )
    bench = [
        BenchRecord(
            kind="engine",
            batch_size=4096,
            compile_s=2.5,
            scenarios_per_s=rate(900.0),
            agent_steps_per_s=rate(900.0 * 32 * 80),
            **common,
        ),
        BenchRecord(
            kind="pipeline",
            batch_size=256,
            scenarios_per_s=rate(700.0),
            bottleneck="compute",
            recommendation="add devices",
            **common,
        ),
    ]
    for size, thr in ((64, 300.0), (256, 700.0), (1024, 880.0), (4096, 900.0)):
        bench.append(
            BenchRecord(
                kind="memory",
                batch_size=size,
                scenarios_per_s=rate(thr),
                compiled_bytes=size * 40_000,
                host_rss_bytes=400_000_000 + size * 50_000,
                knee=size == 1024,
                **common,
            )
        )
    append_records(root / "bench" / "bench.jsonl", bench)
    s = 0.08
    scale = []
    for n in (1, 2, 4, 8):
        speedup = 1 / (s + (1 - s) / n)
        scale.append(
            BenchRecord(
                kind="scale",
                mode="strong",
                device_count=n,
                speedup=speedup,
                scenarios_per_s=rate(500 * speedup),
                efficiency=speedup / n,
                **common,
            )
        )
    scale.append(
        BenchRecord(kind="amdahl", serial_fraction=s, serial_fraction_std=0.01, ceiling=1 / s, **common)
    )
    append_records(root / "scale" / "scale.jsonl", scale)
    with (root / "scale" / "scale.jsonl").open("a") as fh:
        fh.write("{not json\n")


def write_busy(root: Path) -> None:
    (root / "profile").mkdir(exist_ok=True)
    devices = [{"device": f"TFRT_CPU_{i}", "busy_fraction": 0.6 + 0.04 * i} for i in range(8)]
    (root / "profile" / "busy.json").write_text(json.dumps({"devices": devices}))


def make_campaign(root: Path, num_batches: int = 6) -> Path:
    """A full campaign directory: results, ledger (one failed batch), bench, scale, profile."""
    root.mkdir(parents=True, exist_ok=True)
    for b in range(num_batches):
        if b != 2:
            write_shard(root, b)
    write_ledger(root, num_batches, failed_batch=2)
    write_bench(root)
    write_busy(root)
    return root
