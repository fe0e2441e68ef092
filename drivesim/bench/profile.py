"""Utilisation from a ``jax.profiler`` trace, and GPU utilisation from NVML.

A device's busy time is the union of its compute events: on accelerators the events of the
"XLA Ops" line of its ``/device:...`` plane; on CPU the XLA thunk events of the host plane,
attributed to devices by their ``device_ordinal`` stat. The busy fraction divides that
union by the wall window, the span from the first to the last compute event of any device.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import jax

ACCEL_BUSY_LINES = ("XLA Ops",)
ACCEL_SKIP_LINES = (
    "XLA Modules",
    "Steps",
    "XLA TraceMe",
    "Source code",
    "Framework Name Scope",
    "Framework Ops",
    "TensorFlow Name Scope",
    "TensorFlow Ops",
)


@dataclass(frozen=True)
class DeviceBusy:
    """device label, busy seconds (union of compute events), wall window seconds, fraction."""

    device: str
    busy_s: float
    wall_s: float
    fraction: float
    events: int


def merge_intervals(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals."""
    total, cur_start = 0.0, 0.0
    cur_end: float | None = None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def find_xplane(trace_dir: str | Path) -> Path:
    """The newest ``*.xplane.pb`` below ``trace_dir``."""
    files = sorted(Path(trace_dir).rglob("*.xplane.pb"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise FileNotFoundError(f"no *.xplane.pb below {trace_dir}")
    return files[-1]


def _interval(event) -> tuple[float, float]:
    return float(event.start_ns), float(event.start_ns + event.duration_ns)


def _accelerator_events(plane) -> list[tuple[float, float]]:
    lines = list(plane.lines)
    busy = [line for line in lines if line.name in ACCEL_BUSY_LINES]
    if not busy:  # older traces: every stream line except the summary ones
        busy = [line for line in lines if line.name not in ACCEL_SKIP_LINES]
    return [_interval(e) for line in busy for e in line.events if e.duration_ns > 0]


def _cpu_events(plane) -> dict[str, list[tuple[float, float]]]:
    per_device = defaultdict(list)
    for line in plane.lines:
        for event in line.events:
            if event.duration_ns <= 0 or "wait" in event.name.lower():
                continue
            stats = dict(event.stats)
            if "device_ordinal" in stats and ("hlo_op" in stats or event.name.startswith("ThunkExecutor")):
                per_device[f"cpu:{stats['device_ordinal']}"].append(_interval(event))
    return per_device


def device_intervals(xplane: str | Path) -> dict[str, list[tuple[float, float]]]:
    """{device label: compute intervals in ns} parsed with ``jax.profiler.ProfileData``."""
    data = jax.profiler.ProfileData.from_file(str(xplane))
    out: dict[str, list] = {}
    for plane in data.planes:
        if plane.name.startswith("/device:") and "CUSTOM" not in plane.name:
            events = _accelerator_events(plane)
            if events:
                out[plane.name.removeprefix("/device:")] = events
        elif plane.name == "/host:CPU":
            out.update(_cpu_events(plane))
    return out


def busy_fractions(xplane: str | Path) -> list[DeviceBusy]:
    """Per-device busy fractions of a trace (sorted by device label)."""
    intervals = device_intervals(xplane)
    if not intervals:
        return []
    first = min(s for iv in intervals.values() for s, _ in iv)
    last = max(e for iv in intervals.values() for _, e in iv)
    wall = max(last - first, 1.0)
    return [
        DeviceBusy(
            device=name,
            busy_s=merge_intervals(iv) / 1e9,
            wall_s=wall / 1e9,
            fraction=merge_intervals(iv) / wall,
            events=len(iv),
        )
        for name, iv in sorted(intervals.items())
    ]


def nvml_utilisation() -> dict | None:
    """{gpu index: utilisation percent} from NVML (pynvml), None without NVML or a GPU."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
            return {
                str(i): float(pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i)).gpu)
                for i in range(count)
            }
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no driver / no GPU
        return None


@dataclass(frozen=True)
class ProfileResult:
    """trace_dir: the trace (open in Perfetto / TensorBoard); busy: per-device busy;
    gpu_util: NVML percent per GPU or None; seconds: wall time of the traced calls."""

    trace_dir: str
    xplane: str
    busy: list[DeviceBusy]
    gpu_util: dict | None
    seconds: float

    def busy_map(self) -> dict:
        """{device: busy fraction} (the BenchRecord ``busy`` field)."""
        return {b.device: b.fraction for b in self.busy}

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "trace_dir": self.trace_dir,
            "xplane": self.xplane,
            "seconds": self.seconds,
            "gpu_util": self.gpu_util,
            "devices": [asdict(b) | {"busy_fraction": b.fraction} for b in self.busy],
        }
        path.write_text(json.dumps(payload, indent=2))
        return path


def trace_calls(call, trace_dir: str | Path, repeats: int = 3) -> ProfileResult:
    """Trace ``repeats`` calls of ``call()`` (already compiled and warmed up) into ``trace_dir``."""
    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    with jax.profiler.trace(str(trace_dir)):
        start = time.perf_counter()
        for _ in range(repeats):
            jax.block_until_ready(call())
        seconds = time.perf_counter() - start
        util = nvml_utilisation()  # sampled while the last call's work is fresh
    xplane = find_xplane(trace_dir)
    return ProfileResult(str(trace_dir), str(xplane), busy_fractions(xplane), util, seconds)


@dataclass(frozen=True)
class ProfileConfig:
    """Profile ``simulate`` on ``scenarios`` x ``agents`` x ``steps`` highway scenarios,
    sharded over ``devices`` local devices (None = all), ``repeats`` traced calls."""

    scenarios: int = 1024
    agents: int = 32
    steps: int = 80
    devices: int | None = None
    repeats: int = 3


def profile_simulate(config: ProfileConfig, trace_dir: str | Path) -> ProfileResult:
    """Compile and warm up ``simulate`` on a sharded batch, then trace ``repeats`` calls."""
    from drivesim.bench.workloads import Workload, make_batch, place, sim_config
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate

    workload = Workload(scenarios=config.scenarios, agents=config.agents, steps=config.steps)
    devices = jax.local_devices()[: config.devices or None]
    batch, _ = place(make_batch(workload), devices)
    policy = idm_policy()
    compiled = simulate.lower(batch, policy, config=sim_config(workload), devices=len(devices)).compile()
    jax.block_until_ready(compiled(batch, policy))
    return trace_calls(lambda: compiled(batch, policy), trace_dir, config.repeats)
