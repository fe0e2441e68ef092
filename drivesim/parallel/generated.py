"""Batches of scenario ids that the devices turn into scenarios inside the rollout program.

An :class:`IdBatch` goes through the Executor like a stacked host Scenario (padded, split
into dispatches, sharded on its leading axis) but holds only ids: the compiled program runs
``jit(generate ∘ rollout)``, so a synthetic batch never exists on the host.
"""

from __future__ import annotations

import collections
from dataclasses import field

import numpy as np

from drivesim.core import switches
from drivesim.core.neighbours import SearchesOn
from drivesim.core.types import Scenario, pytree_dataclass, replace
from drivesim.scenarios.families import FamilyConfig, family, generate_batch

# (family, size class) -> times a program generating it was traced (tests count recompiles)
TRACES: collections.Counter = collections.Counter()


@pytree_dataclass
class IdBatch:
    """Scenario ids of one family and agent size class.

    scenario_id: (B,) int32 global ids (-1 for padding rows).
    valid: (B,) bool; False for padding rows.
    seed: (B,) uint32 campaign seed of each row.
    family: family name; config: its FamilyConfig without the seed; size_class: agent
    slots of every scenario (static: part of the compiled program).
    """

    scenario_id: np.ndarray
    valid: np.ndarray
    seed: np.ndarray
    family: str = field(metadata={"static": True})
    config: FamilyConfig = field(metadata={"static": True})
    size_class: int = field(metadata={"static": True})
    log = None  # like a Scenario without logs

    @property
    def num_agents(self) -> int:
        return self.size_class


def id_batch(
    family: str, ids, seed: int, config: FamilyConfig, size_class: int, rows: int | None = None
) -> IdBatch:
    """An IdBatch of ``ids`` padded with invalid rows up to ``rows`` (default len(ids))."""
    ids = np.asarray(ids, np.int64)
    rows = len(ids) if rows is None else rows
    scenario_id = np.full(rows, -1, np.int32)
    scenario_id[: len(ids)] = ids
    return IdBatch(
        scenario_id=scenario_id,
        valid=scenario_id >= 0,
        seed=np.full(rows, np.uint32(seed), np.uint32),
        family=family,
        config=config.static(),
        size_class=int(size_class),
    )


def materialize(batch):
    """The Scenario batch of an IdBatch, generated where this runs (inside the program);
    any other batch unchanged."""
    if not isinstance(batch, IdBatch):
        return batch
    TRACES[(batch.family, batch.size_class)] += 1
    scenarios: Scenario = generate_batch(
        batch.family, batch.seed, batch.scenario_id, batch.config, batch.size_class
    )
    return replace(scenarios, valid=scenarios.valid & batch.valid)


def searches(batch) -> SearchesOn | None:
    """The search switches an IdBatch's family declares (``SEARCHES``, and ``most_bent``
    where it bounds its agents on bent routes; fixed in its program, core.switches); None
    for any other batch (decided in each step)."""
    if not isinstance(batch, IdBatch):
        return None
    module = family(batch.family)
    most_bent = getattr(module, "most_bent", None)
    zone, bends = module.SEARCHES
    return switches.fixed(zone, bends, None if most_bent is None else most_bent(batch.size_class))
