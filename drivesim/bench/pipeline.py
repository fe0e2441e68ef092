"""Pipeline benchmark: a small synthetic campaign through the real pipeline, timed end to
end, with the phase timings from its ledger turned into a bottleneck verdict."""

from __future__ import annotations

import shutil
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from drivesim.bench.bottleneck import Verdict, totals_from_rows, verdict
from drivesim.bench.harness import Work, environment, throughput
from drivesim.bench.records import BenchRecord
from drivesim.parallel.memory import host_rss


@dataclass(frozen=True)
class PipelineBenchConfig:
    """A campaign of ``count`` highway scenarios (``agents`` agents, ``steps`` steps) in
    batches of ``batch_size``; ``warmup`` untimed campaigns (compile), ``repeats`` timed ones;
    loader_threads / prefetch / chunk / backend as in ``drivesim run``; work_dir: where the
    campaign directories go (kept for inspection)."""

    count: int = 1024
    agents: int = 32
    steps: int = 80
    batch_size: int = 256
    repeats: int = 3
    warmup: int = 1
    loader_threads: int = 2
    prefetch: int = 4
    chunk: int | None = None
    backend: str = "sharding"
    work_dir: str = "runs/bench/pipeline"


def read_phases(campaign_dir: str | Path) -> list[dict]:
    """Rows of the ledger ``phases`` table (docs/CAMPAIGN_FORMAT.md) as dicts."""
    path = Path(campaign_dir) / "ledger.sqlite"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no campaign ledger")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT * FROM phases ORDER BY batch_id")]
    finally:
        con.close()


def _campaign(config: PipelineBenchConfig, directory: Path) -> float:
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig

    shutil.rmtree(directory, ignore_errors=True)
    campaign = CampaignConfig(
        sources=("synthetic:highway",),
        count=config.count,
        agents=config.agents,
        num_steps=config.steps,
        batch_size=config.batch_size,
        loader_threads=config.loader_threads,
        prefetch=config.prefetch,
        chunk=config.chunk,
        backend=config.backend,
        out=str(directory),
    )
    start = time.perf_counter()
    run_campaign(campaign, progress=lambda event: None)
    return time.perf_counter() - start


def run_pipeline_bench(config: PipelineBenchConfig, log=None) -> tuple[BenchRecord, Verdict]:
    """Run the campaigns; returns the pipeline record (rates over the timed campaigns, phases
    of the last one) and its bottleneck verdict."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    root = Path(config.work_dir)
    warm = [_campaign(config, root / f"warmup-{i}") for i in range(config.warmup)]
    times = []
    for i in range(config.repeats):
        times.append(_campaign(config, root / f"run-{i}"))
        log(f"campaign {i + 1}/{config.repeats}: {config.count / times[-1]:,.0f} scenarios/s")
    last = root / f"run-{config.repeats - 1}"
    rows = read_phases(last)
    totals = totals_from_rows(rows, loader_threads=config.loader_threads)
    found = verdict(totals)
    rates = throughput(Work(config.count, config.agents, config.steps), times)
    env = environment()
    record = BenchRecord(
        kind="pipeline",
        workload=f"campaign-highway-{config.count}x{config.agents}x{config.steps}",
        backend=config.backend,
        **env,
        batch_size=config.batch_size,
        chunk=config.chunk,
        agents=config.agents,
        steps=config.steps,
        scenarios=config.count,
        repeats=config.repeats,
        **rates.as_fields(),
        compiled_bytes=_max(rows, "compiled_bytes"),
        device_bytes_in_use=_max(rows, "device_bytes_in_use"),
        device_peak_bytes=_max(rows, "device_peak_bytes"),
        host_rss_bytes=_max(rows, "host_rss_bytes") or host_rss(),
        phases=totals.as_dict(),
        bottleneck=found.bottleneck,
        recommendation=found.recommendation,
        extra={
            "times_s": times,
            "outside_batches_s": max(0.0, times[-1] - (totals.wall or 0.0)),
            "warmup_s": warm,
            "shares": found.shares,
            "campaign_dir": str(last),
            "batches": totals.batches,
            "loader_threads": config.loader_threads,
            "prefetch": config.prefetch,
        },
    )
    return record, found


def _max(rows: list[dict], key: str) -> int | None:
    values = [v for r in rows if (v := r.get(key)) is not None]
    return int(max(values)) if values else None
