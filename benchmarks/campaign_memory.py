"""Host memory of a long campaign: resident memory after 10^6 scenarios must be within 10%
of that after 10^5 (small scenarios and few steps make 10^6 feasible).

    .venv/bin/python benchmarks/campaign_memory.py [--quick] [--json] [--store]

--quick runs 10^4 / 10^5 instead. RSS is sampled from the per-batch progress events.
--store runs the campaign over a scenario store of the same scenarios (written first, not timed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drivesim.parallel.memory import host_rss  # noqa: E402
from drivesim.pipeline.campaign import run_campaign  # noqa: E402
from drivesim.pipeline.config import CampaignConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^4 / 10^5 scenarios instead of 10^5 / 10^6.")
    parser.add_argument("--json", action="store_true", help="Print one JSON object.")
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=2048)
    parser.add_argument("--out", default=None, help="Campaign directory (default: a temporary one).")
    parser.add_argument("--store", action="store_true", help="Read the scenarios from a store.")
    args = parser.parse_args()
    small, large = (10**4, 10**5) if args.quick else (10**5, 10**6)
    out = Path(args.out or tempfile.mkdtemp(prefix="drivesim-bench-memory-"))
    samples: dict[int, int] = {}

    def progress(event) -> None:
        if event.kind != "batch":
            return
        for mark in (small, large):
            if mark not in samples and event.done >= mark:
                samples[mark] = host_rss()

    sources = ("synthetic:highway",)
    if args.store:
        sources = (f"store:{_write_store(out, large, args.agents, args.steps)}",)
    config = CampaignConfig(
        sources=sources,
        count=large,
        agents=args.agents,
        num_steps=args.steps,
        batch_size=args.batch_size,
        window_batches=4,
        out=str(out),
    )
    try:
        result = run_campaign(config, progress=progress)
        ratio = samples[large] / samples[small]
        record = dict(
            kind="memory",
            source=sources[0].split(":")[0],
            scenarios_small=small,
            scenarios_large=large,
            rss_small_bytes=samples[small],
            rss_large_bytes=samples[large],
            ratio=ratio,
            within_10_percent=abs(ratio - 1.0) <= 0.10,
            scenarios_per_s=result.scenarios_per_s,
        )
        if args.json:
            print(json.dumps(record))
        else:
            print(
                f"RSS after {small:,}: {samples[small] / 2**20:,.1f} MiB; after {large:,}: "
                f"{samples[large] / 2**20:,.1f} MiB; ratio {ratio:.3f} (goal within 10%); "
                f"{result.scenarios_per_s:,.0f} scenarios/s"
            )
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


def _write_store(out: Path, count: int, agents: int, steps: int) -> Path:
    """A store of ``count`` highway scenarios (the synthetic campaign's) in ``out``, generated
    on the device a block at a time as ``drivesim scenarios generate`` does."""
    from drivesim.scenarios.store import write_store
    from drivesim.scenarios.synthetic import FamilyConfig, generate_positions

    path = out / "store.parquet"
    write_store(path, generate_positions(["highway"], count, FamilyConfig(num_agents=agents, steps=steps)))
    return path


if __name__ == "__main__":
    main()
