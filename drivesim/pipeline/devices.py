"""The device side of a campaign: ``put`` a host batch, ``run`` it, ``fetch`` its metrics.

Uses the parallel room's :class:`drivesim.parallel.executor.Executor` (sharding / shard_map /
pmap backends, chunking, donation). Where that module is missing, a minimal fallback puts the
batch on a 1-D mesh of the selected devices and calls the jitted core ``simulate``.
"""

from __future__ import annotations

import jax
import numpy as np

from drivesim.core.types import METRIC_NAMES, SimConfig
from drivesim.pipeline.config import CampaignConfig, PolicySpec


class DeviceRunner:
    """put/run/fetch for one campaign: metrics come back as {name: (P, B) NumPy}."""

    def __init__(self, config: CampaignConfig, sim_config: SimConfig, spec: PolicySpec):
        self.spec, self.sim_config = spec, sim_config
        self.policy = _stack(spec.params) if spec.is_sweep else spec.params[0]
        chunk = None if config.chunk in (None, "auto") else int(config.chunk)
        try:
            from drivesim.parallel.executor import Executor, ExecutorConfig
        except ImportError:
            Executor = None
        if Executor is not None:
            self.executor = Executor(
                ExecutorConfig(backend=config.backend, devices=config.devices, chunk=chunk), sim_config
            )
            self.num_devices = int(self.executor.num_devices)
        else:
            self.executor = None
            self._init_fallback(config.devices)

    # -- fallback (no executor module) --------------------------------------------------
    def _init_fallback(self, count: int | None) -> None:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        devices = jax.devices()[: count or None]
        self.num_devices = len(devices)
        self._sharding = NamedSharding(
            Mesh(np.asarray(devices, dtype=object), ("data",)), PartitionSpec("data")
        )

    def put(self, scenario):
        """Start moving a stacked host Scenario to the devices (returns at once)."""
        if self.executor is not None:
            return self.executor.put(scenario)
        return jax.device_put(scenario, self._sharding)

    def run(self, dbatch):
        """Dispatch the rollout of every policy on a device batch (asynchronous)."""
        if self.executor is not None:
            if self.spec.is_sweep:
                return self.executor.run_sweep(dbatch, self.policy)
            return self.executor.run(dbatch, self.policy)
        from drivesim.core.rollout import simulate

        if self.spec.is_sweep:
            return [simulate(dbatch, p, self.sim_config) for p in self.spec.params]
        return simulate(dbatch, self.policy, self.sim_config)

    def fetch(self, result, rows: int) -> dict[str, np.ndarray]:
        """Metrics of the first ``rows`` scenarios as {name: (P, rows)} NumPy arrays."""
        if self.executor is not None:
            metrics = self.executor.fetch(result)
        elif isinstance(result, list):
            parts = [jax.device_get(r) for r in result]
            metrics = jax.tree_util.tree_map(lambda *v: np.stack(v), *parts)
        else:
            metrics = jax.device_get(result)
        out = {}
        for name in METRIC_NAMES:
            values = np.asarray(getattr(metrics, name))
            values = values.reshape(-1, values.shape[-1]) if values.ndim > 1 else values[None, :]
            out[name] = values[:, :rows]
        return out

    def memory_stats(self) -> tuple[int | None, int | None]:
        """(bytes in use, peak bytes) summed over devices; None on CPU."""
        used, peak, known = 0, 0, False
        for device in jax.local_devices()[: self.num_devices]:
            stats = device.memory_stats() if hasattr(device, "memory_stats") else None
            if stats:
                known = True
                used += stats.get("bytes_in_use", 0)
                peak += stats.get("peak_bytes_in_use", 0)
        return (used, peak) if known else (None, None)


def block(obj) -> None:
    """Wait until every array of a device batch / result (executor or fallback) is ready."""
    for name in ("chunks", "metrics"):
        if hasattr(obj, name):
            obj = getattr(obj, name)
            break
    jax.block_until_ready(obj)


def _stack(params):
    from drivesim.core.policies import stack_policies

    return stack_policies(list(params))
