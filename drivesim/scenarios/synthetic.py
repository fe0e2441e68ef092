"""Synthetic scenarios on the host: the on-device families (``drivesim.scenarios.families``)
generated in batches, brought back and cut to their real agents and lanes as ScenarioRecords.

Scenario k is a function of (seed, family, k) only, so the record here is the scenario a
campaign generates on the devices (padding it back to its size class gives the same arrays).
Campaigns over synthetic sources never come through here (see drivesim.pipeline.generated);
this is for stores, tests, training and library use.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np

from drivesim.core.types import AgentState, IDMParams, RoadMap, Scenario
from drivesim.scenarios import families as fam
from drivesim.scenarios.batching import SIZE_CLASSES, size_class
from drivesim.scenarios.families.common import FamilyConfig
from drivesim.scenarios.record import ScenarioRecord

__all__ = [
    "FAMILIES",
    "FamilyConfig",
    "generate",
    "generate_many",
    "generate_positions",
    "highway",
    "intersection",
    "merge",
]

BLOCK = 64  # id batches are padded to a multiple of this (few compiled shapes)
DEFAULT = FamilyConfig()


@partial(jax.jit, static_argnames=("name", "cfg", "size"))
def _generate(name: str, seed, ids, cfg: FamilyConfig, size: int) -> Scenario:
    return fam.generate_batch(name, seed, ids, cfg, size)


def size_classes(counts: np.ndarray) -> np.ndarray:
    """Agent size class (B,) of each real agent count (B,) (ScenarioError past the largest)."""
    counts = np.asarray(counts)
    if counts.size and counts.max() > SIZE_CLASSES[-1]:
        size_class(int(counts.max()))  # raises, naming the count
    return np.asarray(SIZE_CLASSES)[np.searchsorted(SIZE_CLASSES, np.maximum(counts, 1))]


def generate_many(family: str, ids, cfg: FamilyConfig = DEFAULT) -> list[ScenarioRecord]:
    """Records of scenarios ``ids`` of ``family`` (in the order given), generated on the
    default device in one batch of the size class of ``cfg``'s largest agent count
    (:func:`largest_class`; past the largest class, of the largest among ``ids``): a scenario's
    real agents and lanes do not depend on the slots it is generated in (bit for bit,
    tests/scenarios/test_synthetic.py), so a family compiles one program per number of
    BLOCK-id blocks asked for at once, whatever the ids' agent counts."""
    module = fam.family(family)
    ids = np.asarray(ids, np.int64).reshape(-1)
    if not ids.size:
        return []
    size = largest_class(cfg) or int(size_classes(fam.agent_counts(family, ids, cfg)).max())
    chosen = ids.astype(np.int32)
    padded = np.concatenate([chosen, np.repeat(chosen[-1:], -len(chosen) % BLOCK)])
    batch = jax.device_get(_generate(family, np.uint32(cfg.seed), padded, cfg.static(), size))
    return [to_record(batch, k, family, module.POINTS) for k in range(len(ids))]


def largest_class(cfg: FamilyConfig) -> int | None:
    """The size class of the most agents ``cfg`` draws (its fixed count, or max_agents), so
    of every scenario it draws; None past the largest class (the ids' own counts decide,
    and one past it is refused)."""
    most = cfg.num_agents if cfg.num_agents is not None else cfg.max_agents
    return size_class(max(most, 1)) if most <= SIZE_CLASSES[-1] else None


def generate_positions(
    families: list[str], count: int, cfg: FamilyConfig = DEFAULT, first_id: int = 0, block: int = 4096
):
    """Records of positions 0..count-1 in order (position p: family ``families[p % F]``, id
    ``first_id + p``, as SyntheticSource), generated on the device ``block`` positions at a time."""
    for start in range(0, count, block):
        positions = np.arange(start, min(start + block, count))
        out: list[ScenarioRecord | None] = [None] * len(positions)
        for k, name in enumerate(families):
            rows = np.flatnonzero(positions % len(families) == k)
            if rows.size:
                for row, record in zip(
                    rows, generate_many(name, first_id + positions[rows], cfg), strict=True
                ):
                    out[row] = record
        yield from out


def to_record(batch: Scenario, row: int, family: str, points: int) -> ScenarioRecord:
    """Row ``row`` of a host batch from the generator, cut to its real agents, lanes and
    ``points`` points per lane."""
    take = lambda tree, n: jax.tree_util.tree_map(lambda a: np.asarray(a[row][:n]), tree)  # noqa: E731
    n = int(np.asarray(batch.agents.valid[row]).sum())
    lanes = int(np.asarray(batch.road.lane_valid[row]).sum())
    road = batch.road
    scalar = lambda a, dtype: np.asarray(a[row], dtype)  # noqa: E731
    scenario = Scenario(
        agents=take(batch.agents, n),
        idm=take(batch.idm, n),
        stop_s=np.asarray(batch.stop_s[row][:n]),
        road=RoadMap(
            centers=np.asarray(road.centers[row][:lanes, :points]),
            widths=np.asarray(road.widths[row][:lanes]),
            lane_valid=np.asarray(road.lane_valid[row][:lanes]),
            sort_axis=np.asarray(road.sort_axis[row]),
            conflict_xy=np.asarray(road.conflict_xy[row]),
            conflict_radius=scalar(road.conflict_radius, np.float32),
        ),
        ego_index=scalar(batch.ego_index, np.int32),
        episode_length=scalar(batch.episode_length, np.int32),
        scenario_id=scalar(batch.scenario_id, np.int32),
        valid=scalar(batch.valid, bool),
        log=None,
        signal=None if batch.signal is None else take(batch.signal, n),
    )
    assert isinstance(scenario.agents, AgentState) and isinstance(scenario.idm, IDMParams)
    sid = int(scenario.scenario_id)
    return ScenarioRecord(scenario=scenario, family=family, source="synthetic", name=f"{family}-{sid}")


def generate(family: str, scenario_id: int, cfg: FamilyConfig = DEFAULT) -> ScenarioRecord:
    """Scenario ``scenario_id`` of ``family``; raises ValueError for an unknown family."""
    return generate_many(family, [scenario_id], cfg)[0]


def highway(scenario_id: int, cfg: FamilyConfig = DEFAULT) -> ScenarioRecord:
    """Straight multi-lane highway (see drivesim.scenarios.families.highway)."""
    return generate("highway", scenario_id, cfg)


def merge(scenario_id: int, cfg: FamilyConfig = DEFAULT) -> ScenarioRecord:
    """On-ramp merge (see drivesim.scenarios.families.merge)."""
    return generate("merge", scenario_id, cfg)


def intersection(scenario_id: int, cfg: FamilyConfig = DEFAULT) -> ScenarioRecord:
    """Unsignalised crossing (see drivesim.scenarios.families.intersection)."""
    return generate("intersection", scenario_id, cfg)


# family name -> generator (scenario_id, cfg) -> ScenarioRecord, for every on-device family
FAMILIES = {name: partial(generate, name) for name in fam.FAMILIES}
