"""Devices, meshes and shardings; padding host batches to a device multiple.

The executor lays a batch of ``B`` scenarios out as ``n_chunks`` dispatches of ``D * c``
scenarios (``D`` devices, ``c`` scenarios per device per dispatch). Padding scenarios are
copies of the batch's last scenario with ``valid=False`` and ``scenario_id=-1``; the engine
leaves them untouched and the executor drops them from results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from drivesim.core.types import Scenario, replace

DATA = "data"  # the scenario axis of the mesh


def select_devices(count: int | None = None, exclude: frozenset[int] = frozenset()) -> list:
    """The first ``count`` global devices (all when None), ordered by (process, id),
    skipping the device ids in ``exclude``. Raises ValueError if too few are left."""
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    devices = [d for d in devices if d.id not in exclude]
    if count is None:
        return devices
    if count < 1 or count > len(devices):
        raise ValueError(f"ExecutorConfig.devices: asked for {count} devices, {len(devices)} available")
    return devices[:count]


def make_data_mesh(devices: list) -> Mesh:
    """A 1-D mesh with axis ``"data"`` over ``devices`` (in that order)."""
    return Mesh(np.asarray(devices, dtype=object), (DATA,))


def data_sharding(mesh: Mesh, ndim: int = 1, axis: int = 0) -> NamedSharding:
    """Sharding of an ``ndim`` array split along ``axis`` over the mesh's data axis."""
    spec: list[str | None] = [None] * ndim
    spec[axis] = DATA
    return NamedSharding(mesh, PartitionSpec(*spec))


def replicated(mesh: Mesh) -> NamedSharding:
    """Fully replicated sharding over ``mesh``."""
    return NamedSharding(mesh, PartitionSpec())


@dataclass(frozen=True)
class Layout:
    """How a host batch is split into dispatches.

    rows: real scenarios (local to this process); devices: local device count D;
    chunk: scenarios per device per dispatch c; n_chunks: dispatches.
    """

    rows: int
    devices: int
    chunk: int
    n_chunks: int

    @property
    def per_dispatch(self) -> int:
        """Local scenarios in one dispatch, D * c."""
        return self.devices * self.chunk

    @property
    def padded_rows(self) -> int:
        return self.per_dispatch * self.n_chunks


# Fewest scenarios a device gets per dispatch: XLA compiles a program of one row per device
# (the vmapped axis of size 1 dropped) into other kernels, whose last bits differ from every
# program of 2 rows or more (max_jerk of 1 of 160 highway scenarios, batch 8 on 8 devices
# against 16 to 160); with 2 or more, every batch size gives the same bits per scenario.
MIN_ROWS_PER_DEVICE = 2


def plan_layout(rows: int, devices: int, chunk: int | None) -> Layout:
    """Layout of ``rows`` scenarios on ``devices`` devices with at most ``chunk`` per device
    per dispatch (None: all in one dispatch), and at least MIN_ROWS_PER_DEVICE. Any row count
    works: the tail is padded."""
    per_device = max(MIN_ROWS_PER_DEVICE, math.ceil(rows / devices))
    c = per_device if chunk is None else max(MIN_ROWS_PER_DEVICE, min(int(chunk), per_device))
    return Layout(rows=rows, devices=devices, chunk=c, n_chunks=math.ceil(per_device / c))


def pad_rows(batch: Scenario, size: int) -> Scenario:
    """Pad a host batch (leading axis B) to ``size`` rows with invalid copies of its last row."""
    rows = int(np.shape(batch.valid)[0])
    if rows == size:
        return batch
    if rows > size or rows == 0:
        raise ValueError(f"cannot pad a batch of {rows} scenarios to {size}")

    def pad(leaf):
        leaf = np.asarray(leaf)
        return np.concatenate([leaf, np.repeat(leaf[-1:], size - rows, axis=0)], axis=0)

    padded = jax.tree_util.tree_map(pad, batch)
    valid = np.asarray(padded.valid).copy()
    valid[rows:] = False
    ids = np.asarray(padded.scenario_id).copy()
    ids[rows:] = -1
    return replace(padded, valid=valid, scenario_id=ids)


def slice_rows(batch: Scenario, start: int, stop: int) -> Scenario:
    """Rows [start, stop) of a host batch."""
    return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[start:stop], batch)


def batch_rows(batch: Scenario) -> int:
    """Leading batch size B of a (host or device) batch."""
    return int(np.shape(batch.valid)[0])
