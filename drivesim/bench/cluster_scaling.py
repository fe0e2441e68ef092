"""Strong scaling of a campaign over Ray workers on one machine (``drivesim scale --cluster ray``).

The same campaign runs (a) as the single-process run: the embedded campaign in a subprocess
pinned to one core, and (b) on 1, 2, 4, ... Ray workers, worker i pinned to core i
(``DRIVESIM_PIN_WORKERS=1``), the driver in this process; each with the CPU devices of one core.
So a worker has exactly the single process's core and programs, and N workers have N of them.

The figure is the steady rate of each campaign (:func:`steady_rate`): scenarios finished while
every worker was past its first batch and none had run out of work, over that time, from the
ledger's per-batch clock; so each worker's one-off start-up, tracing and program loading and
the drained tail are left out, and scheduling, loading, writing and the driver are in. The
persistent compilation cache is warmed first (an untimed 2-batch campaign per mode).
efficiency(N) = rate(N workers) / (N * rate(single process)).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from drivesim.bench.records import BenchRecord
from drivesim.bench.scaling import add_speedups, device_counts
from drivesim.bench.stats import summarize
from drivesim.pipeline.config import CampaignConfig

PIN_ENV = "DRIVESIM_PIN_WORKERS"


@contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    """``os.environ[name] = value`` inside the block, the earlier value (or none) after it."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@dataclass(frozen=True, kw_only=True)
class ClusterScaleConfig:
    """cluster: the ``--cluster`` value (ray = the cluster Ray finds, else a local one started
    here); max_workers: largest worker count (None = this machine's cores); scenarios: total
    per campaign (at least 4 batches; several per worker); source: a campaign source spec."""

    cluster: str = "ray"
    max_workers: int | None = None
    scenarios: int = 4096
    agents: int = 32
    steps: int = 80
    batch_size: int = 256
    repeats: int = 3
    source: str = "synthetic:highway"

    def __post_init__(self):
        from drivesim.pipeline.cluster import parse_cluster

        parse_cluster(self.cluster)  # ConfigError (a ValueError) naming a bad value
        if self.scenarios < 4 * self.batch_size:
            raise ValueError(
                f"scenarios: {self.scenarios} is under 4 batches of {self.batch_size} "
                "(the steady rate needs several batches per worker)"
            )
        if self.repeats < 1:
            raise ValueError(f"repeats: {self.repeats} (at least 1)")

    def campaign(self, out: Path) -> CampaignConfig:
        """The measured campaign, written to ``out``."""
        return CampaignConfig(
            sources=(self.source,),
            count=self.scenarios,
            agents=self.agents,
            num_steps=self.steps,
            batch_size=self.batch_size,
            out=str(out),
        )

    @property
    def workload(self) -> str:
        return f"{self.source} {self.scenarios}x{self.agents}x{self.steps} batch {self.batch_size}"


_STEADY_SQL = """
SELECT b.worker, p.num_scenarios, p.wall_end
FROM batches b JOIN phases p ON p.batch_id = b.batch_id WHERE b.status = 'done'
"""


def steady_rate(directory: Path) -> float:
    """Scenarios/s of a finished campaign while every worker was running steadily: from t0,
    when the last worker finished its first batch, to t1, when the first worker finished its
    last batch: scenarios of the batches that ended in (t0, t1] / (t1 - t0), from the ledger's
    per-batch wall clock (the workers of one machine share it). Start-up, tracing and program
    loading fall before t0; the drained tail, where some workers are idle, after t1.

    When no batch ends in that span (one worker's start-up outlasted the others' work), the sum
    of each worker's own rate after its first batch (ValueError where a worker did only one)."""
    from drivesim.pipeline.ledger import read_only

    con = read_only(directory)
    try:
        rows = con.execute(_STEADY_SQL).fetchall()
    finally:
        con.close()
    ends: dict = {}
    for worker, n, end in rows:
        ends.setdefault(worker, []).append((end, n))
    t0 = max((min(e)[0] for e in ends.values()), default=0.0)
    t1 = min((max(e)[0] for e in ends.values()), default=0.0)
    inside = sum(n for _, n, end in rows if t0 < end <= t1)
    if inside:
        return inside / (t1 - t0)
    per_worker = [sorted(e) for e in ends.values()]  # (end, scenarios) pairs of each worker
    if not per_worker or any(len(e) < 2 or e[-1][0] <= e[0][0] for e in per_worker):
        raise ValueError(
            f"campaign {directory}: a worker finished only one batch; "
            "give more scenarios (several batches per worker)"
        )
    return sum(sum(n for _, n in e[1:]) / (e[-1][0] - e[0][0]) for e in per_worker)


