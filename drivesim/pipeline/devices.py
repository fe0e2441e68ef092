"""The device side of a campaign: ``put`` a host batch, ``run`` it, ``fetch`` its metrics.

Uses the parallel room's :class:`drivesim.parallel.executor.Executor` (sharding / shard_map /
pmap backends, chunking, donation).
"""

from __future__ import annotations

import jax
import numpy as np

from drivesim.core.types import METRIC_NAMES, SimConfig
from drivesim.parallel.executor import Executor, ExecutorConfig
from drivesim.pipeline.config import CampaignConfig, PolicySpec


class DeviceRunner:
    """put/run/fetch for one campaign: metrics come back as {name: (P, B) NumPy}."""

    def __init__(self, config: CampaignConfig, sim_config: SimConfig, spec: PolicySpec):
        self.spec, self.sim_config = spec, sim_config
        self.policy = _stack(spec.params) if spec.is_sweep else spec.params[0]
        # "auto" goes through: the executor picks the largest chunk whose compiled memory fits
        chunk = config.chunk if config.chunk in (None, "auto") else int(config.chunk)
        self.executor = Executor(
            ExecutorConfig(backend=config.backend, devices=config.devices, chunk=chunk), sim_config
        )
        self.num_devices = int(self.executor.num_devices)

    def put(self, scenario):
        """Start moving a stacked host Scenario to the devices (returns at once)."""
        return self.executor.put(scenario)

    def run(self, dbatch):
        """Dispatch the rollout of every policy on a device batch (asynchronous)."""
        if self.spec.is_sweep:
            return self.executor.run_sweep(dbatch, self.policy)
        return self.executor.run(dbatch, self.policy)

    def fetch(self, result, rows: int) -> dict[str, np.ndarray]:
        """Metrics of the first ``rows`` scenarios as {name: (P, rows)} NumPy arrays."""
        metrics = self.executor.fetch(result)
        out = {}
        for name in METRIC_NAMES:
            values = np.asarray(getattr(metrics, name))
            values = values.reshape(-1, values.shape[-1]) if values.ndim > 1 else values[None, :]
            out[name] = values[:, :rows]
        return out


def block(obj) -> None:
    """Wait until every array of an executor device batch / result is ready."""
    for name in ("chunks", "metrics"):
        if hasattr(obj, name):
            obj = getattr(obj, name)
            break
    jax.block_until_ready(obj)


def _stack(params):
    from drivesim.core.policies import stack_policies

    return stack_policies(list(params))
