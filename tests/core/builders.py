"""Small hand-built host scenarios for the core tests (NumPy, unpadded).

Every builder returns a Scenario whose discrete decisions (leaders, yielding, collisions,
off-road) are far from their thresholds, so float32 and float64 runs agree.
"""

from __future__ import annotations

import numpy as np

from drivesim.core.types import (
    CYCLIST,
    IDM_DEFAULTS,
    PEDESTRIAN,
    VEHICLE,
    AgentState,
    IDMParams,
    RoadMap,
    Scenario,
    SignalPlan,
    replace,
)
from drivesim.scenarios.batching import pad_scenario, stack_scenarios
from drivesim.scenarios.synthetic import FamilyConfig, highway

F = np.float32
SHAPE = dict(num_agents=6, num_lanes=5, num_points=13)  # common padded shape (one compile per config)


def make_scenario(
    xy,
    heading,
    speed,
    route,
    centers,
    widths,
    ego,
    *,
    length=4.5,
    width=1.8,
    kind=0,
    stop_s=None,
    conflict=((0.0, 0.0), 0.0),
    sort_axis=(1.0, 0.0),
    accel=None,
    episode_length=40,
    idm=None,
    scenario_id=0,
) -> Scenario:
    """A host scenario from per-agent lists and lane polylines (L, P, 2)."""
    n = len(speed)
    full = lambda v: np.broadcast_to(np.asarray(v, F), (n,)).copy()  # noqa: E731
    xy = np.asarray(xy, F)
    agents = AgentState(
        x=xy[:, 0].copy(),
        y=xy[:, 1].copy(),
        heading=full(heading),
        speed=full(speed),
        accel=full(0.0 if accel is None else accel),
        length=full(length),
        width=full(width),
        valid=np.ones(n, bool),
        route=np.asarray(route, np.int32),
        kind=np.broadcast_to(np.asarray(kind, np.int32), (n,)).copy(),
    )
    idm = idm or IDMParams(**{k: np.full(n, v, F) for k, v in IDM_DEFAULTS.items()})
    road = RoadMap(
        centers=np.asarray(centers, F),
        widths=np.asarray(widths, F),
        lane_valid=np.ones(len(widths), bool),
        sort_axis=np.asarray(sort_axis, F),
        conflict_xy=np.asarray(conflict[0], F),
        conflict_radius=np.asarray(conflict[1], F),
    )
    return Scenario(
        agents=agents,
        idm=idm,
        stop_s=full(np.inf if stop_s is None else stop_s),
        road=road,
        ego_index=np.asarray(ego, np.int32),
        episode_length=np.asarray(episode_length, np.int32),
        scenario_id=np.asarray(scenario_id, np.int32),
        valid=np.asarray(True),
        log=None,
    )


def straight_lanes(num_lanes: int, lane_width: float = 3.6, length: float = 600.0) -> np.ndarray:
    """Lanes along +x, lane 0 at y=0, lane k at y = k * lane_width; (L, 2, 2)."""
    return np.array([[[0.0, k * lane_width], [length, k * lane_width]] for k in range(num_lanes)])


def highway_case(scenario_id: int, num_agents: int = 6, episode_length: int = 40) -> Scenario:
    """The synthetic highway family, small."""
    sc = highway(scenario_id, FamilyConfig(num_agents=num_agents, steps=episode_length)).scenario
    return sc


def curved_case() -> Scenario:
    """Two lanes on a left-hand arc (radius ~150 m, 60 degrees, 12 segments); 6 agents."""
    radius, lane_width = 150.0, 3.6
    angles = np.linspace(-np.pi / 2, -np.pi / 6, 13)
    centers = np.stack(
        [
            np.stack(
                [
                    (radius - k * lane_width) * np.cos(angles),
                    radius + (radius - k * lane_width) * np.sin(angles),
                ],
                -1,
            )
            for k in range(2)
        ]
    )
    xy, heading, route = [], [], []
    for lane, arcs in ((0, (8.0, 34.0, 61.0)), (1, (18.0, 45.0, 73.0))):
        r = radius - lane * lane_width
        for arc in arcs:
            phi = -np.pi / 2 + arc / r
            xy.append((r * np.cos(phi), radius + r * np.sin(phi) + 0.1 * (lane - 0.5)))
            heading.append(phi + np.pi / 2 + 0.01)
            route.append(lane)
    speed = [14.0, 16.0, 13.0, 15.0, 12.0, 17.0]
    return make_scenario(
        xy,
        heading,
        speed,
        route,
        centers,
        [lane_width] * 2,
        ego=1,
        sort_axis=(np.cos(np.pi / 6), np.sin(np.pi / 6)),
    )