def steady_rates(config: CampaignConfig, work: Path, name: str, repeats: int) -> list[float]:
    """``repeats`` steady rates (scenarios/s, :func:`steady_rate`) of ``config``, after one
    untimed 2-batch run that compiles the programs into the persistent cache."""
    from drivesim.pipeline.campaign import run_campaign

    run_campaign(replace(config, count=2 * int(config.batch_size), out=str(work / f"{name}-warm")))
    out = []
    for k in range(repeats):
        directory = work / f"{name}-{k}"
        result = run_campaign(replace(config, out=str(directory)))
        if result.done != config.count:
            raise RuntimeError(f"campaign {directory}: {result.done} of {config.count} scenarios done")
        out.append(steady_rate(directory))
    return out


def single_process(config: ClusterScaleConfig, work: Path, timeout_s: float = 3600.0) -> list[float]:
    """Steady rates of the embedded campaign in a subprocess pinned to one core."""
    spec = work / "single.json"
    spec.write_text(json.dumps(asdict(config)))
    env = dict(os.environ, **{PIN_ENV: "1"})
    cmd = [sys.executable, "-m", "drivesim.bench.cluster_scaling", str(spec), str(work)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"single-process run failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads((work / "single-rates.json").read_text())


def ray_point(config: ClusterScaleConfig, workers: int, work: Path) -> list[float]:
    """Steady rates of the campaign on ``workers`` pinned Ray workers."""
    with _environ(PIN_ENV, "1"):  # passed to the workers' runtime environment
        campaign = replace(config.campaign(work), cluster=config.cluster, workers=workers)
        return steady_rates(campaign, work, f"ray-{workers}", config.repeats)


def _record(config: ClusterScaleConfig, backend: str, workers: int, rates: list[float]) -> BenchRecord:
    from drivesim.bench.harness import environment

    env = environment()
    return BenchRecord(
        kind="scale",
        mode="strong",
        workload=config.workload,
        backend=backend,
        device_kind=env["device_kind"],
        platform=env["platform"],
        device_count=workers,
        process_count=workers,
        jax_version=env["jax_version"],
        batch_size=config.batch_size,
        agents=config.agents,
        steps=config.steps,
        scenarios=config.scenarios,
        repeats=config.repeats,
        scenarios_per_s=summarize(rates).to_dict(),
        agent_steps_per_s=summarize([r * config.agents * config.steps for r in rates]).to_dict(),
        steps_per_s=summarize([r * config.steps for r in rates]).to_dict(),
        extra={"steady_rates": rates, "pinned": True, "cluster": config.cluster},
    )


def _connect(config: ClusterScaleConfig):
    """Ray as this process is connected to it, else connected to ``config.cluster``, where
    plain ``ray`` starts a fresh local instance (the figures are this machine's, not those of
    whatever cluster Ray would find); returns (ray, started_here)."""
    import ray

    from drivesim.pipeline.cluster import parse_cluster

    if ray.is_initialized():
        return ray, False
    address = parse_cluster(config.cluster) or "local"
    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    return ray, True


def run_cluster_scaling(
    config: ClusterScaleConfig, log: Callable[[str], None] | None = None
) -> list[BenchRecord]:
    """The single-process record (backend "single") and one per worker count (backend "ray"),
    speed-up and efficiency against the single process filled in."""
    from drivesim.parallel import compile_cache
    from drivesim.parallel.launch import cpu_cores

    log = log or (lambda msg: print(msg, file=sys.stderr))
    with tempfile.TemporaryDirectory(prefix="drivesim-cluster-scale-") as tmp:
        work = Path(tmp)
        cache = compile_cache.cache_dir() or work / "jax-cache"
        with _environ(compile_cache.ENV, str(cache)):  # the single process and the workers share it
            log(f"single process pinned to one core: {config.workload} ...")
            records = [_record(config, "single", 1, single_process(config, work))]
            log(f"  {records[0].rate():,.1f} scenarios/s (steady)")
            ray, started = _connect(config)
            try:
                available = min(len(cpu_cores()), int(ray.cluster_resources().get("CPU", 1)))
                for n in device_counts(available, config.max_workers):
                    log(f"{n} pinned Ray worker(s) ...")
                    records.append(_record(config, "ray", n, ray_point(config, n, work)))
                    log(f"  {records[-1].rate():,.1f} scenarios/s (steady)")
            finally:
                if started:
                    ray.shutdown()
    add_speedups(records)  # against the single process, the first record with one device
    return records


def _single_main(spec: str, work: str) -> int:
    """Subprocess entry: pin to one core, run the embedded campaign, write the rates."""
    from drivesim.pipeline.ray_worker import pin, prepare_jax

    config = ClusterScaleConfig(**json.loads(Path(spec).read_text()))
    pin(0)
    prepare_jax()
    t0 = time.perf_counter()
    rates = steady_rates(config.campaign(Path(work)), Path(work), "single", config.repeats)
    Path(work, "single-rates.json").write_text(json.dumps(rates))
    print(f"single process: {len(rates)} repeats in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(_single_main(*sys.argv[1:3]))
