"""Procedural scenario families, deterministic per (seed, family, scenario id).

Scenario k is generated from a random stream derived from its global id (and the campaign
seed) only, so it is the same whatever batch, bucket, device or process generates it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from drivesim.core.types import AgentState, IDMParams, LogTrajectory, RoadMap, Scenario  # noqa: F401
from drivesim.scenarios.record import ScenarioRecord


@dataclass(frozen=True)
class FamilyConfig:
    """Options of a synthetic family.

    num_agents: fixed agent count, or None to draw it in [min_agents, max_agents].
    steps: episode length in steps (ragged_length draws it in [steps/2, steps]).
    """

    num_agents: int | None = None
    min_agents: int = 4
    max_agents: int = 128
    steps: int = 80
    ragged_length: bool = False
    seed: int = 0


def scenario_rng(family: str, scenario_id: int, seed: int = 0) -> np.random.Generator:
    """The random stream of one scenario: a function of (seed, family, id) only."""
    salt = zlib.crc32(family.encode())
    return np.random.default_rng(np.random.SeedSequence([seed, salt, int(scenario_id)]))


def draw_idm(rng: np.random.Generator, n: int) -> IDMParams:
    """Mixed traffic: IDM parameters spread around the published defaults; fields (n,)."""
    f = np.float32
    return IDMParams(
        v0=rng.uniform(25.0, 38.0, n).astype(f),
        T=rng.uniform(1.0, 2.2, n).astype(f),
        s0=rng.uniform(1.5, 3.0, n).astype(f),
        a=rng.uniform(0.6, 1.6, n).astype(f),
        b=rng.uniform(1.4, 2.5, n).astype(f),
        delta=np.full(n, 4.0, f),
    )


def draw_sizes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Box lengths and widths (n,): cars, with about 10% trucks."""
    truck = rng.random(n) < 0.1
    length = np.where(truck, rng.uniform(8.0, 12.0, n), rng.uniform(4.0, 5.2, n))
    width = np.where(truck, rng.uniform(2.3, 2.6, n), rng.uniform(1.7, 2.0, n))
    return length.astype(np.float32), width.astype(np.float32)


def agent_count(rng: np.random.Generator, cfg: FamilyConfig) -> int:
    if cfg.num_agents is not None:
        return int(cfg.num_agents)
    return int(rng.integers(cfg.min_agents, cfg.max_agents + 1))


def episode_length(rng: np.random.Generator, cfg: FamilyConfig) -> int:
    if cfg.ragged_length:
        return int(rng.integers(max(1, cfg.steps // 2), cfg.steps + 1))
    return cfg.steps


def place_in_lanes(rng, lane_of: np.ndarray, length: np.ndarray, speed: np.ndarray, start: float):
    """Arc positions (n,) for agents queued in their lanes without overlap, first at ``start``."""
    s = np.zeros(len(lane_of), np.float64)
    for lane in np.unique(lane_of):
        members = np.flatnonzero(lane_of == lane)
        pos = start + rng.uniform(0.0, 20.0)
        for k, i in enumerate(members):
            if k:
                prev = members[k - 1]
                pos += 0.5 * (length[prev] + length[i]) + 2.0 + speed[i] * rng.uniform(0.6, 1.8)
            s[i] = pos
    return s


def rotation(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])


def highway(scenario_id: int, cfg: FamilyConfig = FamilyConfig()) -> ScenarioRecord:
    """Straight multi-lane highway (2-5 lanes), one direction, at a random orientation."""
    rng = scenario_rng("highway", scenario_id, cfg.seed)
    n = agent_count(rng, cfg)
    lanes = int(rng.integers(2, 6))
    lane_width = float(rng.uniform(3.4, 3.8))
    road_length = 3000.0
    angle = float(rng.uniform(-np.pi, np.pi))
    rot = rotation(angle)
    length, width = draw_sizes(rng, n)
    speed = rng.uniform(18.0, 32.0, n)
    lane_of = rng.integers(0, lanes, n)
    along = place_in_lanes(rng, lane_of, length, speed, start=100.0)
    lateral = (lane_of - (lanes - 1) / 2.0) * lane_width + rng.normal(0.0, 0.15, n)
    xy = np.stack([along, lateral], axis=1) @ rot.T
    centers = np.zeros((lanes, 2, 2))
    for lane in range(lanes):
        offset = (lane - (lanes - 1) / 2.0) * lane_width
        centers[lane] = np.array([[0.0, offset], [road_length, offset]]) @ rot.T
    heading = angle + rng.normal(0.0, 0.01, n)
    ego = int(rng.integers(0, n))
    f = np.float32
    agents = AgentState(
        x=xy[:, 0].astype(f), y=xy[:, 1].astype(f), heading=heading.astype(f),
        speed=speed.astype(f), accel=np.zeros(n, f), length=length, width=width,
        valid=np.ones(n, bool), route=lane_of.astype(np.int32),
    )
    road = RoadMap(
        centers=centers.astype(f), widths=np.full(lanes, lane_width, f),
        lane_valid=np.ones(lanes, bool), sort_axis=rot[:, 0].astype(f),
        conflict_xy=np.zeros(2, f), conflict_radius=np.zeros((), f),
    )
    scenario = Scenario(
        agents=agents, idm=draw_idm(rng, n), stop_s=np.full(n, np.inf, f), road=road,
        ego_index=np.asarray(ego, np.int32), episode_length=np.asarray(episode_length(rng, cfg), np.int32),
        scenario_id=np.asarray(scenario_id, np.int32), valid=np.asarray(True), log=None,
    )
    return ScenarioRecord(scenario=scenario, family="highway", source="synthetic", name=f"highway-{scenario_id}")


FAMILIES = {"highway": highway}


def generate(family: str, scenario_id: int, cfg: FamilyConfig = FamilyConfig()) -> ScenarioRecord:
    """Scenario ``scenario_id`` of ``family``; raises ValueError for an unknown family."""
    try:
        make = FAMILIES[family]
    except KeyError:
        raise ValueError(f"unknown synthetic family {family!r}; known: {sorted(FAMILIES)}") from None
    return make(scenario_id, cfg)
