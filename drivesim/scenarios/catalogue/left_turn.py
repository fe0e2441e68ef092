"""Catalogue family ``unprotected_left_turn``: the ego turns left at an unsignalised
intersection, across the lane of an oncoming car that goes straight (NHTSA pre-crash typology
"left turn across path / opposite direction", LTAP/OD; Euro NCAP AEB C2C CCFtap).

Geometry (ego start at the origin, heading +x, lane 0 at y = 0; right-hand traffic):

- the ego's route (route 0) runs straight along y = 0 to the turn's start x0, then along a
  quarter circle of radius TURN_RADIUS centred at (x0, R) (24 chords, 0.7 cm from the arc at
  most), then straight along +y on the crossing road's lane x = x0 + R;
- the oncoming lane (route 1) runs along y = LANE_WIDTH towards -x; the oncoming car is
  replayed along it at constant ``adv_speed``;
- drivable area: both routes, the main road's right lane beyond the intersection and the
  two-lane crossing road (lanes x = x0 + R heading +y and x = x0 + R - LANE_WIDTH heading -y);
- the conflict point is where the ego's route crosses the oncoming lane's centre line, at the
  heading CONFLICT_HEADING = acos(1 - LANE_WIDTH / R) of the arc;
- the ego must yield: its yield line (``stop_s``) is the turn's start (front bumper at x0) and
  the conflict zone is a disc of CONFLICT_RADIUS around the conflict point, so an IDM ego
  waits there while the oncoming car is within the engine's yield horizon; the constant-speed
  ego ignores it.

Parameters: ``gap`` [s] the oncoming car's arrival at the conflict point minus the ego's
(both centres, constant speeds; > 0: the ego turns in front of it); ``adv_speed`` [m/s];
``speed`` [m/s] the ego's speed (constant through the turn for the constant policy; up to
8 m/s, a lateral acceleration of 5.3 m/s^2: faster, the lane keeper's lookahead of
max(5 m, 1 s * speed) cuts the 12 m turn by a metre or more and leaves the road). The ego
arrives at EGO_ARRIVAL_S, or later so that the oncoming car arrives at ONCOMING_MIN_ARRIVAL_S
or later.

Collision band (tangent approximation): with both boxes moving straight through the conflict
point at the ego's heading there, they meet iff |gap| < h(n) |w| / (v_o v_e sin(theta_c)),
w = v_o u_o - v_e u_e the relative velocity, n its unit normal and h(n) the support of the
two boxes' Minkowski sum along n (:func:`tangent_band`; for a right angle this is
red_light_runner's (L/2 + W/2)(1/v_e + 1/v_o)). The ego turns during the crossing, so the
band of the planned geometry (a float64 reference in the tests) differs from it by < 0.12 s;
the simulated constant-speed ego cuts the corner a little, which moves its band by up to
0.21 s more (the metre it cuts over a slow oncoming car's speed: 8 m/s against 5 m/s).
"""

from __future__ import annotations

import math

import numpy as np

from drivesim.core.types import RoadMap
from drivesim.scenarios.catalogue import build
from drivesim.scenarios.catalogue.build import CAR_LENGTH, CAR_WIDTH, LANE_WIDTH, Actor, Layout
from drivesim.scenarios.catalogue.params import CatalogueError, Param

TURN_RADIUS = 12.0  # [m] the ego route's turn (a passenger car's urban left-turn path)
ARC_CHORDS = 24  # chords of the quarter circle
CONFLICT_HEADING = math.acos(1.0 - LANE_WIDTH / TURN_RADIUS)  # [rad] ego heading at the conflict
CONFLICT_RADIUS = 4.0  # [m] the conflict zone the ego yields to
EGO_ARRIVAL_S = 4.0  # [s] the ego reaches the conflict point here (or later)
ONCOMING_MIN_ARRIVAL_S = 1.0  # [s] earliest time the oncoming car reaches it
ROAD_MARGIN = 50.0  # [m] road beyond the farthest point an agent reaches

PARAMS = (
    Param("gap", "s", -6.0, 8.0, 0.0, "oncoming car's arrival at the conflict point minus the ego's"),
    Param("adv_speed", "m/s", 3.0, 25.0, 13.89, "speed of the oncoming car (50 km/h)"),
    Param("speed", "m/s", 3.0, 8.0, 6.0, "ego speed through the turn (lateral accel v^2 / 12 m)"),
)
DOC = "the ego turns left across the path of an oncoming car at an unsignalised intersection"


def arc_to_conflict() -> float:
    """[m] arc length from the turn's start to the conflict point."""
    return TURN_RADIUS * CONFLICT_HEADING


def ego_arrival(gap: float) -> float:
    """[s] time the ego's centre reaches the conflict point (constant speed)."""
    return max(EGO_ARRIVAL_S, ONCOMING_MIN_ARRIVAL_S - gap)


