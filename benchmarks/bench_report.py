"""How long the dashboard takes to build, and how large it is, for a large campaign directory.

Writes a synthetic campaign (documented Parquet schema, SQLite ledger) of ROWS results in
BATCHES shards, then times ``load_campaign`` and ``render_dashboard``.

    .venv/bin/python benchmarks/bench_report.py --quick     # 50k rows, 200 batches
    .venv/bin/python benchmarks/bench_report.py             # 1M rows, 4000 batches
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivesim.pipeline.ledger import LEDGER_NAME, PHASE_COLUMNS, SCHEMA
from drivesim.report.dashboard import render_dashboard
from drivesim.report.data import load_campaign


def write_campaign(root: Path, rows: int, batches: int) -> None:
    """results/part-*.parquet and ledger.sqlite with ``rows`` results over ``batches`` batches."""
    rng = np.random.default_rng(0)
    per = rows // batches
    (root / "results").mkdir(parents=True)
    con = sqlite3.connect(root / LEDGER_NAME)
    con.executescript(SCHEMA)
    con.execute("INSERT INTO meta VALUES ('devices', ?)", (json.dumps(["cpu"]),))
    insert = (
        f"INSERT INTO phases (batch_id, {', '.join(PHASE_COLUMNS)}) "
        f"VALUES ({', '.join('?' * (1 + len(PHASE_COLUMNS)))})"
    )
    t = 1.7e9
    families = np.array(["highway", "merge", "intersection", "commonroad"])
    for b in range(batches):
        ok = rng.random(per) > 0.01
        table = pa.table(
            {
                "scenario_id": np.arange(b * per, (b + 1) * per, dtype=np.int64),
                "family": families[rng.integers(0, 4, per)],
                "source": ["synthetic"] * per,
                "num_agents": rng.integers(4, 64, per).astype(np.int32),
                "size_class": np.full(per, 64, np.int32),
                "policy_id": rng.integers(0, 8, per).astype(np.int32),
                "status": np.where(ok, "ok", "failed"),
                "error": pa.array([None if o else "bad field" for o in ok], pa.string()),
                "ego_collided": rng.random(per) < 0.1,
                "offroad": rng.random(per) < 0.02,
                "progress_m": rng.normal(200, 30, per).astype(np.float32),
                "min_ttc_s": rng.exponential(3, per).astype(np.float32),
                "max_jerk": rng.gamma(2, 1.5, per).astype(np.float32),
                "has_nan": np.zeros(per, bool),
            }
        )
        pq.write_table(table, root / "results" / f"part-{b:08d}.parquet")
        con.execute(  # readers take the shards the ledger's done batches name
            "INSERT INTO batches (batch_id, status, shard) VALUES (?, 'done', ?)",
            (b, f"results/part-{b:08d}.parquet"),
        )
        phases = dict(
            num_scenarios=per,
            size_class=64,
            wall_start=t,
            wall_end=t + 0.5,
            load_s=0.05,
            h2d_s=0.01,
            compute_s=0.4,
            d2h_s=0.01,
            write_s=0.03,
            compiled_bytes=10**7,
            device_bytes_in_use=None,
            device_peak_bytes=2 * 10**7,
            host_rss_bytes=5 * 10**8,
        )
        con.execute(insert, (b, *(phases[c] for c in PHASE_COLUMNS)))
        t += 0.45
    con.commit()
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50k rows in 200 batches")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=4000)
    args = parser.parse_args()
    rows, batches = (50_000, 200) if args.quick else (args.rows, args.batches)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "campaign"
        start = time.perf_counter()
        write_campaign(root, rows, batches)
        written = time.perf_counter()
        data = load_campaign(root)
        loaded = time.perf_counter()
        page = render_dashboard(data)
        rendered = time.perf_counter()
    print(
        json.dumps(
            {
                "rows": rows,
                "batches": batches,
                "write_s": round(written - start, 2),
                "load_s": round(loaded - written, 3),
                "render_s": round(rendered - loaded, 3),
                "html_mib": round(len(page.encode()) / 2**20, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
