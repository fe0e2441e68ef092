"""Cost of the shard check: row count + SHA-256 of each shard after it is written (on the
writer thread) and the re-check of every shard at a campaign's start.

    .venv/bin/python benchmarks/shard_check.py [--shards 200] [--rows 128]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

from drivesim.pipeline.results import SCHEMA, write_shard
from drivesim.pipeline.verify import shard_check


def _table(rows: int) -> pa.Table:
    """A results table of ``rows`` rows with random values in every column."""
    rng = np.random.default_rng(0)
    cols = {}
    for f in SCHEMA:
        if pa.types.is_string(f.type):
            cols[f.name] = pa.array([f"s{i % 7}" for i in range(rows)], f.type)
        elif pa.types.is_boolean(f.type):
            cols[f.name] = pa.array(rng.random(rows) < 0.1)
        elif pa.types.is_floating(f.type):
            cols[f.name] = pa.array(rng.normal(size=rows).astype(np.float32))
        else:
            cols[f.name] = pa.array(rng.integers(0, 1000, rows), f.type)
    return pa.table(cols, schema=SCHEMA)


def _ms(values) -> str:
    p10, p90 = np.percentile(values, [10, 90]) * 1e3
    return f"median {statistics.median(values) * 1e3:.2f} ms (p10 {p10:.2f}, p90 {p90:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=200)
    parser.add_argument("--rows", type=int, default=128)
    args = parser.parse_args()
    table = _table(args.rows)
    root = pathlib.Path(tempfile.mkdtemp())
    write, check, paths = [], [], []
    for i in range(args.shards):
        t0 = time.perf_counter()
        paths.append(write_shard(table, root, i))
        t1 = time.perf_counter()
        shard_check(paths[-1])
        write.append(t1 - t0)
        check.append(time.perf_counter() - t1)
    t0 = time.perf_counter()
    for path in paths:
        shard_check(path)
    restart = time.perf_counter() - t0
    print(f"shard {paths[-1].stat().st_size} bytes, {args.rows} rows")
    ratio = statistics.median(check) / statistics.median(write)
    print(f"write {_ms(write)}; check {_ms(check)}; ratio {ratio:.3f}")
    print(f"start-up re-check of {args.shards} shards: {restart * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
