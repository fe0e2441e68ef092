"""The three ways of running ``rollout_batch`` over a mesh: sharding, shard_map, pmap.

Every program maps (chunk batch, policy) to per-scenario metrics. Layouts of one dispatch
of ``D * c`` scenarios (``D`` devices, ``c`` per device):

- ``sharding`` / ``shard_map``: batch leaves (D*c, ...) split on axis 0 over ``"data"``;
  metrics (D*c,), sweep metrics (P, D*c) split on axis 1.
- ``pmap``: batch leaves (D, c, ...) with a leading device axis; metrics (D, c), sweep
  metrics (D, P, c).

The policy (or the stacked policies of a sweep, leading axis P) is replicated.
The batch argument is donated when ``donate`` is set (it is consumed by the dispatch).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
from jax.sharding import PartitionSpec

from drivesim.core import traced_cache
from drivesim.core.rollout import rollout_batch
from drivesim.core.types import METRIC_NAMES, METRICS_TREE, SimConfig
from drivesim.parallel import determinism
from drivesim.parallel.generated import materialize, searches
from drivesim.parallel.mesh import DATA, data_sharding, replicated

BACKENDS = ("sharding", "shard_map", "pmap")


@dataclass(frozen=True)
class ProgramKey:
    """What a compiled program depends on (besides shapes)."""

    backend: str
    sweep: bool
    donate: bool


def _rollout(batch, policy, config: SimConfig, devices: int):
    """The fast pass of rollout_batch of a Scenario batch, or of the scenarios an IdBatch
    generates (with the search switches its family declares)."""
    scenarios = materialize(batch)  # the fast pass: flagged rows are redone by parallel.exact_pass
    switches = searches(batch)
    return rollout_batch(scenarios, policy, config=config, devices=devices, searches=switches, exact=False)


def _batch_fn(sim: SimConfig, sweep: bool, devices: int = 1):
    """(batch (b, ...), policy) -> metrics (b,), or (P, b) for stacked policies; ``devices``:
    how many devices share the batch b (1 where the function sees one device's shard)."""
    one = partial(_rollout, config=sim, devices=devices)
    if not sweep:
        return one
    # one policy after another in a loop of the program (lax.map): the rollout is traced and
    # compiled once, as for one policy, instead of batched again over the policy axis
    return lambda batch, policies: jax.lax.map(lambda policy: one(batch, policy), policies)


def build_program(key: ProgramKey, mesh, sim: SimConfig):
    """The dispatchable program for ``key`` on ``mesh`` (a callable of (batch, policy))."""
    if key.backend not in BACKENDS:
        raise ValueError(f"ExecutorConfig.backend: unknown backend {key.backend!r}; known: {BACKENDS}")
    fn = _batch_fn(sim, key.sweep, devices=mesh.size if key.backend == "sharding" else 1)
    donate = (0,) if key.donate else ()
    out_axis = 1 if key.sweep else 0
    if key.backend == "sharding":
        return jax.jit(
            fn,
            in_shardings=(data_sharding(mesh), replicated(mesh)),
            out_shardings=data_sharding(mesh, ndim=out_axis + 1, axis=out_axis),
            donate_argnums=donate,
        )
    if key.backend == "shard_map":
        out_spec = PartitionSpec(None, DATA) if key.sweep else PartitionSpec(DATA)
        mapped = jax.shard_map(
            fn,
            mesh=mesh,
            in_specs=(PartitionSpec(DATA), PartitionSpec()),
            out_specs=out_spec,
            check_vma=False,
        )
        return jax.jit(mapped, donate_argnums=donate)
    return jax.pmap(
        fn, axis_name=DATA, in_axes=(0, None), devices=list(mesh.devices.flat), donate_argnums=donate
    )


def compile_program(key: ProgramKey, mesh, sim: SimConfig, chunk, policy):
    """:func:`build_program` compiled for (``chunk``, ``policy``): a callable of them. The
    ``sharding`` backend's program is traced once per machine (drivesim.core.traced_cache:
    a later process compiles it without tracing); the other backends trace it here."""
    program = build_program(key, mesh, sim)
    if key.backend != "sharding":
        return program.lower(chunk, policy).compile()
    out_axis = 1 if key.sweep else 0
    chunk_leaves = len(jax.tree_util.tree_leaves(chunk))
    policy_leaves = len(jax.tree_util.tree_leaves(policy))
    devices = tuple(d.id for d in mesh.devices.flat)
    return traced_cache.compile_flat(
        program,
        (chunk, policy),
        in_shardings=[data_sharding(mesh)] * chunk_leaves + [replicated(mesh)] * policy_leaves,
        out_shardings=[data_sharding(mesh, ndim=out_axis + 1, axis=out_axis)] * len(METRIC_NAMES),
        donate=(0,) if key.donate else (),
        description=f"executor {key} devices {devices} fma_free {determinism.active()}",
        sim=sim,
        out_tree=METRICS_TREE,
    )
