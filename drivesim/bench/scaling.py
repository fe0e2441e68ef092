"""Strong and weak scaling sweeps over device counts 1, 2, 4, ... (each in its own subprocess).

On CPU, N devices are N processes, process i pinned to core i with ``taskset`` and joined by
``jax.distributed`` (forced CPU devices share the same cores and would only show overhead).
On accelerators, N devices are the first N visible devices of one process.

Strong scaling keeps the total work fixed (each of N devices does 1/N); weak scaling keeps
the work per device fixed (N times the total). efficiency = thr(N) / (N * thr(1)).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from drivesim.bench.amdahl import fit_amdahl
from drivesim.bench.cost import cost_per_million, price_for
from drivesim.bench.harness import Work, throughput
from drivesim.bench.records import BenchRecord, summary_of
from drivesim.bench.scale_worker import WorkerSpec
from drivesim.bench.workloads import Workload
from drivesim.parallel.launch import Child, cpu_cores, free_port, run_group


@dataclass(frozen=True)
class ScaleConfig:
    """mode: strong | weak; max_devices: largest count (None = all available);
    workload: the total (strong) or per-device (weak) work; platform: cpu (pinned processes)
    or gpu/tpu (device subsets), None = detect; price: USD per device-hour override;
    timeout_s: per measurement."""

    mode: str = "strong"
    max_devices: int | None = None
    workload: Workload = Workload()
    repeats: int = 5
    warmup: int = 1
    platform: str | None = None
    price: float | None = None
    timeout_s: float = 900.0
    pin: bool = True
    engine: str = "executor"

    def __post_init__(self):
        if self.mode not in ("strong", "weak"):
            raise ValueError(f"ScaleConfig.mode: {self.mode!r} is not strong|weak")
        if self.engine not in ("executor", "simulate"):
            raise ValueError(f"ScaleConfig.engine: {self.engine!r} is not executor|simulate")


def probe(platform: str | None = None) -> tuple[str, int]:
    """(platform, devices available): JAX's default backend and its local device count, asked
    in a fresh subprocess (this process's forced-device flags do not leak); on CPU the count
    is the cores this process may use (one pinned process each)."""
    if platform == "cpu":
        return "cpu", len(cpu_cores())
    code = "import jax; print(jax.default_backend(), jax.local_device_count())"
    env = worker_env(platform or "auto")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"could not start JAX to count devices: {out.stderr[-1000:]}")
    found, count = out.stdout.split()[-2:]
    return (found, len(cpu_cores())) if found == "cpu" else (found, int(count))


def device_counts(available: int, max_devices: int | None) -> list[int]:
    """1, 2, 4, ... up to min(available, max_devices), plus that limit itself."""
    limit = max(1, min(available, max_devices or available))
    counts = [2**k for k in range(int(math.log2(limit)) + 1)]
    return counts if counts[-1] == limit else [*counts, limit]


def worker_env(platform: str) -> dict:
    """Environment of a worker: no forced host device count (one CPU device per process)."""
    env = dict(os.environ)
    flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "", env.get("XLA_FLAGS", "")).strip()
    if flags:
        env["XLA_FLAGS"] = flags
    else:
        env.pop("XLA_FLAGS", None)
    if platform == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    return env


def _launch(specs: list[WorkerSpec], platform: str, pin: bool, timeout_s: float) -> list[dict]:
    """Start one subprocess per spec (pinned to its core on CPU), wait, return their results."""
    cores = cpu_cores()
    children = [
        Child(
            cmd=[sys.executable, "-m", "drivesim.bench.scale_worker", spec.to_arg()],
            env=worker_env(platform),
            cpu=cores[spec.process_id % len(cores)] if pin and platform == "cpu" else None,
        )
        for spec in specs
    ]
    run_group(children, timeout_s, what="scaling worker")
    return [json.loads(Path(spec.out_dir, f"worker-{spec.process_id}.json").read_text()) for spec in specs]


def measure_point(config: ScaleConfig, devices: int, platform: str) -> dict:
    """Run one device count; returns {times, compile_s, scenarios, ...} of the whole group
    (a repeat's time is the slowest process's; scenarios summed over processes)."""
    wl = config.workload
    total = wl.scenarios * devices if config.mode == "weak" else wl.scenarios
    with tempfile.TemporaryDirectory(prefix="drivesim-scale-") as tmp:
        base = WorkerSpec(
            mode="processes" if platform == "cpu" else "devices",
            scenarios=total,
            agents=wl.agents,
            steps=wl.steps,
            repeats=config.repeats,
            warmup=config.warmup,
            out_dir=tmp,
            devices=devices,
            engine=config.engine,
        )
        if base.mode == "processes":
            coordinator = f"127.0.0.1:{free_port()}"
            specs = [
                replace(base, num_processes=devices, process_id=i, coordinator=coordinator)
                for i in range(devices)
            ]
        else:
            specs = [base]
        results = _launch(specs, platform, config.pin, config.timeout_s)
    first = results[0]
    times = [max(r["times"][k] for r in results) for k in range(config.repeats)]
    return first | {
        "times": times,
        "compile_s": max(r["compile_s"] for r in results),
        "process_times": [r["times"] for r in results],
        "scenarios": sum(r["scenarios"] for r in results) if base.mode == "processes" else first["scenarios"],
        "backend": "processes" if base.mode == "processes" else "sharding",
        "process_count": devices if base.mode == "processes" else 1,
    }


def _record(config: ScaleConfig, devices: int, point: dict) -> BenchRecord:
    wl = config.workload
    rates = throughput(Work(point["scenarios"], wl.agents, wl.steps), point["times"])
    price = price_for(point["device_kind"], config.price)
    return BenchRecord(
        kind="scale",
        mode=config.mode,
        workload=wl.name,
        backend=point["backend"],
        device_kind=point["device_kind"],
        platform=point["platform"],
        device_count=devices,
        process_count=point["process_count"],
        jax_version=point["jax_version"],
        batch_size=point["scenarios"],
        chunk=point["scenarios"] // devices,
        agents=wl.agents,
        steps=wl.steps,
        scenarios=point["scenarios"],
        repeats=config.repeats,
        compile_s=point["compile_s"],
        **rates.as_fields(),
        compiled_bytes=point["compiled_bytes"],
        device_bytes_in_use=point["device_bytes_in_use"],
        device_peak_bytes=point["device_peak_bytes"],
        host_rss_bytes=point["host_rss_bytes"],
        price_per_device_hour=price,
        cost_per_million=cost_per_million(rates.scenarios_per_s.median, devices, price),
        extra={
            "times_s": point["times"],
            "process_times_s": point["process_times"],
            "pinned": config.pin and point["platform"] == "cpu",
            "engine": config.engine,
        },
    )


def _stderr_of_mean(summary: dict) -> float:
    return summary["std"] / math.sqrt(summary["n"]) if summary["n"] > 1 else 0.0


def _speedup(record: BenchRecord) -> float:
    if record.speedup is None:
        raise ValueError(f"bench record {record.workload!r}: speed-up not filled (add_speedups)")
    return record.speedup


def add_speedups(records: list[BenchRecord]) -> None:
    """Fill speedup = thr(N)/thr(1) and efficiency = thr(N)/(N thr(1)) (needs N=1 first)."""
    base = next(r for r in records if r.device_count == 1).rate()
    for r in records:
        r.speedup = r.rate() / base
        r.efficiency = r.speedup / r.device_count


def amdahl_record(records: list[BenchRecord]) -> BenchRecord:
    """The Amdahl fit (kind="amdahl") of strong-scaling records with speed-ups filled."""
    one = next(r for r in records if r.device_count == 1)
    rel1 = _stderr_of_mean(summary_of(one)) / one.rate()
    errs = [_speedup(r) * math.hypot(rel1, _stderr_of_mean(summary_of(r)) / r.rate()) for r in records]
    fit = fit_amdahl([r.device_count for r in records], [r.speedup for r in records], errs)
    last = max(records, key=lambda r: r.device_count)
    return BenchRecord(
        kind="amdahl",
        mode="strong",
        workload=one.workload,
        backend=one.backend,
        device_kind=one.device_kind,
        platform=one.platform,
        device_count=last.device_count,
        process_count=last.process_count,
        jax_version=one.jax_version,
        agents=one.agents,
        steps=one.steps,
        scenarios=one.scenarios,
        repeats=one.repeats,
        serial_fraction=fit.serial_fraction,
        serial_fraction_std=fit.serial_fraction_std,
        ceiling=fit.ceiling,
        speedup=last.speedup,
        efficiency=last.efficiency,
        extra={
            "devices": [r.device_count for r in records],
            "speedups": [r.speedup for r in records],
            "points": fit.points,
        },
    )


def run_scaling(config: ScaleConfig, log=None) -> list[BenchRecord]:
    """Measure every device count; returns the scale records (and the Amdahl fit for strong)."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    platform, available = probe(config.platform)
    counts = device_counts(available, config.max_devices)
    records = []
    for n in counts:
        log(f"{config.mode} scaling: {n} device(s) on {platform} ...")
        records.append(_record(config, n, measure_point(config, n, platform)))
        log(f"  {records[-1].rate():,.1f} scenarios/s")
    add_speedups(records)
    if config.mode == "strong" and len(records) > 1:
        records.append(amdahl_record(records))
    return records
