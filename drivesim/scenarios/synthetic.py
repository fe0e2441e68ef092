"""Procedural scenario families, deterministic per (seed, family, scenario id).

Scenario k is generated from a random stream derived from its global id (and the campaign
seed) only, so it is the same whatever batch, bucket, device or process generates it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from drivesim.core.types import AgentState, IDMParams, LogTrajectory, RoadMap, Scenario, replace  # noqa: F401
from drivesim.scenarios import geometry
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
        x=xy[:, 0].astype(f),
        y=xy[:, 1].astype(f),
        heading=heading.astype(f),
        speed=speed.astype(f),
        accel=np.zeros(n, f),
        length=length,
        width=width,
        valid=np.ones(n, bool),
        route=lane_of.astype(np.int32),
    )
    road = RoadMap(
        centers=centers.astype(f),
        widths=np.full(lanes, lane_width, f),
        lane_valid=np.ones(lanes, bool),
        sort_axis=rot[:, 0].astype(f),
        conflict_xy=np.zeros(2, f),
        conflict_radius=np.zeros((), f),
    )
    scenario = Scenario(
        agents=agents,
        idm=draw_idm(rng, n),
        stop_s=np.full(n, np.inf, f),
        road=road,
        ego_index=np.asarray(ego, np.int32),
        episode_length=np.asarray(episode_length(rng, cfg), np.int32),
        scenario_id=np.asarray(scenario_id, np.int32),
        valid=np.asarray(True),
        log=None,
    )
    name = f"highway-{scenario_id}"
    return ScenarioRecord(scenario=scenario, family="highway", source="synthetic", name=name)


def log_agent_count(rng: np.random.Generator, cfg: FamilyConfig) -> int:
    """Agent count drawn log-uniformly in [min_agents, max_agents] (every octave of sizes
    equally likely, so batches are genuinely ragged), or cfg.num_agents."""
    if cfg.num_agents is not None:
        return int(cfg.num_agents)
    lo, hi = np.log(cfg.min_agents), np.log(cfg.max_agents + 1)
    return int(np.clip(np.floor(np.exp(rng.uniform(lo, hi))), cfg.min_agents, cfg.max_agents))


@dataclass(frozen=True)
class _Layout:
    """Agents and routes of a family in its local frame (before rotation).

    routes: list of (P, 2) polylines; widths (L,); xy (n, 2); heading, speed, stop_s,
    length, width (n,); route (n,) int.
    """

    routes: list
    widths: np.ndarray
    xy: np.ndarray
    heading: np.ndarray
    speed: np.ndarray
    route: np.ndarray
    stop_s: np.ndarray
    length: np.ndarray
    width: np.ndarray
    sort_axis: np.ndarray
    conflict_xy: np.ndarray
    conflict_radius: float


def _assemble(rng, family: str, scenario_id: int, cfg: FamilyConfig, lay: _Layout, idm: IDMParams):
    """Rotate a layout by a random angle and build its ScenarioRecord."""
    f = np.float32
    rot = rotation(float(rng.uniform(-np.pi, np.pi)))
    angle = np.arctan2(rot[1, 0], rot[0, 0])
    n = len(lay.speed)
    points = max(len(r) for r in lay.routes)
    centers = np.stack([np.concatenate([r, np.repeat(r[-1:], points - len(r), 0)]) for r in lay.routes])
    xy = lay.xy @ rot.T
    agents = AgentState(
        x=xy[:, 0].astype(f),
        y=xy[:, 1].astype(f),
        heading=(lay.heading + angle).astype(f),
        speed=lay.speed.astype(f),
        accel=np.zeros(n, f),
        length=lay.length,
        width=lay.width,
        valid=np.ones(n, bool),
        route=lay.route.astype(np.int32),
    )
    road = RoadMap(
        centers=(centers @ rot.T).astype(f),
        widths=np.asarray(lay.widths, f),
        lane_valid=np.ones(len(lay.routes), bool),
        sort_axis=(rot @ lay.sort_axis).astype(f),
        conflict_xy=(rot @ lay.conflict_xy).astype(f),
        conflict_radius=np.asarray(lay.conflict_radius, f),
    )
    scenario = Scenario(
        agents=agents,
        idm=idm,
        stop_s=lay.stop_s.astype(f),
        road=road,
        ego_index=np.asarray(int(rng.integers(0, n)), np.int32),
        episode_length=np.asarray(episode_length(rng, cfg), np.int32),
        scenario_id=np.asarray(scenario_id, np.int32),
        valid=np.asarray(True),
        log=None,
    )
    name = f"{family}-{scenario_id}"
    return ScenarioRecord(scenario=scenario, family=family, source="synthetic", name=name)


def _queue(rng, length: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """Arc offsets (n,) <= 0 of a single-lane queue whose head (index argmax) is at 0."""
    s = place_in_lanes(rng, np.zeros(len(length), int), length, speed, start=0.0)
    return s - s.max() if len(s) else s


def _calm_queue(offsets: np.ndarray, length: np.ndarray, speed: np.ndarray, head_gap: float) -> np.ndarray:
    """Speeds (n,) capped so every agent of a queue (head last) can stop behind the one
    ahead (or the head before a stop line ``head_gap`` ahead) at 3 m/s^2."""
    speed = speed.copy()
    ahead_speed, gap = 0.0, head_gap
    for i in range(len(offsets) - 1, -1, -1):
        if i < len(offsets) - 1:
            gap = offsets[i + 1] - offsets[i] - 0.5 * (length[i] + length[i + 1])
            ahead_speed = speed[i + 1]
        speed[i] = min(speed[i], ahead_speed + np.sqrt(2.0 * 3.0 * max(gap - 2.0, 0.0)))
    return speed


PASSED = -1.0e6  # stop_s of agents whose route never meets the conflict zone (no stop, no priority)


def merge(scenario_id: int, cfg: FamilyConfig = FamilyConfig()) -> ScenarioRecord:
    """On-ramp joining the rightmost lane of a 1-4 lane main road.

    The ramp route is one polyline that tapers into the rightmost main lane and continues
    along it, so IDM finds leaders across the merge. Ramp agents yield at a stop line
    before the merge zone while a rightmost-lane agent is near it (those have priority).
    """
    rng = scenario_rng("merge", scenario_id, cfg.seed)
    n = log_agent_count(rng, cfg)
    w = float(rng.uniform(3.4, 3.8))
    n_ramp = int(np.clip(round(n * rng.uniform(0.12, 0.3)), 1, min(24, n - 1)))
    n_main = n - n_ramp
    lanes = min(4, max(int(rng.integers(1, 4)), int(np.ceil(n_main / 40))))
    length, width = draw_sizes(rng, n)
    speed = np.concatenate([rng.uniform(14.0, 28.0, n_main), rng.uniform(8.0, 16.0, n_ramp)])
    lane_of = rng.integers(0, lanes, n_main)
    along = place_in_lanes(rng, lane_of, length[:n_main], speed[:n_main], start=0.0)
    x_merge = 0.5 * along.max() + float(rng.uniform(40.0, 140.0))
    road_end = along.max() + 800.0
    routes = [np.array([[-300.0, k * w], [road_end, k * w]]) for k in range(lanes)]
    ramp = np.array([[x_merge - 1000.0, -60.0], [x_merge - 110.0, -1.3 * w], [x_merge, 0.0], [road_end, 0.0]])
    routes.append(ramp)
    stop_x = x_merge - 60.0
    cum = geometry.arc_lengths(ramp)
    s_stop = cum[1] + (stop_x - ramp[1, 0]) / (ramp[2, 0] - ramp[1, 0]) * (cum[2] - cum[1])
    head = s_stop - float(rng.uniform(30.0, 90.0)) - 0.5 * length[n_main:]
    ramp_s = head + _queue(rng, length[n_main:], speed[n_main:])
    ramp_xy, ramp_heading = geometry.point_along(ramp, ramp_s)
    xy = np.concatenate([np.stack([along, lane_of * w + rng.normal(0.0, 0.1, n_main)], 1), ramp_xy])
    heading = np.concatenate([rng.normal(0.0, 0.01, n_main), ramp_heading])
    stop_s = np.concatenate([np.where(lane_of == 0, np.inf, PASSED), np.full(n_ramp, s_stop)])
    lay = _Layout(
        routes=routes,
        widths=np.full(lanes + 1, w),
        xy=xy,
        heading=heading,
        speed=speed,
        route=np.concatenate([lane_of, np.full(n_ramp, lanes)]),
        stop_s=stop_s,
        length=length,
        width=width,
        sort_axis=np.array([1.0, 0.0]),
        conflict_xy=np.array([x_merge - 30.0, 0.0]),
        conflict_radius=30.0,
    )
    return _assemble(rng, "merge", scenario_id, cfg, lay, draw_idm(rng, n))


def intersection(scenario_id: int, cfg: FamilyConfig = FamilyConfig()) -> ScenarioRecord:
    """Two two-way roads crossing (unsignalised): the major road A has priority; agents on
    the minor road B approach a stop line and yield while an A agent is near the junction.
    1-2 lanes per direction, straight routes, urban speeds."""
    rng = scenario_rng("intersection", scenario_id, cfg.seed)
    n = log_agent_count(rng, cfg)
    w = float(rng.uniform(3.2, 3.6))
    beta = float(rng.uniform(np.radians(70.0), np.radians(110.0)))
    lanes_a, lanes_b = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    radius = float(np.hypot(lanes_a * w, lanes_b * w) / np.sin(beta) + 2.0)
    n_b = int(np.clip(round(n * rng.uniform(0.25, 0.5)), 1, n - 1))
    length, width = draw_sizes(rng, n)
    minor = np.arange(n) >= n - n_b
    speed = np.where(minor, rng.uniform(0.0, 8.0, n), rng.uniform(8.0, 16.0, n))
    # Lanes: (road angle, direction sign, lateral offset index); road A routes first.
    roads = ((0.0, lanes_a), (beta, lanes_b))
    lane_defs = [(a, d, k) for a, count in roads for d in (1, -1) for k in range(count)]
    count_a = 2 * lanes_a
    route = np.where(minor, rng.integers(count_a, len(lane_defs), n), rng.integers(0, count_a, n))
    rel = np.zeros(n)
    for lane in np.unique(route):
        members = np.flatnonzero(route == lane)
        offsets = _queue(rng, length[members], speed[members])
        if minor[members[0]]:
            gap = float(rng.uniform(8.0, 40.0))
            speed[members] = _calm_queue(offsets, length[members], speed[members], gap)
            rel[members] = -radius - gap - 0.5 * length[members[-1]] + offsets
        else:
            rel[members] = float(rng.uniform(-60.0, 80.0)) + offsets
    half = max(300.0, -rel.min() + 150.0)
    routes, xy, heading = [], np.zeros((n, 2)), np.zeros(n)
    for index, (angle, sign, k) in enumerate(lane_defs):
        u = sign * np.array([np.cos(angle), np.sin(angle)])
        right = np.array([u[1], -u[0]]) * (k + 0.5) * w
        routes.append(np.stack([right - half * u, right + half * u]))
        members = route == index
        xy[members] = right + rel[members, None] * u
        heading[members] = np.arctan2(u[1], u[0])
    diag = np.array([1.0 + np.cos(beta), np.sin(beta)])
    lay = _Layout(
        routes=routes,
        widths=np.full(len(lane_defs), w),
        xy=xy,
        heading=heading,
        speed=speed,
        route=route,
        stop_s=np.where(minor, half - radius, np.inf),
        length=length,
        width=width,
        sort_axis=diag / np.linalg.norm(diag),
        conflict_xy=np.zeros(2),
        conflict_radius=radius,
    )
    idm = draw_idm(rng, n)
    idm = replace(idm, v0=rng.uniform(11.0, 17.0, n).astype(np.float32))
    return _assemble(rng, "intersection", scenario_id, cfg, lay, idm)


FAMILIES = {"highway": highway, "merge": merge, "intersection": intersection}


def generate(family: str, scenario_id: int, cfg: FamilyConfig = FamilyConfig()) -> ScenarioRecord:
    """Scenario ``scenario_id`` of ``family``; raises ValueError for an unknown family."""
    try:
        make = FAMILIES[family]
    except KeyError:
        raise ValueError(f"unknown synthetic family {family!r}; known: {sorted(FAMILIES)}") from None
    return make(scenario_id, cfg)