def turn_start(speed: float, gap: float) -> float:
    """x0 [m]: where the ego's route leaves y = 0 (the ego starts at x = 0)."""
    return speed * ego_arrival(gap) - arc_to_conflict()


def ego_route(x0: float, back: float, reach: float) -> np.ndarray:
    """(ARC_CHORDS + 3, 2) polyline: straight from (-back, 0) to (x0, 0), the quarter circle,
    then straight to (x0 + R, reach)."""
    theta = np.linspace(0.0, 0.5 * np.pi, ARC_CHORDS + 1)
    arc = np.stack([x0 + TURN_RADIUS * np.sin(theta), TURN_RADIUS * (1.0 - np.cos(theta))], axis=-1)
    return np.concatenate([[[-back, 0.0]], arc, [[x0 + TURN_RADIUS, reach]]])


def _road(x0: float, back: float, far: float, reach: float) -> RoadMap:
    """Routes: 0 the ego's turn, 1 the oncoming lane (-x), 2 the main road's right lane beyond
    the turn, 3 and 4 the crossing road (+y at x0 + R, -y one lane width to its left)."""
    cx = x0 + TURN_RADIUS
    turn = ego_route(x0, back, reach)
    points = len(turn)

    def line(a, b):  # a straight lane: two real points, the last repeated (padding)
        return np.array([a] + [b] * (points - 1), float)

    centers = np.stack(
        [
            turn,
            line([far, LANE_WIDTH], [-back, LANE_WIDTH]),
            line([x0, 0.0], [far, 0.0]),
            line([cx, -reach], [cx, reach]),
            line([cx - LANE_WIDTH, reach], [cx - LANE_WIDTH, -reach]),
        ]
    )
    count = len(centers)
    cxy = np.array(conflict_point(x0))
    return RoadMap(
        centers=centers.astype(build.F32),
        widths=np.full(count, LANE_WIDTH, build.F32),
        lane_valid=np.ones(count, bool),
        sort_axis=np.array([1.0, 0.0], build.F32),
        conflict_xy=cxy.astype(build.F32),
        conflict_radius=np.asarray(CONFLICT_RADIUS, build.F32),
    )


def conflict_point(x0: float) -> tuple[float, float]:
    """(x, y) [m] where the ego's route crosses the oncoming lane's centre line."""
    return x0 + TURN_RADIUS * math.sin(CONFLICT_HEADING), LANE_WIDTH


def check_box(lo: dict[str, float], hi: dict[str, float]) -> None:
    """The ego starts before its turn (x0 >= 0) over the whole box: the lowest speed decides."""
    if turn_start(lo["speed"], hi["gap"]) < 0.0:
        raise CatalogueError(
            f"catalogue unprotected_left_turn: parameter speed={lo['speed']:g} is too low: the ego "
            "would start inside its turn"
        )


def make(v: dict[str, float], steps: int) -> Layout:
    """The Layout of one parameter point over ``steps`` steps."""
    speed, gap, adv_speed = v["speed"], v["gap"], v["adv_speed"]
    check_box(v, v)
    t = build.times(steps)
    x0 = turn_start(speed, gap)
    xc, yc = conflict_point(x0)
    t_onc = ego_arrival(gap) + gap
    x = xc - adv_speed * (t - t_onc)
    oncoming = Actor(
        x=x,
        y=np.full_like(t, yc),
        heading=np.full_like(t, np.pi),
        speed=np.full_like(t, adv_speed),
        lane=1,
    )
    t_end = steps * build.DT
    back = max(build.ROAD_BEHIND, -float(x.min()) + ROAD_MARGIN)
    far = max(float(x.max()), x0 + TURN_RADIUS + LANE_WIDTH) + ROAD_MARGIN
    reach = TURN_RADIUS + speed * t_end + ROAD_MARGIN
    road = _road(x0, back, far, reach)
    return Layout(speed, [oncoming], 2, road=road, ego_stop_s=back + x0)


def tangent_band(speed: float, adv_speed: float) -> float:
    """[s] half-width of the collision band in ``gap`` with both cars moving straight through
    the conflict point (the ego along its heading there): h(n) |w| / (v_o v_e sin theta_c)."""
    h = CONFLICT_HEADING
    u_e, u_o = np.array([math.cos(h), math.sin(h)]), np.array([-1.0, 0.0])
    w = adv_speed * u_o - speed * u_e
    n = np.array([-w[1], w[0]]) / np.linalg.norm(w)

    def support(u):  # a car box with heading u, along n
        return 0.5 * CAR_LENGTH * abs(n @ u) + 0.5 * CAR_WIDTH * abs(n @ np.array([-u[1], u[0]]))

    return float((support(u_e) + support(u_o)) * np.linalg.norm(w) / (adv_speed * speed * math.sin(h)))
