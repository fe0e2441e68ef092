"""Multi-host start and process-local data.

Each process calls :func:`initialize` first (before any other JAX call), loads only the
scenario positions :func:`process_positions` gives it, and hands its local host batch to
``Executor.put``, which builds global arrays with ``jax.make_array_from_process_local_data``.
``Executor.fetch`` then returns this process's own rows; nothing is gathered.

Settings come from a :class:`DistributedConfig`, else from the environment:
``DRIVESIM_COORDINATOR`` / ``DRIVESIM_NUM_PROCESSES`` / ``DRIVESIM_PROCESS_ID`` /
``DRIVESIM_LOCAL_DEVICE_IDS`` (comma separated), falling back to JAX's
``JAX_COORDINATOR_ADDRESS`` / ``JAX_NUM_PROCESSES`` / ``JAX_PROCESS_ID``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import jax
import numpy as np

from drivesim.core.types import Scenario
from drivesim.scenarios.batching import pad_scenario, stack_scenarios


@dataclass(frozen=True)
class DistributedConfig:
    """How this process joins a multi-process run.

    coordinator: "host:port" of process 0's coordination service.
    num_processes, process_id: the job size and this process's rank.
    local_device_ids: devices of this machine this process uses (None: all).
    cpu_collectives: CPU collectives implementation ("gloo"; None leaves JAX's default).
    timeout_s: how long to wait for the other processes at start.
    """

    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    local_device_ids: tuple[int, ...] | None = None
    cpu_collectives: str | None = "gloo"
    timeout_s: int = 120


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def config_from_env() -> DistributedConfig:
    """A DistributedConfig from the DRIVESIM_* (else JAX_*) environment variables."""
    count = _env("DRIVESIM_NUM_PROCESSES", "JAX_NUM_PROCESSES")
    pid = _env("DRIVESIM_PROCESS_ID", "JAX_PROCESS_ID")
    ids = _env("DRIVESIM_LOCAL_DEVICE_IDS", "JAX_LOCAL_DEVICE_IDS")
    return DistributedConfig(
        coordinator=_env("DRIVESIM_COORDINATOR", "JAX_COORDINATOR_ADDRESS"),
        num_processes=int(count) if count else None,
        process_id=int(pid) if pid else None,
        local_device_ids=tuple(int(i) for i in ids.split(",")) if ids else None,
    )


def initialize(cfg: DistributedConfig | None = None) -> None:
    """Join the multi-process job (``jax.distributed.initialize``); a no-op for one process
    or when already initialised. Must run before anything else touches the JAX backend."""
    cfg = cfg or config_from_env()
    if not cfg.num_processes or cfg.num_processes <= 1 or jax.distributed.is_initialized():
        return
    if cfg.coordinator is None or cfg.process_id is None:
        raise ValueError(
            "distributed: num_processes > 1 needs a coordinator address and a process id "
            "(DRIVESIM_COORDINATOR, DRIVESIM_PROCESS_ID)"
        )
    if cfg.cpu_collectives:
        jax.config.update("jax_cpu_collectives_implementation", cfg.cpu_collectives)
    jax.distributed.initialize(
        coordinator_address=cfg.coordinator,
        num_processes=cfg.num_processes,
        process_id=cfg.process_id,
        local_device_ids=list(cfg.local_device_ids) if cfg.local_device_ids else None,
        initialization_timeout=cfg.timeout_s,
    )


def is_multiprocess() -> bool:
    return jax.process_count() > 1


def process_positions(total: int) -> range:
    """This process's contiguous share of scenario positions [0, total) (process-major
    order, sizes differ by at most one)."""
    count, index = jax.process_count(), jax.process_index()
    return range(index * total // count, (index + 1) * total // count)


def _max_over_processes(values: list[int]) -> list[int]:
    """Element-wise maximum of small integer vectors across processes (a tiny host allgather)."""
    if not is_multiprocess():
        return list(values)
    from jax.experimental import multihost_utils

    gathered = multihost_utils.process_allgather(np.asarray(values, np.int64))
    return [int(v) for v in np.max(np.asarray(gathered).reshape(-1, len(values)), axis=0)]


def _shape_of(batch: Scenario) -> list[int]:
    """[B, N, L, P, T] of a host batch (T = 0 without a log)."""
    log_steps = np.shape(batch.log.valid)[1] if batch.log is not None else 0
    centers = np.shape(batch.road.centers)
    return [int(np.shape(batch.valid)[0]), batch.num_agents, centers[1], centers[2], int(log_steps)]


def agree_batch(batch: Scenario) -> tuple[Scenario, int]:
    """Pad a process-local host batch to the (N, L, P, T) every process agrees on (the
    maximum); returns it and the largest local row count over all processes."""
    if not isinstance(batch, Scenario):  # an id batch (drivesim.parallel.generated): rows only
        return batch, _max_over_processes([int(np.shape(batch.valid)[0])])[0]
    mine = _shape_of(batch)
    agreed = _max_over_processes(mine)
    if agreed[1:] == mine[1:]:
        return batch, agreed[0]
    rows = [jax.tree_util.tree_map(lambda leaf, i=i: np.asarray(leaf)[i], batch) for i in range(mine[0])]
    padded = [pad_scenario(s, agreed[1], agreed[2], agreed[3], agreed[4] or None) for s in rows]
    return stack_scenarios(padded), agreed[0]


def global_array(sharding, local: np.ndarray, local_devices: int, global_devices: int):
    """A global array from this process's rows ``local`` (leading axis split over devices)."""
    rows_per_device = local.shape[0] // local_devices
    shape = (rows_per_device * global_devices, *local.shape[1:])
    return jax.make_array_from_process_local_data(sharding, local, shape)
