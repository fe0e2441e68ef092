"""Campaign benchmark: the end-to-end marginal rate of ``run_campaign`` against the engine.

The marginal rate is (extra scenarios) / (extra wall time) between a small and a large
campaign of the same workload (start-up, compile and the last batch's drain cancel), for a
synthetic source and for a scenario-store source holding the same scenarios. The engine rate
(``bench engine``: ``simulate`` on a device-resident batch of the same workload, every device)
is measured in the same process right before each source's campaigns, so the ratio
campaign / engine compares like with like on a loaded machine. Goal on the 2-core CPU:
ratio >= 0.8 for both sources (W32, batch 4096).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivesim.bench.records import BenchRecord

SOURCES = ("synthetic", "store")


@dataclass(frozen=True)
class CampaignBenchConfig:
    """agents x steps highway scenarios in batches of ``batch_size``; the small campaign has
    ``small_batches`` batches, the large ``large_batches``; ``repeats`` (small, large) pairs
    after one untimed warm-up campaign per source; engine: ``engine_repeats`` timed calls."""

    agents: int = 32
    steps: int = 80
    batch_size: int = 4096
    small_batches: int = 1
    large_batches: int = 4
    repeats: int = 3
    engine_repeats: int = 3
    loader_threads: int = 2
    sources: tuple[str, ...] = SOURCES
    work_dir: str = "runs/bench/campaign"


def _records(cfg: CampaignBenchConfig, count: int):
    from drivesim.scenarios.sources import SyntheticSource
    from drivesim.scenarios.synthetic import FamilyConfig

    source = SyntheticSource(
        ["highway"], count, 0, config=FamilyConfig(num_agents=cfg.agents, steps=cfg.steps)
    )
    return [source.load(p) for p in range(count)]


def timed_campaign(cfg, spec: str, count: int, out: Path, progress=None, engine=None) -> float:
    """Wall seconds of one fresh campaign of ``count`` scenarios of ``spec`` (directory removed
    first and after); ``cfg``: a bench config with agents, steps, batch_size and loader_threads;
    ``progress``, ``engine``: passed to run_campaign (default: none, the real engine)."""
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig
    from drivesim.pipeline.devices import DeviceRunner

    shutil.rmtree(out, ignore_errors=True)
    config = CampaignConfig(
        sources=(spec,),
        count=count,
        agents=cfg.agents,
        num_steps=cfg.steps,
        batch_size=cfg.batch_size,
        loader_threads=cfg.loader_threads,
        out=str(out),
    )
    start = time.perf_counter()
    result = run_campaign(config, progress, engine=engine or DeviceRunner)
    seconds = time.perf_counter() - start
    if result.done != count or result.failed:
        raise RuntimeError(f"campaign {spec}: {result.done}/{count} done, {result.failed} failed")
    shutil.rmtree(out, ignore_errors=True)
    return seconds


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


RunFn = Callable[[int], tuple[float, Any]]


def marginal_pairs(run: RunFn, small: int, large: int, repeats: int, log, label: str):
    """After one untimed ``run(small)`` (caches and compiles), ``repeats`` pairs of
    ``run(small)``, ``run(large)`` (each returns (wall seconds, anything)). Returns the marginal
    rates (large - small) / (t_large - t_small) of the pairs whose large campaign was slower,
    every pair's (t_small, t_large), and what ``run(large)`` returned in the counted pairs;
    RuntimeError naming ``label`` when no pair gave a rate."""
    run(small)
    rates, walls, kept = [], [], []
    for _ in range(repeats):
        t_small, _ = run(small)
        t_large, extra = run(large)
        walls.append((t_small, t_large))
        if t_large <= t_small:  # noise larger than the extra work: no rate from this pair
            log(f"  small {t_small:.2f} s, large {t_large:.2f} s: no marginal rate (large not slower)")
            continue
        rates.append((large - small) / (t_large - t_small))
        kept.append(extra)
        log(f"  small {t_small:.2f} s, large {t_large:.2f} s: marginal {rates[-1]:,.0f} scenarios/s")
    if not rates:
        raise RuntimeError(
            f"{label}: the large campaign was never slower than the small one; use more --large-batches"
        )
    return rates, walls, kept


def run_campaign_bench(
    cfg: CampaignBenchConfig, log: Callable[[str], None] | None = None
) -> list[BenchRecord]:
    """One record per source (kind "campaign"): marginal campaign rate, engine rate of the
    same workload measured in the same run, and their ratio (in ``extra``)."""
    from drivesim.bench.engine import EngineConfig, run_engine
    from drivesim.bench.harness import HarnessConfig
    from drivesim.bench.workloads import Workload
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.store import write_store

    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    work = Path(cfg.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    small, large = cfg.small_batches * cfg.batch_size, cfg.large_batches * cfg.batch_size
    specs = {"synthetic": "synthetic:highway"}
    records = None
    if "store" in cfg.sources:
        log(f"campaign bench: writing stores of {small} and {large} scenarios ...")
        records = _records(cfg, large)
        for count in (small, large):
            write_store(work / f"store-{count}.parquet", records[:count])
        specs["store"] = "store:{path}"
    batch = pad_and_stack([r.scenario for r in (records or _records(cfg, cfg.batch_size))[: cfg.batch_size]])
    workload = Workload(cfg.batch_size, cfg.agents, cfg.steps)
    harness = HarnessConfig(repeats=cfg.engine_repeats, warmup=1)
    out = []
    for kind in cfg.sources:
        # the engine right before each source's campaigns: the machine's load drifts
        log("campaign bench: engine on the same workload ...")
        engine = run_engine(EngineConfig(workload, harness, devices=None), batch=batch)
        engine_rate = engine.rate("scenarios_per_s")
        log(f"  engine {engine_rate:,.0f} scenarios/s")

        def spec(count, kind=kind):
            return specs[kind].format(path=work / f"store-{count}.parquet")

        def run(count: int, spec=spec) -> tuple[float, None]:
            return timed_campaign(cfg, spec(count), count, work / "run"), None

        log(f"campaign bench: {kind} source, {small} and {large} scenarios, {cfg.repeats} pairs ...")
        rates, walls, _ = marginal_pairs(run, small, large, cfg.repeats, log, f"campaign bench ({kind})")
        summary = spread(rates)
        ratio = summary["median"] / engine_rate
        log(f"  {kind}: campaign {summary['median']:,.0f} scenarios/s = {ratio:.2f}x engine")
        out.append(_record(cfg, kind, summary, engine, ratio, walls))
    return out


def _record(
    cfg: CampaignBenchConfig, kind: str, summary: dict, engine: BenchRecord, ratio, walls
) -> BenchRecord:
    return BenchRecord(
        kind="campaign",
        workload=f"W{cfg.agents}",
        backend=engine.backend,
        device_count=engine.device_count,
        device_kind=engine.device_kind,
        platform=engine.platform,
        jax_version=engine.jax_version,
        batch_size=cfg.batch_size,
        agents=cfg.agents,
        steps=cfg.steps,
        scenarios=cfg.large_batches * cfg.batch_size,
        repeats=cfg.repeats,
        scenarios_per_s=summary,
        extra={
            "source": kind,
            "campaign_scenarios_per_s": summary,
            "engine_scenarios_per_s": engine.scenarios_per_s,
            "ratio_to_engine": ratio,
            "goal_ratio": 0.8,
            "small_large_wall_s": walls,
            "small_scenarios": cfg.small_batches * cfg.batch_size,
            "large_scenarios": cfg.large_batches * cfg.batch_size,
        },
    )
