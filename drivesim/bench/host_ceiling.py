"""Host-ceiling benchmark: the campaign machinery's rate with an engine that costs nothing.

Runs real campaigns (``run_campaign``: planning, sources, prefetch, transfer, result tables,
Parquet shards, shard checks, ledger, progress) with :class:`NullDeviceRunner` as the device
side, for a synthetic source and a scenario store of the same workload. The rate is marginal:
(extra scenarios) / (extra wall seconds) between a small and a large campaign, so start-up
and the last batch's drain cancel. Per stage, the large campaigns' seconds per scenario, in
microseconds: ``load`` (plan, read or generate, pad, stack: loader thread), ``h2d`` (device
prefetch thread), ``compute`` and ``d2h`` (main thread), ``encode``, ``write`` (Parquet and
fsync), ``hash`` (shard check) and ``ledger`` (writer thread); ``marginal``: 1 / the marginal
rate; ``other``: marginal minus the busiest thread's stages (what no stage timer saw: queues,
hand-offs between threads, the progress callback). Stages of different threads overlap, so
they add up to more than the marginal time when the pipeline works.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from drivesim.bench.campaign import marginal_pairs, spread, timed_campaign
from drivesim.bench.records import BenchRecord

SOURCES = ("synthetic", "store")
STAGES = ("load", "h2d", "compute", "d2h", "encode", "write", "hash", "ledger")
THREADS = (("load",), ("h2d",), ("compute", "d2h"), ("encode", "write", "hash", "ledger"))


@dataclass(frozen=True)
class HostCeilingConfig:
    """agents x steps highway scenarios in batches of ``batch_size``; the small campaign has
    ``small_batches`` batches, the large ``large_batches``; ``repeats`` (small, large) pairs
    after one untimed warm-up campaign per source."""

    agents: int = 32
    steps: int = 80
    batch_size: int = 16384
    small_batches: int = 1
    large_batches: int = 6
    repeats: int = 3
    loader_threads: int = 2
    sources: tuple[str, ...] = SOURCES
    work_dir: str = "runs/bench/host"


class _Stages:
    """Sums of the per-batch phases a campaign reports through its progress callback."""

    def __init__(self):
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self.scenarios = 0

    def __call__(self, event) -> None:
        phases = event.phases
        if event.kind != "batch" or phases is None:
            return
        self.scenarios += event.num_scenarios
        parquet = phases.write_s - phases.encode_s - phases.check_s
        for stage, value in (
            ("load", phases.load_s),
            ("h2d", phases.h2d_s),
            ("compute", phases.compute_s),
            ("d2h", phases.d2h_s),
            ("encode", phases.encode_s),
            ("write", parquet),
            ("hash", phases.check_s),
            ("ledger", phases.ledger_s),
        ):
            self.seconds[stage] += value


def _campaign(cfg: HostCeilingConfig, spec: str, count: int, out: Path) -> tuple[float, _Stages]:
    """Wall seconds and stage sums of one fresh null-engine campaign."""
    from drivesim.bench.null_engine import null_engine

    stages = _Stages()
    return timed_campaign(cfg, spec, count, out, progress=stages, engine=null_engine), stages


def _write_store(cfg: HostCeilingConfig, path: Path, count: int) -> None:
    from drivesim.scenarios.store import write_store
    from drivesim.scenarios.synthetic import FamilyConfig, generate_positions

    config = FamilyConfig(num_agents=cfg.agents, steps=cfg.steps)
    write_store(path, generate_positions(["highway"], count, config, 0), row_group_size=4096)


def breakdown(stages: _Stages, rate: float) -> dict[str, float]:
    """Microseconds per scenario of each stage, of the marginal rate and ``other`` (module
    docstring)."""
    per = 1e6 / max(stages.scenarios, 1)
    out = {stage: stages.seconds[stage] * per for stage in STAGES}
    out["marginal"] = 1e6 / rate
    busiest = max(sum(out[s] for s in thread) for thread in THREADS)
    out["other"] = max(0.0, out["marginal"] - busiest)
    return out


def run_host_ceiling(cfg: HostCeilingConfig, log: Callable[[str], None] | None = None) -> list[BenchRecord]:
    """One record per source (kind "campaign", ``extra.engine`` = "null"): the marginal
    campaign rate and the large campaigns' stage breakdown."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    work = Path(cfg.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    small, large = cfg.small_batches * cfg.batch_size, cfg.large_batches * cfg.batch_size
    specs = {"synthetic": "synthetic:highway"}
    if "store" in cfg.sources:
        log(f"host ceiling: writing stores of {small} and {large} scenarios ...")
        for count in (small, large):
            _write_store(cfg, work / f"store-{count}.parquet", count)
        specs["store"] = "store:{path}"
    records = []
    for kind in cfg.sources:

        def spec(count: int, kind: str = kind) -> str:
            return specs[kind].format(path=work / f"store-{count}.parquet")

        def run(count: int, spec=spec) -> tuple[float, _Stages]:
            return _campaign(cfg, spec(count), count, work / "run")

        log(f"host ceiling: {kind} source, {small} and {large} scenarios, {cfg.repeats} pairs ...")
        rates, walls, kept = marginal_pairs(run, small, large, cfg.repeats, log, f"host ceiling ({kind})")
        parts = [breakdown(stages, rate) for stages, rate in zip(kept, rates, strict=True)]
        stage_us = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
        summary = spread(rates)
        log(
            f"  {kind}: {summary['median']:,.0f} scenarios/s; us/scenario "
            + ", ".join(f"{k} {v:.2f}" for k, v in stage_us.items())
        )
        records.append(_record(cfg, kind, summary, stage_us, walls))
    return records


def _record(cfg: HostCeilingConfig, kind: str, summary: dict, stage_us: dict, walls) -> BenchRecord:
    import jax

    return BenchRecord(
        kind="campaign",
        workload=f"W{cfg.agents}",
        backend="sharding",
        device_count=jax.device_count(),
        device_kind=jax.devices()[0].device_kind,
        platform=jax.default_backend(),
        jax_version=jax.__version__,
        batch_size=cfg.batch_size,
        agents=cfg.agents,
        steps=cfg.steps,
        scenarios=cfg.large_batches * cfg.batch_size,
        repeats=cfg.repeats,
        scenarios_per_s=summary,
        extra={
            "engine": "null",
            "source": kind,
            "campaign_scenarios_per_s": summary,
            "stages_us_per_scenario": stage_us,
            "small_large_wall_s": walls,
            "small_scenarios": cfg.small_batches * cfg.batch_size,
            "large_scenarios": cfg.large_batches * cfg.batch_size,
        },
    )
