"""Campaign rate on a local Ray cluster (1 and 2 workers) against the embedded campaign.

    .venv/bin/python benchmarks/cluster.py            # 2048 W16 highway scenarios, batch 128, 3 repeats
    .venv/bin/python benchmarks/cluster.py --quick    # 512 scenarios, 1 repeat (smoke test)
    .venv/bin/python benchmarks/cluster.py --json     # one JSON object per mode
    .venv/bin/python benchmarks/cluster.py --pin      # also 1 and 2 workers pinned to a core each

Every mode runs the same campaigns into fresh directories, with a persistent compilation cache
warmed first (no mode compiles). The figure is the marginal rate: extra scenarios / extra
seconds between a 2-batch and the full campaign, each timed from its start event (for Ray,
after the workers are up), so each worker's one-off tracing and cache load cancel; ``wall``
also counts starting the workers. Ratios are taken inside one run (this machine is shared
and loaded).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drivesim.parallel import compile_cache, cpu_devices, determinism  # noqa: E402

cpu_devices.enable()  # the CLI's devices and FMA-free programs, passed on to the Ray workers
determinism.enable()

from drivesim.pipeline.campaign import run_campaign  # noqa: E402
from drivesim.pipeline.config import CampaignConfig  # noqa: E402


def _timed(config: CampaignConfig, out: Path) -> tuple[float, float]:
    """(campaign seconds from its start event, wall seconds including worker start-up)."""
    t0 = time.perf_counter()
    result = run_campaign(replace(config, out=str(out)))
    assert result.done == config.count, result
    return result.elapsed_s, time.perf_counter() - t0


def _measure(config: CampaignConfig, work: Path, name: str, repeats: int, small: int) -> dict:
    """Marginal rate (extra scenarios / extra seconds between a ``small`` and the full
    campaign: each worker's first-batch tracing and cache load cancel) and the full rate."""
    _timed(replace(config, count=small), work / f"{name}-warm")  # compiles what the mode has not yet
    marginal, rates, walls = [], [], []
    for k in range(repeats):
        t_small, _ = _timed(replace(config, count=small), work / f"{name}-small-{k}")
        t_full, wall = _timed(config, work / f"{name}-{k}")
        marginal.append((config.count - small) / max(t_full - t_small, 1e-9))
        rates.append(config.count / t_full)
        walls.append(wall)
    return dict(
        mode=name,
        marginal=statistics.median(marginal),
        marginals=marginal,
        rate=statistics.median(rates),
        wall_s=statistics.median(walls),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--count", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", default="runs/bench/cluster.jsonl", help="JSON lines appended here")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="also 1 and 2 workers pinned to one core each (DRIVESIM_PIN_WORKERS)",
    )
    args = parser.parse_args(argv)
    import os

    import ray

    count, repeats = (4 * args.batch_size, 1) if args.quick else (args.count, args.repeats)
    work = Path(tempfile.mkdtemp(prefix="drivesim-cluster-bench-"))
    os.environ["DRIVESIM_JAX_CACHE"] = str(work / "jax-cache")
    compile_cache.enable(work / "jax-cache")
    base = CampaignConfig(
        sources=("synthetic:highway",),
        count=count,
        agents=args.agents,
        num_steps=args.steps,
        batch_size=args.batch_size,
        out=str(work / "warm"),
    )
    run_campaign(replace(base, count=args.batch_size))  # compiles into the shared cache
    ray.init(address="local", num_cpus=2, object_store_memory=100 * 1024 * 1024, include_dashboard=False)
    try:
        small = 2 * args.batch_size
        records = [_measure(base, work, "embedded", repeats, small)]
        modes = [(1, False), (2, False)] + ([(1, True), (2, True)] if args.pin else [])
        for workers, pinned in modes:
            os.environ["DRIVESIM_PIN_WORKERS"] = "1" if pinned else "0"
            config = replace(base, cluster="ray", workers=workers)
            name = f"ray-{workers}" + ("-pinned" if pinned else "")
            records.append(_measure(config, work, name, repeats, small))
    finally:
        ray.shutdown()
    embedded = records[0]["marginal"]
    by_mode = {r["mode"]: r for r in records}
    for r in records:
        r |= dict(ratio_to_embedded=r["marginal"] / embedded, count=count, batch_size=args.batch_size)
    if "ray-2-pinned" in by_mode:  # strong scaling: 2 pinned workers against 1
        one, two = by_mode["ray-1-pinned"]["marginal"], by_mode["ray-2-pinned"]["marginal"]
        by_mode["ray-2-pinned"]["efficiency"] = two / (2 * one)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a") as fh:  # every record, whatever is printed
        for r in records:
            fh.write(json.dumps(r | {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}) + "\n")
    for r in records:
        if args.json:
            print(json.dumps(r))
        else:
            runs = ", ".join(f"{x:,.0f}" for x in r["marginals"])
            print(
                f"{r['mode']:>9}: marginal {r['marginal']:,.0f} scenarios/s (runs {runs}), "
                f"{r['ratio_to_embedded']:.2f} x embedded; whole campaign {r['rate']:,.0f}/s, "
                f"wall {r['wall_s']:.1f} s with worker start-up"
            )
            if "efficiency" in r:
                print(f"           strong-scaling efficiency, 2 pinned workers vs 1: {r['efficiency']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
