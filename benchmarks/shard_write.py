"""Result-shard write time by Parquet encoding: one batch of results written to memory.

    .venv/bin/python benchmarks/shard_write.py            # [--rows 65536] [--repeats 7]

Prints one JSON object: per encoding (pyarrow's default, the one drivesim writes, no
dictionary and no statistics) the median and p5-p95 write time [ms] and the bytes written,
for a table of the results schema with plausible values (two families, ~40 metric columns).
"""

from __future__ import annotations

import argparse
import io
import json
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivesim.pipeline.results import SCHEMA, WRITE_OPTIONS

REPEATED = ("family", "source", "policy", "status")  # string columns with a few values each


def results_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    columns = {}
    for f in SCHEMA:
        if pa.types.is_string(f.type):
            names = np.where(rng.random(rows) < 0.5, "highway", "merge").tolist()
            columns[f.name] = pa.array(names if f.name in REPEATED else [None] * rows, type=f.type)
        elif pa.types.is_boolean(f.type):
            columns[f.name] = pa.array(rng.random(rows) < 0.1)
        elif pa.types.is_floating(f.type):
            columns[f.name] = pa.array((rng.random(rows) * 300).astype(np.float32))
        else:
            columns[f.name] = pa.array(rng.integers(0, 80, rows).astype(f.type.to_pandas_dtype()))
    return pa.table(columns, schema=SCHEMA)


def timed(table: pa.Table, repeats: int, **options) -> dict:
    """Write time and bytes of ``table`` with ``options`` (pyarrow's default compression,
    snappy, unless they name one)."""
    options = {"compression": "snappy"} | options
    times, size = [], 0
    for _ in range(repeats):
        sink = io.BytesIO()
        t0 = time.perf_counter()
        pq.write_table(table, sink, **options)
        times.append((time.perf_counter() - t0) * 1e3)
        size = sink.tell()
    p5, p50, p95 = np.percentile(times, [5, 50, 95])
    return {
        "median_ms": round(float(p50), 1),
        "p5_ms": round(float(p5), 1),
        "p95_ms": round(float(p95), 1),
        "bytes": size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    table = results_table(args.rows)
    report = {
        "rows": args.rows,
        "pyarrow_default": timed(table, args.repeats),
        "drivesim": timed(table, args.repeats, **WRITE_OPTIONS),
        "no_dictionary_no_statistics": timed(
            table, args.repeats, use_dictionary=False, write_statistics=False
        ),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