def crossing_case(ego: int = 3) -> Scenario:
    """Main road along +x (priority) crossed at C=(200, 0) by a side road at 60 degrees whose
    agents yield (stop line 12 m before C) while main-road traffic is near."""
    c = np.array([200.0, 0.0])
    u = np.array([np.cos(np.pi / 3), np.sin(np.pi / 3)])
    centers = np.array([[[0.0, 0.0], [400.0, 0.0]], [c - 150.0 * u, c + 150.0 * u]])
    main = [(125.0, 0.0), (152.0, 0.1), (176.0, -0.1)]
    side_s = [112.0, 95.0, 77.0]
    side = [tuple(c - 150.0 * u + s * u + np.array([0.05, -0.03])) for s in side_s]
    heading = [0.0, 0.0, 0.0] + [np.pi / 3] * 3
    speed = [15.0, 14.0, 15.5, 9.0, 9.5, 8.5]
    stop = [np.inf] * 3 + [150.0 - 12.0] * 3
    return make_scenario(
        main + side,
        heading,
        speed,
        [0, 0, 0, 1, 1, 1],
        centers,
        [3.6, 3.6],
        ego=ego,
        stop_s=stop,
        conflict=(tuple(c), 8.0),
    )


def platoon_case(num_agents: int = 6) -> Scenario:
    """Two lanes, agents alternating lanes every 11 m: each leader is 2 sorted slots ahead."""
    xy = [(20.0 + 11.0 * i, 3.6 * (i % 2) + 0.05) for i in range(num_agents)]
    speed = [20.0 + 0.5 * (i % 3) for i in range(num_agents)]
    return make_scenario(
        xy, 0.0, speed, [i % 2 for i in range(num_agents)], straight_lanes(2), [3.6, 3.6], ego=2
    )


def abreast_case() -> Scenario:
    """Three agents abreast in three parallel lanes: each lane is its own route group, and the
    lanes are farther apart than the agents' lateral reach, so a window of 2 is proven exact
    (a sort on position alone would put all three within one box diagonal)."""
    xy = [(50.0, 0.0), (50.5, 3.6), (51.0, 7.2)]
    return make_scenario(xy, 0.0, [20.0, 20.0, 20.0], [0, 1, 2], straight_lanes(3), [3.6] * 3, ego=1)


def stopped_car_case(episode_length: int = 40, ego_accel: float = 0.0) -> Scenario:
    """Ego at x=50, 20 m/s, constant speed; a car stands at x=100 in the same lane, held at
    its stop line (stop_gap 1.3 m < s0) because the ego (priority) nears the conflict zone at
    x=130. Boxes 4.5 x 1.8: the boxes first overlap after step 22 (ego x = 96)."""
    stop_s = [np.inf, 100.0 + 2.25 + 1.3]
    return make_scenario(
        [(50.0, 0.0), (100.0, 0.0)],
        0.0,
        [20.0, 0.0],
        [0, 0],
        straight_lanes(1),
        [3.6],
        ego=0,
        stop_s=stop_s,
        conflict=((130.0, 0.0), 5.0),
        accel=[ego_accel, 0.0],
        episode_length=episode_length,
    )


def lone_ego_case(episode_length: int = 40) -> Scenario:
    """One agent (the ego) at x=10 on a single straight lane, 10 m/s."""
    return make_scenario(
        [(10.0, 0.0)],
        0.0,
        [10.0],
        [0],
        straight_lanes(1, length=1000.0),
        [3.6],
        ego=0,
        episode_length=episode_length,
    )


def with_nan(sc: Scenario, agent: int) -> Scenario:
    """Copy of a host scenario with agent ``agent``'s x set to NaN."""
    x = np.array(sc.agents.x)
    x[agent] = np.nan
    return replace(sc, agents=replace(sc.agents, x=x))


def pad(sc: Scenario, **shape) -> Scenario:
    """Pad to the common test shape (or ``shape``)."""
    s = {**SHAPE, **shape}
    return pad_scenario(sc, s["num_agents"], s["num_lanes"], s["num_points"], signals=s.get("signals"))


def batch(scenarios, **shape) -> Scenario:
    """Pad and stack host scenarios to the common test shape (all with a SignalPlan when one
    has signals)."""
    signals = any(sc.signal is not None for sc in scenarios)
    return stack_scenarios([pad(sc, signals=signals, **shape) for sc in scenarios])


def _idm(v0, a=None) -> IDMParams:
    """IDMParams with per-agent v0 (and a), the other parameters at IDM_DEFAULTS."""
    n = len(v0)
    p = {k: np.full(n, v, F) for k, v in IDM_DEFAULTS.items()}
    p["v0"] = np.asarray(v0, F)
    if a is not None:
        p["a"] = np.asarray(a, F)
    return IDMParams(**p)


def _street_with_crosswalk(x_walk: float) -> tuple[np.ndarray, list[float]]:
    """Two lanes along +x (y = 0, 3.6) and a crosswalk route along +y at x = x_walk."""
    walk = np.array([[[x_walk, -10.0], [x_walk, 20.0]]])
    return np.concatenate([straight_lanes(2), walk]), [3.6, 3.6, 3.0]


