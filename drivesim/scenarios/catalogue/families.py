"""The catalogue's logical scenarios: each a function of named parameters returning a host
Scenario with the ego in slot 0 (lane 0, centre at x = 0) and scripted adversaries.

Every gap is a bumper-to-bumper distance [m]; times are from the start of the episode [s];
"ego at constant speed" means the ego's position if it kept its initial speed (the parameters
describe the conflict as planned; the ego's policy decides what actually happens).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drivesim.core.road_users import CYCLIST_SIZE
from drivesim.core.types import CYCLIST, PEDESTRIAN, Scenario
from drivesim.scenarios.catalogue import build, left_turn
from drivesim.scenarios.catalogue.build import (
    CAR_LENGTH,
    CAR_WIDTH,
    LANE_WIDTH,
    Actor,
    Crossing,
    Layout,
    Signals,
)
from drivesim.scenarios.catalogue.params import CatalogueError, Param
from drivesim.scenarios.signal_timing import Light, two_phase, yellow_interval

CUT_IN_START_S = 1.0  # [s] the cut-in's lateral motion starts here
CUT_OUT_REVEAL_S = 3.0  # [s] the leader's centre crosses the lane edge here
CUT_OUT_HEADWAY_S = 1.0  # [s] the leader's time gap ahead of the ego (shortened when needed)
CUT_OUT_CLEARANCE = 2.0  # [m] the leader's front stays this far behind the stopped car at reveal
PED_SIZE = 0.5  # [m] pedestrian box length and width
PED_KERB = 0.5  # [m] the pedestrian waits this far outside the ego lane's right edge
PED_MIN_ARRIVAL_S = 0.5  # [s] earliest time the ego reaches the crossing point
PARK_CLEARANCE = 0.5  # [m] the parked car's road-side face to the ego lane's right edge
RUNNER_ARRIVAL_S = 3.0  # [s] the red-light runner reaches the ego's path here (or later)
RUNNER_MIN_EGO_ARRIVAL_S = 0.5  # [s] earliest time the ego reaches the runner's path
RUNNER_GREEN_ELAPSED_S = 2.0  # [s] the ego's green started this long before the episode
STOP_LINE_SETBACK = 1.0  # [m] stop line to the near edge of the crossing road
AMBER_ONSET_S = 2.0  # [s] amber_light: the ego's light turns amber here
AMBER_DEFAULT_S = round(yellow_interval(13.89), 2)  # ITE yellow at 50 km/h (3.28 s)


@dataclass(frozen=True)
class Family:
    """A logical scenario: ``params`` in declared (grid) order and ``make(values, steps)``.
    ``check_box(lo, hi)``: raises CatalogueError when some point of the box of parameter
    values [lo, hi] breaks a constraint between parameters (None: there is none)."""

    name: str
    params: tuple[Param, ...]
    make: Callable[[dict[str, float], int], Layout]
    doc: str
    check_box: Callable[[dict[str, float], dict[str, float]], None] | None = None

    def scenario(self, values: dict[str, float], steps: int, scenario_id: int) -> Scenario:
        """The Scenario of checked ``values`` over ``steps`` simulation steps."""
        return build.scenario(self.make(values, steps), steps, scenario_id)


def _lead_brake(v: dict[str, float], steps: int):
    t = build.times(steps)
    x, speed = build.braking(t, CAR_LENGTH + v["gap"], v["speed"], v["decel"], v["t_brake"])
    return Layout(v["speed"], [Actor(**build.straight(t, x, speed, lane=0))], 2)


def _cut_in_box(lo: dict[str, float], hi: dict[str, float]) -> None:
    """speed + dv >= 0 over the whole box: its lowest corner decides."""
    if lo["speed"] + lo["dv"] < 0:
        raise CatalogueError(
            f"catalogue cut_in: parameter dv={lo['dv']:g} is below -speed ({-lo['speed']:g}): "
            "the adversary would reverse"
        )


def _cut_in(v: dict[str, float], steps: int):
    speed, dv = v["speed"], v["dv"]
    _cut_in_box(v, v)
    t = build.times(steps)
    done = CUT_IN_START_S + v["lateral"]
    # adversary rear = ego front + gap at `done` (both at constant speed)
    x0 = CAR_LENGTH + v["gap"] - dv * done
    path = build.lane_change(t, x0, speed + dv, LANE_WIDTH, 0.0, CUT_IN_START_S, v["lateral"])
    # route = the target lane: only one lane is occupied, so the neighbour window is proven
    # exact (an adversary routed on lane 1 sends every scenario to the all-pairs fallback)
    return Layout(speed, [Actor(**path, lane=0)], 2)


def _cut_out(v: dict[str, float], steps: int):
    speed, gap = v["speed"], v["gap"]
    t = build.times(steps)
    headway = min(CUT_OUT_HEADWAY_S * speed, gap - CAR_LENGTH - CUT_OUT_CLEARANCE)
    start = CUT_OUT_REVEAL_S - 0.5 * v["lateral"]
    leader = build.lane_change(t, CAR_LENGTH + headway, speed, 0.0, LANE_WIDTH, start, v["lateral"])
    # stopped car: its rear is `gap` ahead of the ego's front (ego at constant speed) at reveal
    x_stop = CAR_LENGTH + speed * CUT_OUT_REVEAL_S + gap
    stopped = build.straight(t, np.full_like(t, x_stop), np.zeros_like(t), lane=0)
    return Layout(speed, [Actor(**leader, lane=0), Actor(**stopped, lane=0)], 2)


def _walker(t: np.ndarray, x: float, y_wait: float, passes: tuple[float, float], walk: float) -> Actor:
    """A pedestrian at ``x`` that waits at ``y_wait``, walks +y at ``walk`` [m/s] so that its
    centre passes ``passes`` = (y [m], time [s]), and stops at the far kerb."""
    y_far = 1.5 * LANE_WIDTH + PED_KERB  # the far kerb (left of lane 1)
    y_mark, t_mark = passes
    y = np.clip(y_mark + walk * (t - t_mark), y_wait, y_far)
    moving = (t >= t_mark - (y_mark - y_wait) / walk) & (y < y_far)
    return Actor(
        x=np.full_like(t, x),
        y=y,
        heading=np.full_like(t, 0.5 * np.pi),
        speed=np.where(moving, walk, 0.0),
        length=PED_SIZE,
        width=PED_SIZE,
        lane=0,
        kind=PEDESTRIAN,
    )


def _crossing_pedestrian(v: dict[str, float], steps: int):
    speed, tta, walk = v["speed"], v["tta"], v["ped_speed"]
    y_wait = -(0.5 * LANE_WIDTH + PED_KERB)  # on the kerb right of the ego lane
    t_centre = max(-y_wait / walk, PED_MIN_ARRIVAL_S - tta)  # pedestrian at the ego lane centre
    # crossing point: where the ego's front is at t_centre + tta at constant speed
    x_cross = 0.5 * CAR_LENGTH + speed * (t_centre + tta)
    t_walk = t_centre + y_wait / walk
    return Layout(speed, [_walker(build.times(steps), x_cross, y_wait, (y_wait, t_walk), walk)], 2)


def _occluded_pedestrian(v: dict[str, float], steps: int):
    speed, walk = v["speed"], v["ped_speed"]
    t = build.times(steps)
    y_face = -(0.5 * LANE_WIDTH + PARK_CLEARANCE)  # the parked car's road-side face
    y_car = y_face - 0.5 * CAR_WIDTH
    # the pedestrian waits in front of the parked car, on its centre line, and steps out
    # (its centre passes the car's road-side face) at t_out
    t_out = max((y_face - y_car) / walk, PED_MIN_ARRIVAL_S - v["tta"])
    x_cross = 0.5 * CAR_LENGTH + speed * (t_out + v["tta"])  # the ego's front there at t_out + tta
    ped = _walker(t, x_cross, y_car, (y_face, t_out), walk)
    x_car = x_cross - v["ped_gap"] - 0.5 * CAR_LENGTH  # the car's front ped_gap behind the path
    parked = Actor(
        x=np.full_like(t, x_car), y=np.full_like(t, y_car), heading=np.zeros_like(t), speed=np.zeros_like(t)
    )
    return Layout(speed, [parked, ped], 2)


def _cyclist_ahead(v: dict[str, float], steps: int):
    t = build.times(steps)
    length, width = CYCLIST_SIZE
    x0 = 0.5 * CAR_LENGTH + v["gap"] + 0.5 * length  # the cyclist's centre
    cyclist = Actor(
        x=x0 + v["cyc_speed"] * t,
        y=np.full_like(t, -v["lat_offset"]),  # +lat_offset: right of the lane centre (-y)
        heading=np.zeros_like(t),
        speed=np.full_like(t, v["cyc_speed"]),
        length=length,
        width=width,
        lane=0,
        kind=CYCLIST,
    )
    return Layout(v["speed"], [cyclist], 2)


def _red_light_runner(v: dict[str, float], steps: int):
    speed, tta, adv_speed = v["speed"], v["tta"], v["adv_speed"]
    t = build.times(steps)
    # the adversary's centre crosses the ego lane's centre line at t_adv; the ego's centre
    # reaches the adversary's path at t_adv + tta (both at constant speed)
    t_adv = max(RUNNER_ARRIVAL_S, RUNNER_MIN_EGO_ARRIVAL_S - tta)
    x_cross = speed * (t_adv + tta)
    runner = Actor(
        x=np.full_like(t, x_cross),
        y=adv_speed * (t - t_adv),
        heading=np.full_like(t, 0.5 * np.pi),
        speed=np.full_like(t, adv_speed),
        lane=0,
    )
    reach = adv_speed * (t_adv + steps * build.DT) + build.ROAD_AHEAD
    # two-phase fixed-time plan: the ego's approach is green (since 2 s before the start, for
    # the whole episode unless it outlasts the ~38 s green), the runner's is red
    main, cross = two_phase(speed, main_offset=-RUNNER_GREEN_ELAPSED_S)
    signals = Signals(_line_before(x_cross), main, cross)
    return Layout(speed, [runner], 2, crossing=Crossing(x=x_cross, reach=reach), signals=signals)


def _line_before(x_cross: float) -> float:
    """x [m] of the ego's stop line before a crossing road whose near lane is centred at
    x_cross - LANE_WIDTH (see build.Crossing)."""
    return x_cross - 1.5 * LANE_WIDTH - STOP_LINE_SETBACK


def _amber_light(v: dict[str, float], steps: int):
    speed, dist, amber = v["speed"], v["dist"], v["amber"]
    # the ego's front bumper is `dist` from the line at the amber onset (at constant speed)
    line_x = 0.5 * CAR_LENGTH + speed * AMBER_ONSET_S + dist
    main, _cross = two_phase(speed)
    light = Light(main.cycle, AMBER_ONSET_S - main.green, main.green, amber)
    x_cross = line_x + STOP_LINE_SETBACK + 1.5 * LANE_WIDTH
    return Layout(speed, [], 2, crossing=Crossing(x=x_cross, reach=60.0), signals=Signals(line_x, light))


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "lead_brake",
            (
                Param("gap", "m", 2.0, 150.0, 12.0, "initial bumper gap ego -> lead"),
                Param("speed", "m/s", 1.0, 40.0, 13.89, "initial speed of both (50 km/h)"),
                Param("decel", "m/s^2", 0.5, 10.0, 6.0, "lead deceleration, held to a standstill"),
                Param("t_brake", "s", 0.0, 10.0, 1.0, "time the lead starts braking"),
            ),
            _lead_brake,
            "lead vehicle ahead in the ego lane brakes to a standstill",
        ),
        Family(
            "cut_in",
            (
                Param("gap", "m", 0.5, 100.0, 10.0, "bumper gap ego -> adversary when the cut-in completes"),
                Param("dv", "m/s", -30.0, 15.0, -5.0, "adversary speed minus ego speed (constant)"),
                Param("lateral", "s", 0.5, 6.0, 2.0, "duration of the lateral move (starts at 1 s)"),
                Param("speed", "m/s", 1.0, 40.0, 20.0, "ego initial speed"),
            ),
            _cut_in,
            "vehicle in the left lane moves into the ego lane ahead",
            _cut_in_box,
        ),
        Family(
            "cut_out",
            (
                Param("gap", "m", 8.0, 200.0, 30.0, "bumper gap ego -> stopped car at the reveal (3 s)"),
                Param("speed", "m/s", 1.0, 40.0, 20.0, "initial speed of the ego and its leader"),
                Param("lateral", "s", 0.5, 4.0, 2.0, "duration of the leader's lane change"),
            ),
            _cut_out,
            "the ego's leader changes to the left lane, revealing a stopped car",
        ),
        Family(
            "crossing_pedestrian",
            (
                Param(
                    "tta", "s", -4.0, 10.0, 0.0, "ego arrival at the crossing point minus pedestrian arrival"
                ),
                Param("ped_speed", "m/s", 0.5, 3.0, 1.39, "pedestrian walking speed (5 km/h)"),
                Param("speed", "m/s", 1.0, 30.0, 11.11, "ego initial speed (40 km/h)"),
            ),
            _crossing_pedestrian,
            "pedestrian crosses the ego lane from the right kerb",
        ),
        Family(
            "occluded_pedestrian",
            (
                Param("tta", "s", -2.0, 8.0, 1.5, "ego arrival at the crossing point minus the step-out"),
                Param("ped_speed", "m/s", 0.5, 3.0, 1.39, "pedestrian walking speed (5 km/h)"),
                Param("speed", "m/s", 1.0, 30.0, 11.11, "ego initial speed (40 km/h)"),
                Param("ped_gap", "m", 0.5, 10.0, 1.0, "parked car's front to the pedestrian's centre"),
            ),
            _occluded_pedestrian,
            "pedestrian steps out in front of a parked car into the ego lane",
        ),
        Family(
            "cyclist_ahead",
            (
                Param("gap", "m", 2.0, 150.0, 20.0, "initial bumper gap ego -> cyclist"),
                Param("cyc_speed", "m/s", 0.0, 12.0, 4.17, "cyclist speed, constant (15 km/h)"),
                Param("lat_offset", "m", -1.5, 1.5, 0.0, "cyclist centre right of the ego lane centre"),
                Param("speed", "m/s", 1.0, 30.0, 13.89, "ego initial speed (50 km/h)"),
            ),
            _cyclist_ahead,
            "a cyclist rides ahead in the ego lane (Euro NCAP CBLA)",
        ),
        Family(
            "red_light_runner",
            (
                Param("tta", "s", -6.0, 10.0, 0.0, "ego arrival at the crossing minus the runner's"),
                Param("adv_speed", "m/s", 3.0, 25.0, 13.89, "speed of the crossing runner (50 km/h)"),
                Param("speed", "m/s", 1.0, 30.0, 13.89, "ego speed (50 km/h)"),
            ),
            _red_light_runner,
            "a car from the right runs its red light across the ego's path at an intersection",
        ),
        Family("unprotected_left_turn", left_turn.PARAMS, left_turn.make, left_turn.DOC, left_turn.check_box),
        Family(
            "amber_light",
            (
                Param("dist", "m", 0.0, 100.0, 30.0, "ego front bumper to its stop line when amber starts"),
                Param("speed", "m/s", 1.0, 30.0, 13.89, "ego initial speed (50 km/h)"),
                Param("amber", "s", 3.0, 6.0, AMBER_DEFAULT_S, "amber duration (ITE: 3-6 s)"),
            ),
            _amber_light,
            "the ego's light turns amber (at 2 s) as it approaches a signalled intersection",
        ),
    )
}


def family(name: str) -> Family:
    """The Family called ``name`` (CatalogueError naming the known ones)."""
    if name not in FAMILIES:
        raise CatalogueError(f"catalogue: unknown family {name!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[name]
