"""Host memory of a long campaign: RSS per batch of a null-engine campaign (drivesim.bench.null_engine).

    .venv/bin/python benchmarks/host_rss.py               # [--count 10000000] [--batch-size 65536]

Runs one synthetic W32 campaign whose device program computes nothing (so 10^7 scenarios
take seconds), then reads the host RSS the writer recorded after each batch (ledger table
``phases``, ``host_rss_bytes``). Prints one JSON object: scenarios, wall seconds, batches and
the RSS in MiB of the first batch, the median, the largest and the last.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import tempfile
import time

from drivesim.parallel import cpu_devices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000_000)
    parser.add_argument("--batch-size", type=int, default=65536)
    args = parser.parse_args()
    cpu_devices.enable()
    from drivesim.bench.null_engine import null_engine
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig

    out = tempfile.mkdtemp(prefix="drivesim-host-rss-")
    config = CampaignConfig(
        sources=("synthetic:highway",), count=args.count, agents=32, batch_size=args.batch_size, out=out
    )
    start = time.perf_counter()
    run_campaign(config, engine=null_engine)
    wall = time.perf_counter() - start
    with sqlite3.connect(f"{out}/ledger.sqlite") as con:
        rss = [r[0] / 2**20 for r in con.execute("SELECT host_rss_bytes FROM phases ORDER BY batch_id")]
    shutil.rmtree(out, ignore_errors=True)
    print(
        json.dumps(
            {
                "scenarios": args.count,
                "wall_s": round(wall, 2),
                "batches": len(rss),
                "rss_mib": {
                    "first": round(rss[0]),
                    "median": round(statistics.median(rss)),
                    "max": round(max(rss)),
                    "last": round(rss[-1]),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
