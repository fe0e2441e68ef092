"""Assembling a catalogue scenario on the host: a straight multi-lane road along +x (and
optionally a two-lane road crossing it), the ego (IDM-capable, not replayed) and scripted
actors whose logs are built analytically.

Lane k's centre line is y = k * LANE_WIDTH (lane 0 is the rightmost; +y is to the left of
the driving direction). A crossing road adds two lanes along y after them. Every actor's log
has ``steps + 1`` entries at ``DT`` (step 0 is the initial state), so the replayed actors are
defined for the whole episode.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import numpy as np

from drivesim.core.signals import NO_SIGNAL
from drivesim.core.types import (
    IDM_DEFAULTS,
    VEHICLE,
    AgentState,
    IDMParams,
    LogTrajectory,
    RoadMap,
    Scenario,
    SignalPlan,
)
from drivesim.scenarios.signal_timing import Light

DT = 0.1  # [s] the simulation step of SimConfig's default (logs are built at this dt)
LANE_WIDTH = 3.5  # [m]
CAR_LENGTH, CAR_WIDTH = 4.5, 1.8  # [m] ego and vehicle actors
ROAD_BEHIND = 100.0  # [m] road before x = 0
ROAD_AHEAD = 150.0  # [m] road beyond the farthest point any agent could reach
F32 = np.float32


@dataclass(frozen=True)
class Actor:
    """A scripted agent: x, y, heading, speed (T,) float64 over the episode's log steps [m, rad,
    m/s]; length, width [m]; lane: its route index (the families route every agent on the ego
    lane, so one lane is occupied and the neighbour window is proven exact without the
    all-pairs fallback; unprotected_left_turn's oncoming car has its own lane, which the
    ego's curved route joins into one route group); kind: its road-user type (AgentState.kind)."""

    x: np.ndarray
    y: np.ndarray
    heading: np.ndarray
    speed: np.ndarray
    length: float = CAR_LENGTH
    width: float = CAR_WIDTH
    lane: int = 0
    kind: int = VEHICLE


@dataclass(frozen=True)
class Crossing:
    """A two-lane road crossing the main road at right angles: lane centres at x = ``x``
    (heading +y) and x = ``x`` - LANE_WIDTH (heading -y), from y = -``reach`` to +``reach`` [m].
    Drivable area only: no agent is routed on it."""

    x: float
    reach: float


@dataclass(frozen=True)
class Signals:
    """Traffic signals of a layout: the ego's stop line at x = ``ego_line_x`` [m] with plan
    ``ego``; ``actors``: the plan every scripted actor's row carries (the conflicting
    approach), its stop line at +inf (actors are replayed, and routed on lane 0, so an arc
    length on their route would mean nothing)."""

    ego_line_x: float
    ego: Light
    actors: Light | None = None


@dataclass(frozen=True)
class Layout:
    """What a family's parameters build: the ego's initial speed [m/s], the scripted actors,
    the main road's lane count, an optional crossing road and optional signals. ``road``: a
    prebuilt road (route 0 is the ego's) used instead of the straight lanes and crossing;
    ``ego_stop_s``: arc length [m] of the ego's yield line (+inf: the ego has priority)."""

    ego_speed: float
    actors: list[Actor]
    lanes: int
    _: KW_ONLY  # the optional parts by name only
    crossing: Crossing | None = None
    road: RoadMap | None = None
    ego_stop_s: float = np.inf
    signals: Signals | None = None


def times(steps: int) -> np.ndarray:
    """Log times (steps + 1,) [s]."""
    return np.arange(steps + 1) * DT


def smoothstep(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quintic 0 -> 1 blend of u clipped to [0, 1] (zero velocity and acceleration at both
    ends) and its derivative d/du; both shaped like u."""
    u = np.clip(u, 0.0, 1.0)
    return u**3 * (10.0 - 15.0 * u + 6.0 * u * u), 30.0 * u * u * (1.0 - u) ** 2


def braking(t: np.ndarray, x0: float, speed: float, decel: float, t_start: float):
    """Position and speed (T,) of a vehicle at ``speed`` braking at ``decel`` [m/s^2] from
    ``t_start`` [s] to a standstill."""
    tau = np.clip(t - t_start, 0.0, speed / decel if decel > 0 else np.inf)
    ahead = np.minimum(t, t_start)
    x = x0 + speed * ahead + speed * tau - 0.5 * decel * tau * tau
    return x, speed - decel * tau


def lane_change(
    t: np.ndarray, x0: float, speed: float, y_from: float, y_to: float, t_start: float, duration: float
):
    """An actor at constant longitudinal ``speed`` moving laterally from ``y_from`` to ``y_to``
    over [t_start, t_start + duration] (quintic profile): Actor fields x, y, heading, speed."""
    blend, rate = smoothstep((t - t_start) / duration)
    y = y_from + (y_to - y_from) * blend
    vy = (y_to - y_from) * rate / duration
    return dict(x=x0 + speed * t, y=y, heading=np.arctan2(vy, speed), speed=np.hypot(speed, vy))


def straight(t: np.ndarray, x: np.ndarray, speed: np.ndarray, lane: int) -> dict:
    """Actor fields of a vehicle driving along lane ``lane`` (x, speed (T,))."""
    return dict(x=x, y=np.full_like(t, lane * LANE_WIDTH), heading=np.zeros_like(t), speed=speed)


def road(lanes: int, x_end: float, crossing: Crossing | None = None) -> RoadMap:
    """``lanes`` parallel straight lanes from x = -ROAD_BEHIND to ``x_end`` [m], then the two
    lanes of ``crossing`` if any."""
    centers = np.zeros((lanes, 2, 2))
    centers[:, :, 0] = [-ROAD_BEHIND, x_end]
    centers[:, :, 1] = (np.arange(lanes) * LANE_WIDTH)[:, None]
    if crossing is not None:
        across = np.zeros((2, 2, 2))
        across[0, :, 0], across[0, :, 1] = crossing.x, [-crossing.reach, crossing.reach]
        across[1, :, 0], across[1, :, 1] = crossing.x - LANE_WIDTH, [crossing.reach, -crossing.reach]
        centers = np.concatenate([centers, across])
    count = len(centers)
    return RoadMap(
        centers=centers.astype(F32),
        widths=np.full(count, LANE_WIDTH, F32),
        lane_valid=np.ones(count, bool),
        sort_axis=np.array([1.0, 0.0], F32),
        conflict_xy=np.zeros(2, F32),
        conflict_radius=np.asarray(0.0, F32),
    )


def scenario(layout: Layout, steps: int, scenario_id: int) -> Scenario:
    """The ego (slot 0, lane 0, centre at x = 0, heading +x, at ``layout.ego_speed``) and
    replayed ``layout.actors`` (slots 1..) on a road of ``layout.lanes`` lanes long enough for
    the whole episode (and the crossing road, if any)."""
    ego_speed, actors = layout.ego_speed, layout.actors
    n = 1 + len(actors)
    t_end = steps * DT
    reach = max([ego_speed * t_end] + [float(np.max(a.x)) for a in actors])
    rm = layout.road if layout.road is not None else road(layout.lanes, reach + ROAD_AHEAD, layout.crossing)
    shape = (steps + 1, n)
    xy = np.zeros((*shape, 2), F32)
    heading, speed = np.zeros(shape, F32), np.zeros(shape, F32)
    valid = np.zeros(shape, bool)
    for k, a in enumerate(actors, start=1):
        xy[:, k, 0], xy[:, k, 1] = a.x, a.y
        heading[:, k], speed[:, k] = a.heading, np.maximum(a.speed, 0.0)
        valid[:, k] = True
    xy[:, 0, 0] = 0.0  # the ego is not logged (valid False): only its initial state is used
    speed[:, 0] = ego_speed
    agents = AgentState(
        x=xy[0, :, 0].copy(),
        y=xy[0, :, 1].copy(),
        heading=heading[0].copy(),
        speed=speed[0].copy(),
        accel=np.zeros(n, F32),
        length=np.array([CAR_LENGTH] + [a.length for a in actors], F32),
        width=np.array([CAR_WIDTH] + [a.width for a in actors], F32),
        valid=np.ones(n, bool),
        route=np.array([0] + [a.lane for a in actors], np.int32),
        kind=np.array([VEHICLE] + [a.kind for a in actors], np.int32),
    )
    return Scenario(
        agents=agents,
        idm=IDMParams(**{k: np.full(n, v, F32) for k, v in IDM_DEFAULTS.items()}),
        stop_s=np.array([layout.ego_stop_s] + [np.inf] * len(actors), F32),
        road=rm,
        ego_index=np.asarray(0, np.int32),
        episode_length=np.asarray(steps, np.int32),
        scenario_id=np.asarray(scenario_id, np.int32),
        valid=np.asarray(True),
        log=LogTrajectory(xy=xy, heading=heading, speed=speed, valid=valid, replay=np.arange(n) > 0),
        signal=None if layout.signals is None else signal_plan(layout.signals, n),
    )


def signal_plan(signals: Signals, n: int) -> SignalPlan:
    """The SignalPlan (n,) of a layout's signals: slot 0 the ego (its line as an arc length
    along lane 0, which starts at x = -ROAD_BEHIND), slots 1.. the actors."""
    ego = dict(line_s=signals.ego_line_x + ROAD_BEHIND, **signals.ego.fields())
    other = dict(NO_SIGNAL) if signals.actors is None else dict(line_s=np.inf, **signals.actors.fields())
    return SignalPlan(**{k: np.array([ego[k]] + [other[k]] * (n - 1), F32) for k in NO_SIGNAL})
