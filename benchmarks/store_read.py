"""The read bound of a scenario store: its rows read alone, and read and decoded by the loader.

    .venv/bin/python benchmarks/store_read.py       # [--count 98304] [--batch-size 16384] [--repeats 5]

Writes a W32 highway store of ``count`` scenarios (as ``bench campaign --engine null --source
store`` does; not timed), then alternates, ``repeats`` times: ``read``, every row group read
by one Parquet reader (pyarrow, its own threads), the rows only; and ``loader``, the
campaign's loader stage alone (drivesim.pipeline.columnar: plan, read, decode and check every
batch of ``batch-size``, in this thread, nothing downstream). Prints one JSON object: bytes
per scenario, and per step microseconds per scenario (median, min, max) and scenarios/s at
the median. ``read`` is the bound the store's bytes set on a campaign of that store.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=98304)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import pyarrow.parquet as pq

    from drivesim.bench.host_ceiling import HostCeilingConfig, _write_store
    from drivesim.pipeline.columnar import planner_for
    from drivesim.pipeline.plan import plan_settings
    from drivesim.scenarios.sources import StoreSource

    work = Path(tempfile.mkdtemp(prefix="drivesim-store-read-"))
    try:
        path = work / "store.parquet"
        _write_store(HostCeilingConfig(), path, args.count)
        source = StoreSource(path)

        def read() -> None:
            file = pq.ParquetFile(path, pre_buffer=False)
            for first in range(0, file.num_row_groups, 4):
                file.read_row_groups(list(range(first, min(first + 4, file.num_row_groups))))

        def loader() -> None:
            run = work / "run"
            shutil.rmtree(run, ignore_errors=True)
            run.mkdir()
            settings = plan_settings(args.batch_size, 8, 1, 2)
            for _ in planner_for(source, run, settings, range(args.count))(threading.Event()):
                pass

        steps = {"read": read, "loader": loader}
        times: dict[str, list[float]] = {name: [] for name in steps}
        for step in steps.values():
            step()  # warm: page cache, imports
        for _ in range(args.repeats):
            for name, step in steps.items():
                start = time.perf_counter()
                step()
                times[name].append((time.perf_counter() - start) / args.count * 1e6)
        out: dict = {"scenarios": args.count, "bytes_per_scenario": round(path.stat().st_size / args.count)}
        for name, us in times.items():
            median = statistics.median(us)
            out[name] = {
                "us_per_scenario": [round(median, 2), round(min(us), 2), round(max(us), 2)],
                "scenarios_per_s": round(1e6 / median),
            }
        print(json.dumps(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
