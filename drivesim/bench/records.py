"""``BenchRecord``: the one schema of every benchmark, scaling and profile result.

Records are written as JSON lines (one object per line) under ``<out>/bench/*.jsonl`` or
``<out>/scale/*.jsonl`` (see docs/CAMPAIGN_FORMAT.md). Rates are dicts with the fields of
:class:`drivesim.bench.stats.Summary` (median, p5, p95, ci_low, ci_high, mean, std, n, ci_method).
"""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

KINDS = ("engine", "pipeline", "memory", "scale", "sweep", "amdahl", "profile", "campaign")


@dataclass
class BenchRecord:
    """One measured result (or fit) with the conditions it was measured under.

    kind: engine | pipeline | memory | scale | sweep | amdahl | profile | campaign.
    workload: name such as "W32" ("highway x 4096 scenarios x 32 agents x 80 steps").
    backend: executor backend (sharding | shard_map | pmap | processes | single).
    device_kind / platform / device_count / process_count / jax_version / machine: where.
    batch_size: scenarios per call; chunk: scenarios per device call (None = whole batch).
    agents, steps, scenarios: workload shape; repeats: timed repeats (warm-up excluded).
    compile_s: compile time, measured apart from the repeats.
    scenarios_per_s, agent_steps_per_s, steps_per_s: Summary dicts of the repeats.
    compiled_bytes (memory_analysis), device_bytes_in_use / device_peak_bytes (memory_stats,
    GPU only), host_rss_bytes: memory.
    mode, speedup, efficiency: scaling (efficiency = thr(N) / (N * thr(1))).
    serial_fraction, serial_fraction_std, ceiling: Amdahl fit (kind="amdahl").
    price_per_device_hour, cost_per_million: cost in USD.
    phases: {load, h2d, compute, d2h, write} seconds; bottleneck, recommendation: verdict.
    knee: this batch size is the knee of the sweep. busy: {device: busy fraction};
    gpu_util: NVML utilisation percent per GPU (None without NVML). extra: anything else.
    """

    kind: str
    workload: str = ""
    backend: str = ""
    device_kind: str = ""
    platform: str = ""
    device_count: int = 1
    process_count: int = 1
    jax_version: str = ""
    batch_size: int | None = None
    chunk: int | None = None
    agents: int | None = None
    steps: int | None = None
    scenarios: int | None = None
    repeats: int | None = None
    compile_s: float | None = None
    scenarios_per_s: dict | None = None
    agent_steps_per_s: dict | None = None
    steps_per_s: dict | None = None
    compiled_bytes: int | None = None
    device_bytes_in_use: int | None = None
    device_peak_bytes: int | None = None
    host_rss_bytes: int | None = None
    mode: str | None = None
    speedup: float | None = None
    efficiency: float | None = None
    serial_fraction: float | None = None
    serial_fraction_std: float | None = None
    ceiling: float | None = None
    price_per_device_hour: float | None = None
    cost_per_million: float | None = None
    phases: dict | None = None
    bottleneck: str | None = None
    recommendation: str | None = None
    knee: bool | None = None
    busy: dict | None = None
    gpu_util: dict | None = None
    extra: dict = field(default_factory=dict)
    timestamp: float = field(default_factory=time.time)
    machine: str = field(default_factory=lambda: machine_name())

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"BenchRecord.kind: unknown kind {self.kind!r}; known: {KINDS}")

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        """One line of JSON (non-finite floats written as null)."""
        return json.dumps(_finite(self.to_dict()), sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> BenchRecord:
        known = {f.name for f in fields(cls)}
        extra = dict(data.get("extra") or {})
        extra.update({k: v for k, v in data.items() if k not in known})
        return cls(**{k: v for k, v in data.items() if k in known and k != "extra"}, extra=extra)

    def rate(self, name: str = "scenarios_per_s") -> float:
        """The median of a rate field (ValueError where it was not measured)."""
        return summary_of(self, name)["median"]


def summary_of(record: BenchRecord, name: str = "scenarios_per_s") -> dict:
    """The summary dict {median, p5, p95, ...} of a rate field; ValueError where it is missing."""
    value = getattr(record, name)
    if value is None:
        raise ValueError(f"bench record {record.workload!r}: no {name} measured")
    return value


def rate_line(record: BenchRecord) -> str:
    """One line of a record's rates for progress output: scenarios/s median [p5 .. p95],
    agent-steps/s median and 95% CI, and the compile time when measured."""
    s, a = summary_of(record), summary_of(record, "agent_steps_per_s")
    return (
        f"{record.workload:<22} {s['median']:>12,.1f} scen/s [{s['p5']:,.1f} .. {s['p95']:,.1f}]"
        f"  {a['median'] / 1e6:>9.2f} M agent-steps/s"
        f"  (95% CI {a['ci_low'] / 1e6:.2f}..{a['ci_high'] / 1e6:.2f})"
        + (f"  compile {record.compile_s:.1f} s" if record.compile_s is not None else "")
    )


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def machine_name() -> str:
    """host name / OS / CPU architecture / visible CPU cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{socket.gethostname()}/{platform.system()}/{platform.machine()}/{cores}cores"


def append_records(path: str | Path, records: list[BenchRecord]) -> Path:
    """Append ``records`` to the JSON-lines file ``path`` (parents created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for record in records:
            fh.write(record.to_json() + "\n")
    return path


def read_records(path: str | Path) -> list[BenchRecord]:
    """Every record of a JSON-lines file, or of every ``*.jsonl`` below a directory."""
    path = Path(path)
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    out = []
    for file in files:
        for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(BenchRecord.from_dict(json.loads(line)))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{file}:{lineno}: not a BenchRecord: {exc}") from exc
    return out