def vru_street_case() -> Scenario:
    """IDM traffic meeting road users: the ego (lane 0, x=30, 12 m/s) and, in lane 1, a car
    (x=15, 10 m/s) behind a cyclist (x=40, 5 m/s, IDM a=2.5 so the cyclist's 1.5 m/s^2 cap
    binds); a pedestrian (x=80, y=-3) walks up the crosswalk with v0=4 m/s, a=2 (capped to
    1.5 m/s^2 and 3 m/s). The ego brakes for the pedestrian in its lane, the car for the
    cyclist, the cyclist for the pedestrian once it enters lane 1."""
    centers, widths = _street_with_crosswalk(80.0)
    return make_scenario(
        [(30.0, 0.05), (15.0, 3.6), (40.0, 3.62), (80.0, -3.0)],
        [0.0, 0.0, 0.0, np.pi / 2],
        [12.0, 10.0, 5.0, 1.3],
        [0, 1, 1, 2],
        centers,
        widths,
        ego=0,
        length=[4.5, 4.5, 1.8, 0.5],
        width=[1.8, 1.8, 0.6, 0.6],
        kind=[VEHICLE, VEHICLE, CYCLIST, PEDESTRIAN],
        idm=_idm([15.0, 12.0, 6.0, 4.0], a=[0.73, 0.73, 2.5, 2.0]),
    )


def vru_hit_case() -> Scenario:
    """A constant-speed ego (lane 0, x=40, 15 m/s) hits a pedestrian walking up a crosswalk
    at x=70 (from y=-2.5, 1.3 m/s, v0=1.4) at about 1.8 s, then a cyclist riding ahead in
    its lane (x=85, 3 m/s, v0=3) at about 3.6 s; a car in lane 1 passes untouched."""
    centers, widths = _street_with_crosswalk(70.0)
    return make_scenario(
        [(40.0, 0.0), (70.0, -2.5), (85.0, 0.02), (60.0, 3.6)],
        [0.0, np.pi / 2, 0.0, 0.0],
        [15.0, 1.3, 3.0, 12.0],
        [0, 2, 0, 1],
        centers,
        widths,
        ego=0,
        length=[4.5, 0.5, 1.8, 4.5],
        width=[1.8, 0.6, 0.6, 1.8],
        kind=[VEHICLE, PEDESTRIAN, CYCLIST, VEHICLE],
        idm=_idm([15.0, 1.4, 3.0, 12.0]),
    )


def with_signal(sc: Scenario, line_s, *, cycle=60.0, offset=0.0, green=30.0, amber=4.0) -> Scenario:
    """Copy of a host scenario with a fixed-time signal: stop line ``line_s`` per agent
    (+inf: no signal) and one plan (green from ``offset``) for all."""
    n = sc.num_agents
    full = lambda v: np.broadcast_to(np.asarray(v, F), (n,)).copy()  # noqa: E731
    plan = SignalPlan(
        line_s=full(line_s), cycle=full(cycle), offset=full(offset), green=full(green), amber=full(amber)
    )
    return replace(sc, signal=plan)


def signal_queue_case() -> Scenario:
    """One lane, four agents at 10 m/s (ego second), all meeting a stop line at s=60 m that
    stays red for the whole run (green 10..40 s of a 60 s cycle)."""
    xy = [(40.0, 0.0), (26.0, 0.0), (12.0, 0.0), (-2.0, 0.0)]
    sc = make_scenario(xy, 0.0, [10.0, 10.5, 9.5, 10.0], [0] * 4, straight_lanes(1), [3.6], ego=1)
    return with_signal(sc, 60.0, offset=10.0)


def signal_amber_case() -> Scenario:
    """One lane, a stop line at s=100 m, green until 1.05 s then amber 3.5 s: the agent at
    x=80 (12 m/s) is then about 5 m from the line and cannot stop at b=1.67 (needs 43 m), so
    it goes; the ego at x=10 (about 75 m away then) can, and stops; the agent at x=-10
    follows the ego."""
    xy = [(80.0, 0.0), (10.0, 0.0), (-10.0, 0.0)]
    sc = make_scenario(xy, 0.0, [12.0, 12.0, 12.5], [0] * 3, straight_lanes(1), [3.6], ego=1)
    return with_signal(sc, 100.0, offset=-0.5, green=1.55, amber=3.5)


def signal_runner_case(green: bool) -> Scenario:
    """Ego at x=30, 15 m/s, constant speed, crossing a stop line at s=60 m (front bumper at
    about 1.85 s); the light is red throughout (``green``: green throughout). An IDM agent
    follows at x=5 and stops at the line on red."""
    sc = make_scenario([(30.0, 0.0), (5.0, 0.0)], 0.0, [15.0, 14.0], [0, 0], straight_lanes(1), [3.6], ego=0)
    return with_signal(sc, 60.0, offset=-0.5 if green else 10.0, green=55.0 if green else 30.0)
