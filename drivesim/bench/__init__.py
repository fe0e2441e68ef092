"""Measuring: the engine and pipeline benchmarks, scaling sweeps, records."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "EngineConfig": "drivesim.bench.engine",
    "agent_step_cost_ratio": "drivesim.bench.engine",
    "run_engine": "drivesim.bench.engine",
    "HarnessConfig": "drivesim.bench.harness",
    "W32": "drivesim.bench.workloads",
    "W128": "drivesim.bench.workloads",
    "Workload": "drivesim.bench.workloads",
    "ScaleConfig": "drivesim.bench.scaling",
    "run_scaling": "drivesim.bench.scaling",
    "fit_amdahl": "drivesim.bench.amdahl",
    "BenchRecord": "drivesim.bench.records",
    "read_records": "drivesim.bench.records",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
