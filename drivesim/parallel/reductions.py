"""Aggregate metrics reduced on the devices: per-device partial sums, then an all-reduce.

The reducer is a jitted ``shard_map``: each device reduces its own rows of the per-scenario
metrics (padding rows masked out by ``valid``), then ``psum`` / ``pmin`` / ``pmax`` over the
mesh's data axis leaves a replicated result on every device. Nothing is gathered onto one
device. Partials of several dispatches are added on the devices too; only the final
handful of scalars (or (P,) vectors for a policy sweep) reaches the host.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from drivesim.core.types import RolloutMetrics
from drivesim.parallel.mesh import DATA
from drivesim.parallel.programs import ProgramCache

SUMS = ("ego_collided", "offroad", "progress_m", "max_jerk", "has_nan", "window_overflow", "collision_pairs")
MINS = ("min_ttc_s",)
MAXS = ("collision_pairs",)
# the reducers of this process, one per (mesh, layouts, kept axis); least recently used dropped
REDUCERS = ProgramCache(64)


def _local_partials(metrics: RolloutMetrics, valid, keep_axis: int | None) -> dict:
    """Sums / mins / maxes of one device's rows, over every axis but ``keep_axis``."""
    axes = tuple(a for a in range(valid.ndim) if a != keep_axis)
    count = jnp.sum(valid.astype(jnp.int32), axis=axes)
    out = {"count": count}
    for name in SUMS:
        value = getattr(metrics, name)
        dtype = jnp.int32 if value.dtype in (jnp.bool_, jnp.int32) else jnp.float32
        masked = jnp.where(valid, value.astype(dtype), jnp.zeros((), dtype))
        out[f"sum_{name}"] = jnp.sum(masked, axis=axes)
    for name in MINS:
        value = getattr(metrics, name)
        out[f"min_{name}"] = jnp.min(jnp.where(valid, value, jnp.inf), axis=axes)
    for name in MAXS:
        value = getattr(metrics, name)
        out[f"max_{name}"] = jnp.max(jnp.where(valid, value, jnp.iinfo(jnp.int32).min), axis=axes)
    return out


def _all_reduce(partials: dict) -> dict:
    """Combine every device's partials across the data axis (all-reduce, replicated)."""
    out = {}
    for name, value in partials.items():
        if name.startswith("min_"):
            out[name] = jax.lax.pmin(value, DATA)
        elif name.startswith("max_"):
            out[name] = jax.lax.pmax(value, DATA)
        else:
            out[name] = jax.lax.psum(value, DATA)
    return out


def reducer(mesh, metric_spec: PartitionSpec, valid_spec: PartitionSpec, keep_axis: int | None):
    """Jitted (metrics, valid) -> replicated partials (built once per arguments, kept in
    :data:`REDUCERS`).

    Metric leaves are laid out as ``metric_spec``, the scenario mask ``valid`` (padding rows
    False) as ``valid_spec``; ``keep_axis`` is the policy axis of a sweep (kept: the
    partials are (P,), and ``valid`` lacks that axis), or None (the partials are scalars).
    """
    key = (mesh, metric_spec, valid_spec, keep_axis)
    return REDUCERS.get(key, lambda: _build_reducer(mesh, metric_spec, valid_spec, keep_axis))


def _build_reducer(mesh, metric_spec: PartitionSpec, valid_spec: PartitionSpec, keep_axis: int | None):

    def per_device(metrics, valid):
        if keep_axis is not None:
            valid = jnp.expand_dims(valid, keep_axis)
        valid = jnp.broadcast_to(valid, metrics.progress_m.shape)
        return _all_reduce(_local_partials(metrics, valid, keep_axis))

    mapped = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(metric_spec, valid_spec),
        out_specs=PartitionSpec(),
        check_vma=False,
    )
    return jax.jit(mapped)


@jax.jit
def combine(a: dict, b: dict) -> dict:
    """Partials of two dispatches combined (on the devices; replicated stays replicated)."""
    out = {}
    for name in a:
        if name.startswith("min_"):
            out[name] = jnp.minimum(a[name], b[name])
        elif name.startswith("max_"):
            out[name] = jnp.maximum(a[name], b[name])
        else:
            out[name] = a[name] + b[name]
    return out


def finalize(partials: dict) -> dict:
    """Host-side aggregate metrics from the replicated partials (floats, or (P,) arrays).

    Keys: scenarios, collision_rate, offroad_rate, mean_progress_m, mean_max_jerk,
    min_ttc_s, nan_count, overflow_count, mean_collision_pairs, max_collision_pairs.
    """
    host = {name: np.asarray(value) for name, value in partials.items()}
    count = host["count"].astype(np.float64)
    denom = np.maximum(count, 1.0)
    out = {
        "scenarios": count,
        "collision_rate": host["sum_ego_collided"] / denom,
        "offroad_rate": host["sum_offroad"] / denom,
        "mean_progress_m": host["sum_progress_m"] / denom,
        "mean_max_jerk": host["sum_max_jerk"] / denom,
        "min_ttc_s": host["min_min_ttc_s"].astype(np.float64),
        "nan_count": host["sum_has_nan"].astype(np.float64),
        "overflow_count": host["sum_window_overflow"].astype(np.float64),
        "mean_collision_pairs": host["sum_collision_pairs"] / denom,
        "max_collision_pairs": np.maximum(host["max_collision_pairs"], 0).astype(np.float64),
    }
    if count.ndim == 0:
        return {name: float(value) for name, value in out.items()}
    return {name: np.asarray(value, np.float64) for name, value in out.items()}
