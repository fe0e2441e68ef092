"""Campaign vs engine: end-to-end marginal campaign rate for a synthetic and a store source,
beside the engine rate of the same workload measured in the same run, and their ratio.

    .venv/bin/python benchmarks/campaign.py                 # W32, batch 4096, 1 vs 4 batches, 3 pairs
    .venv/bin/python benchmarks/campaign.py --quick         # batch 512 (smoke test)
    .venv/bin/python benchmarks/campaign.py --json          # one JSON object per source

The marginal rate is (extra scenarios) / (extra wall time) between the small and the large
campaign, so start-up and compile cancel. Goal: ratio >= 0.8 for both sources on the 2-core CPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drivesim.parallel import cpu_devices  # noqa: E402

cpu_devices.enable()  # the CLI's devices: DEVICES_PER_CORE CPU devices per usable core

from drivesim.bench.campaign import SOURCES, CampaignBenchConfig, run_campaign_bench  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch 512, 2 pairs")
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--small-batches", type=int, default=1)
    parser.add_argument("--large-batches", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--source", action="append", choices=SOURCES)
    parser.add_argument("--work-dir", default="runs/bench/campaign")
    parser.add_argument("--json", action="store_true", help="one JSON object per source on stdout")
    args = parser.parse_args(argv)
    config = CampaignBenchConfig(
        agents=args.agents,
        steps=args.steps,
        batch_size=512 if args.quick else args.batch_size,
        small_batches=args.small_batches,
        large_batches=args.large_batches,
        repeats=2 if args.quick else args.repeats,
        sources=tuple(args.source or SOURCES),
        work_dir=args.work_dir,
    )
    records = run_campaign_bench(config)
    for r in records:
        if args.json:
            print(r.to_json())
            continue
        c, e = r.extra["campaign_scenarios_per_s"], r.extra["engine_scenarios_per_s"]
        print(
            f"{r.extra['source']:>9}: campaign {c['median']:,.0f} scenarios/s "
            f"(min {c['min']:,.0f}, max {c['max']:,.0f}, {c['n']} pairs); engine {e['median']:,.0f} "
            f"(p5 {e['p5']:,.0f}, p95 {e['p95']:,.0f}); ratio {r.extra['ratio_to_engine']:.2f} (goal >= 0.8)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
