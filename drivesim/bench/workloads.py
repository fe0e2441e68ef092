"""Standard benchmark workloads: W8, W32, W128 = 4096 highway scenarios x N agents x 80 steps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Workload:
    """A batch of ``scenarios`` highway scenarios with ``agents`` agents, ``steps`` steps."""

    scenarios: int = 4096
    agents: int = 32
    steps: int = 80
    family: str = "highway"
    first_id: int = 0

    @property
    def name(self) -> str:
        """ "W32" for the standard shape, else "highway-S x A x T"."""
        if (self.scenarios, self.steps, self.family) == (4096, 80, "highway") and self.first_id == 0:
            return f"W{self.agents}"
        return f"{self.family}-{self.scenarios}x{self.agents}x{self.steps}"

    def share(self, index: int, count: int) -> Workload:
        """Process ``index`` of ``count``'s contiguous share (scenario ids stay global; the
        same split as ``drivesim.parallel.distributed.process_positions``)."""
        start, stop = index * self.scenarios // count, (index + 1) * self.scenarios // count
        return Workload(stop - start, self.agents, self.steps, self.family, self.first_id + start)


W8 = Workload(agents=8)
W32 = Workload(agents=32)
W128 = Workload(agents=128)
STANDARD = {"W8": W8, "W32": W32, "W128": W128}


def make_batch(workload: Workload):
    """Host batch (NumPy Scenario with leading axis ``scenarios``) of the workload."""
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    cfg = FamilyConfig(num_agents=workload.agents, steps=workload.steps)
    ids = range(workload.first_id, workload.first_id + workload.scenarios)
    scenarios = [generate(workload.family, i, cfg).scenario for i in ids]
    return pad_and_stack(scenarios, num_agents=workload.agents)


def sim_config(workload: Workload):
    """SimConfig for the workload (IDM ego, all metrics on)."""
    from drivesim.core.types import SimConfig

    return SimConfig(num_steps=workload.steps)


def place(host_batch, devices):
    """Put ``host_batch`` (leading axis B) on ``devices``: on one device as is; on several,
    sharded along the scenario axis over a 1-D mesh (B trimmed to a multiple of the count).
    Returns (device batch, scenarios placed)."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = list(devices)
    if len(devices) == 1:
        return jax.device_put(host_batch, devices[0]), int(host_batch.valid.shape[0])
    size = (host_batch.valid.shape[0] // len(devices)) * len(devices)
    if size == 0:
        raise ValueError(f"place: {host_batch.valid.shape[0]} scenarios < {len(devices)} devices")
    mesh = Mesh(np.array(devices), ("batch",))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))
    trimmed = jax.tree_util.tree_map(lambda leaf: leaf[:size], host_batch)
    return jax.device_put(trimmed, sharding), size
