"""A device runner whose program costs nothing: the host ceiling of a campaign.

:class:`NullDeviceRunner` is a :class:`drivesim.pipeline.devices.DeviceRunner` whose ``run``
replaces the rollout by one elementwise program over each dispatch's ``valid`` mask: every
metric of the real schema and dtype, one value per scenario row, derived from the row's
position in the batch (and its scenario id where the batch carries ids), no row flagged for the
exact fallback (parallel.exact_pass: engine work). Everything around it
is the real campaign: planning, sources, prefetch, ``put`` to the devices (sharded as the
executor shards), ``fetch`` (the executor's own), result tables, Parquet shards, shard
checks, ledger and progress. Its metrics mean nothing; its rate is the most a campaign of
that source can reach on this host, whatever the engine.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pyarrow as pa

from drivesim.core.types import METRIC_NAMES, RolloutMetrics
from drivesim.parallel.executor import DeviceResult
from drivesim.pipeline.devices import DeviceRunner
from drivesim.pipeline.results import SCHEMA

# each metric's kind, from the result schema (the columns the shards store)
_BOOL = {f.name for f in SCHEMA if f.name in METRIC_NAMES and pa.types.is_boolean(f.type)}
_FLOAT = {f.name for f in SCHEMA if f.name in METRIC_NAMES and pa.types.is_floating(f.type)}


@functools.partial(jax.jit, static_argnums=(2,))
def _null_metrics(valid: jax.Array, ids: jax.Array, policies: int) -> RolloutMetrics:
    """RolloutMetrics of one dispatch: leaves shaped like ``valid`` ((D*c,) or (D, c)),
    with a leading policy axis of ``policies`` when that is > 0."""
    seed = ids.astype(jnp.int32) + valid.astype(jnp.int32)

    def leaf(k: int, name: str) -> jax.Array:
        value = seed + k
        if name == "window_overflow":  # no row for the exact fallback: it is engine work
            out = jnp.zeros_like(valid)
        elif name in _BOOL:
            out = (value % 7) == 0
        elif name in _FLOAT:
            out = value.astype(jnp.float32) * 0.5
        else:
            out = value % 64
        return jnp.broadcast_to(out, (policies, *out.shape)) if policies else out

    return RolloutMetrics(**{name: leaf(k, name) for k, name in enumerate(METRIC_NAMES)})


class NullDeviceRunner(DeviceRunner):
    """DeviceRunner with the rollout replaced by :func:`_null_metrics` (same shapes, same
    sharding, same fetch)."""

    def run(self, dbatch):
        executor = self.executor
        sweep = self.spec.is_sweep
        policies = len(self.spec.params) if sweep else 0
        metrics = []
        for chunk, valid in zip(dbatch.chunks, dbatch.valid, strict=True):
            ids = getattr(chunk, "scenario_id", None)
            metrics.append(_null_metrics(valid, valid if ids is None else ids, policies))
        backend = executor.config.backend
        if sweep and backend == "pmap":  # pmap's sweep layout is (D, P, c)
            metrics = [jax.tree_util.tree_map(lambda a: jnp.moveaxis(a, 0, 1), m) for m in metrics]

        def redo() -> DeviceResult:
            return self.run(executor.put(dbatch.host))

        return DeviceResult(
            metrics=metrics,
            valid=dbatch.valid,
            layout=dbatch.layout,
            mesh=dbatch.mesh,
            backend=backend,
            sweep=sweep,
            host=dbatch.host,
            policy=self.policy,
            redo=redo,
        )


# the ``engine`` factory for :func:`drivesim.pipeline.campaign.run_campaign`: the class itself
null_engine = NullDeviceRunner


__all__ = ["NullDeviceRunner", "null_engine"]
