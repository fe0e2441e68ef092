"""Batches of scenario ids that the devices turn into scenarios inside the rollout program.

An :class:`IdBatch` goes through the Executor like a stacked host Scenario (padded, split
into dispatches, sharded on its leading axis) but holds only ids: the compiled program runs
``jit(generate ∘ rollout)``, so a synthetic batch never exists on the host.
"""

from __future__ import annotations

import collections
import functools
from dataclasses import field

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core import switches
from drivesim.core.neighbours import SearchesOn
from drivesim.core.types import Scenario, pytree_dataclass, replace
from drivesim.scenarios.families import FamilyConfig, family, generate_batch

# (family, size class) -> times a program generating it was traced (tests count recompiles)
TRACES: collections.Counter = collections.Counter()


@pytree_dataclass
class IdBatch:
    """Scenario ids of one or more families, all of one agent size class.

    scenario_id: (B,) int32 global ids (-1 for padding rows).
    valid: (B,) bool; False for padding rows.
    seed: (B,) uint32 campaign seed of each row.
    family_index: (B,) int32 row's family in ``families``.
    families: the family names (static: part of the compiled program); config: their
    FamilyConfig without the seed; size_class: agent slots of every scenario (static).
    """

    scenario_id: np.ndarray
    valid: np.ndarray
    seed: np.ndarray
    family_index: np.ndarray
    families: tuple[str, ...] = field(metadata={"static": True})
    config: FamilyConfig = field(metadata={"static": True})
    size_class: int = field(metadata={"static": True})
    log = None  # like a Scenario without logs

    @property
    def num_agents(self) -> int:
        return self.size_class

    @property
    def family(self) -> str:
        """The families' names joined by "+" (one name for a batch of one family)."""
        return "+".join(self.families)


def id_batch(
    family: str | tuple[str, ...],
    ids,
    seed: int,
    config: FamilyConfig,
    size_class: int,
    rows: int | None = None,
    family_index=None,
) -> IdBatch:
    """An IdBatch of ``ids`` padded with invalid rows up to ``rows`` (default len(ids)).
    ``family``: a name, or several names with each id's index among them (``family_index``,
    (len(ids),); rows of several families are generated apart and padded to one road shape,
    :func:`materialize`)."""
    families = (family,) if isinstance(family, str) else tuple(family)
    ids = np.asarray(ids, np.int64)
    rows = len(ids) if rows is None else rows
    scenario_id = np.full(rows, -1, np.int32)
    scenario_id[: len(ids)] = ids
    index = np.zeros(rows, np.int32)
    if family_index is not None:
        index[: len(ids)] = np.asarray(family_index, np.int32)
    return IdBatch(
        scenario_id=scenario_id,
        valid=scenario_id >= 0,
        seed=np.full(rows, np.uint32(seed), np.uint32),
        family_index=index,
        families=families,
        config=config.static(),
        size_class=int(size_class),
    )


def road_segments(batch) -> int:
    """Lane slots x segments per lane of the Scenarios ``batch`` stands for (an IdBatch: the
    largest of its families', from the generator's shapes, nothing computed; else its own)."""
    if not isinstance(batch, IdBatch):
        return batch.num_road_segments
    return _generated_segments(batch.families, batch.config, batch.size_class)


@functools.lru_cache(maxsize=64)
def _generated_segments(families: tuple[str, ...], config, size: int) -> int:
    ids = jax.ShapeDtypeStruct((1,), jnp.int32)
    shapes = [jax.eval_shape(lambda i, n=n: generate_batch(n, 0, i, config, size), ids) for n in families]
    return max(s.num_road_segments for s in shapes)


def materialize(batch):
    """The Scenario batch of an IdBatch, generated where this runs (inside the program);
    any other batch unchanged. Several families: each generates the rows of its own (the
    others' ids are -1) and its road is padded to the largest lane and point counts
    (drivesim.scenarios.batching's fills: lanes with zeros, polylines with their last point),
    then each row takes its family's scenario."""
    if not isinstance(batch, IdBatch):
        return batch
    TRACES[(batch.family, batch.size_class)] += 1
    parts = []
    for k, name in enumerate(batch.families):
        ids = (
            batch.scenario_id
            if len(batch.families) == 1
            else jnp.where(batch.family_index == k, batch.scenario_id, -1)
        )
        parts.append(generate_batch(name, batch.seed, ids, batch.config, batch.size_class))
    scenarios: Scenario = parts[0] if len(parts) == 1 else _pick(batch.family_index, _same_roads(parts))
    return replace(scenarios, valid=scenarios.valid & batch.valid)


def _same_roads(parts: list[Scenario]) -> list[Scenario]:
    """``parts`` with every road padded to the largest lane (L) and point (P) counts."""
    lanes = max(p.road.centers.shape[1] for p in parts)
    points = max(p.road.centers.shape[2] for p in parts)
    out = []
    for p in parts:
        road = p.road
        centers = jnp.pad(
            road.centers, ((0, 0), (0, 0), (0, points - road.centers.shape[2]), (0, 0)), mode="edge"
        )
        grow = ((0, 0), (0, lanes - road.centers.shape[1]))
        road = replace(
            road,
            centers=jnp.pad(centers, grow + ((0, 0), (0, 0))),
            widths=jnp.pad(road.widths, grow),
            lane_valid=jnp.pad(road.lane_valid, grow),
        )
        out.append(replace(p, road=road))
    return out


def _pick(index, parts: list[Scenario]) -> Scenario:
    """Row b of the result is row b of ``parts[index[b]]``; ``index`` (B,)."""

    def one(*leaves):
        out = leaves[0]
        for k, leaf in enumerate(leaves[1:], start=1):
            out = jnp.where((index == k).reshape(index.shape + (1,) * (leaf.ndim - 1)), leaf, out)
        return out

    return jax.tree_util.tree_map(one, *parts)


def searches(batch) -> SearchesOn | None:
    """The search switches its families declare (``SEARCHES``, and ``most_bent`` where a
    family bounds its agents on bent routes; fixed in its program, core.switches), the union
    over several families; None for any other batch (decided in each step)."""
    if not isinstance(batch, IdBatch):
        return None
    zone = bends = False
    rows: list[int | None] = []
    for name in batch.families:
        module = family(name)
        z, b = module.SEARCHES
        zone, bends = zone or z, bends or b
        if b:
            most_bent = getattr(module, "most_bent", None)
            rows.append(None if most_bent is None else most_bent(batch.size_class))
    most = None if not rows or None in rows else max(r for r in rows if r is not None)
    return switches.fixed(zone, bends, most)
