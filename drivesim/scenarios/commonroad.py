"""CommonRoad XML import (2018b ``<obstacle><role>dynamic`` and 2020a ``<dynamicObstacle>``
layouts) into a host Scenario with a LogTrajectory.

Parsing is safe (defusedxml: no DTD, no entities, no external references; bounded file
size) and strict: a malformed or truncated file, an unknown layout, a missing field or a
non-finite number raises :class:`ScenarioError` naming the file, the element and the
problem. The ego comes from the planning problem (slot 0), the other agents from the dynamic
obstacles (``<type>`` pedestrian and bicycle import as PEDESTRIAN and CYCLIST agents, every
other type as a vehicle); the lanelets become the road (see :mod:`drivesim.scenarios.lanes`).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree as SafeET
import numpy as np

from drivesim.core.ranges import DT_RANGE_S, MAX_COORD_M, MAX_FILE_STEPS, MAX_LOG_STEPS
from drivesim.core.types import (
    CYCLIST,
    IDM_DEFAULTS,
    PEDESTRIAN,
    VEHICLE,
    AgentState,
    IDMParams,
    LogTrajectory,
    Scenario,
    replace,
)
from drivesim.core.validate import MAX_AGENTS, ScenarioError, validate_scenario
from drivesim.scenarios import commonroad_lights, geometry, lanes, map_traffic
from drivesim.scenarios.input_files import read_input
from drivesim.scenarios.log_grid import fill_gaps, resample_log, track_grid
from drivesim.scenarios.record import ScenarioRecord

OLD_LAYOUT = ("2017a", "2018a", "2018b")
NEW_LAYOUT = ("2019a", "2019b", "2020a", "2020b", "2021a", "2022a")
# an obstacle's <type> -> AgentState.kind (every other type, motorcycle included, is a vehicle)
OBSTACLE_KINDS = {"pedestrian": PEDESTRIAN, "bicycle": CYCLIST}


@dataclass(frozen=True)
class ImportConfig:
    """CommonRoad import options.

    dt: simulation time step [s] (the log is resampled when the file's step differs).
    replay: non-ego agents follow their log (True) or are handed to IDM from their
        recorded initial state (False; agents absent at step 0 are replayed anyway, so
        they enter when the log says).
    max_bytes: largest file accepted. ego_length / ego_width: the planning problem's
        vehicle box (CommonRoad's default car).
    steps_without_log: episode length [steps] of a file without recorded trajectories (a
        planning problem on an empty map, or generated traffic).
    traffic: the generated traffic of a map without dynamic obstacles or planning problem
        (drivesim.scenarios.map_traffic).
    ego: the recorded agent to drive as the ego, by the dataset's own id (a WOMD object's
        ``id``, an AV2 ``track_id``); None: the dataset's own choice (WOMD's SDC, AV2's focal
        track). CommonRoad's ego is the planning problem's and ignores it.
    """

    dt: float = 0.1
    replay: bool = False
    max_bytes: int = 64 * 2**20
    ego_length: float = 4.508
    ego_width: float = 1.610
    road: lanes.RoadConfig = lanes.RoadConfig()
    steps_without_log: int = 80
    traffic: map_traffic.MapTrafficConfig = map_traffic.MapTrafficConfig()
    ego: str | None = None

    def scenario_name(self, name: str) -> str:
        """A recorded scenario's name under this config: ``name``, with ``?ego=ID`` when
        ``ego`` chooses the ego (so its scenario id differs from the dataset's ego's)."""
        return name if self.ego is None else f"{name}?ego={self.ego}"


@dataclass
class Track:
    """One agent's recorded states on the file's time grid, (Tf,) / (Tf, 2) float64."""

    key: str
    length: float
    width: float
    xy: np.ndarray
    heading: np.ndarray
    speed: np.ndarray
    valid: np.ndarray
    accel0: float
    kind: int = VEHICLE


class _Reader:
    """Field access with errors that name the file, scenario and element."""

    def __init__(self, path: str, scenario_id=None):
        self.path = path
        self.scenario_id = scenario_id

    def fail(self, field: str, reason: str) -> NoReturn:
        raise ScenarioError(reason, path=self.path, scenario_id=self.scenario_id, field=field)

    def number(self, text: str | None, field: str) -> float:
        if text is None or not text.strip():
            self.fail(field, "missing number")
        try:
            value = float(text)
        except ValueError:
            self.fail(field, f"not a number: {text.strip()[:40]!r}")
        if not math.isfinite(value):
            self.fail(field, f"non-finite number {text.strip()!r}")
        return value

    def child(self, elem: Element, tag: str, field: str) -> Element:
        found = elem.find(tag)
        if found is None:
            self.fail(f"{field}/{tag}", "missing element")
        return found

    def value(self, elem: Element, field: str) -> float:
        """An exact value or the centre of an interval."""
        exact = elem.find("exact")
        if exact is not None:
            return self.number(exact.text, f"{field}/exact")
        lo, hi = elem.find("intervalStart"), elem.find("intervalEnd")
        if lo is None or hi is None:
            if elem.text and elem.text.strip():
                return self.number(elem.text, field)
            self.fail(field, "neither <exact> nor <intervalStart>/<intervalEnd>")
        low = self.number(lo.text, f"{field}/intervalStart")
        return 0.5 * (low + self.number(hi.text, f"{field}/intervalEnd"))

    def point(self, elem: Element, field: str) -> np.ndarray:
        """(2,) float64 x, y within the physical range of coordinates (core.ranges)."""
        xy = []
        for axis in ("x", "y"):
            value = self.number(elem.findtext(axis), f"{field}/{axis}")
            if abs(value) > MAX_COORD_M:
                self.fail(
                    f"{field}/{axis}",
                    f"value {value:g} outside the physical range [-{MAX_COORD_M:g}, {MAX_COORD_M:g}]",
                )
            xy.append(value)
        return np.array(xy)

    def position(self, elem: Element, field: str) -> np.ndarray:
        """A point, or the centre of a rectangle / circle / polygon position."""
        for tag in ("point", "rectangle/center", "circle/center"):
            found = elem.find(tag)
            if found is not None:
                return self.point(found, f"{field}/{tag}")
        poly = elem.findall("polygon/point")
        if poly:
            return np.mean([self.point(p, f"{field}/polygon/point") for p in poly], axis=0)
        self.fail(field, "no <point>, <rectangle>, <circle> or <polygon> position")

    def state(self, elem: Element, field: str) -> tuple[int, np.ndarray, float, float, float]:
        """(time step, xy, orientation, velocity, acceleration) of a state element; a
        point-mass state (``velocity`` and ``velocityY``, no orientation) gets the direction
        and norm of its velocity; a state without velocity gets NaN (the track derives it)."""
        time = self.value(self.child(elem, "time", field), f"{field}/time")
        if not 0 <= time <= MAX_FILE_STEPS:  # checked before the track is allocated
            self.fail(f"{field}/time", f"time step {time:g} outside [0, {MAX_FILE_STEPS}]")
        xy = self.position(self.child(elem, "position", field), f"{field}/position")
        vy = elem.find("velocityY")
        if vy is not None and elem.find("orientation") is None:  # a point-mass state
            vx = self.value(self.child(elem, "velocity", field), f"{field}/velocity")
            vy_value = self.value(vy, f"{field}/velocityY")
            heading, speed = math.atan2(vy_value, vx), math.hypot(vx, vy_value)
        else:
            heading = self.value(self.child(elem, "orientation", field), f"{field}/orientation")
            vel = elem.find("velocity")  # optional: absent, it is derived from the positions
            speed = self.value(vel, f"{field}/velocity") if vel is not None else math.nan
        acc = elem.find("acceleration")
        accel = self.value(acc, f"{field}/acceleration") if acc is not None else 0.0
        return int(round(time)), xy, heading, speed, accel

    def shape(self, elem: Element, field: str) -> tuple[float, float]:
        """(length, width) of a rectangle, circle or polygon (bounding box) shape."""
        shape = self.child(elem, "shape", field)
        rect = shape.find("rectangle")
        if rect is not None:
            size = (
                self.number(rect.findtext("length"), f"{field}/shape/rectangle/length"),
                self.number(rect.findtext("width"), f"{field}/shape/rectangle/width"),
            )
        elif shape.find("circle") is not None:
            r = self.number(shape.findtext("circle/radius"), f"{field}/shape/circle/radius")
            size = (2 * r, 2 * r)
        elif shape.findall("polygon/point"):
            corners = shape.findall("polygon/point")
            pts = np.array([self.point(p, f"{field}/shape/polygon/point") for p in corners])
            ext = pts.max(0) - pts.min(0)
            size = (float(ext.max()), float(ext.min()))
        else:
            self.fail(f"{field}/shape", "no <rectangle>, <circle> or <polygon>")
        if size[0] <= 0 or size[1] <= 0:
            self.fail(f"{field}/shape", f"non-positive size {size}")
        return size


def parse_xml(path: Path, max_bytes: int) -> Element:
    """Parse ``path`` safely; ScenarioError on size, DTD/entities, malformed XML."""
    where = str(path)
    data = read_input(path, max_bytes)
    try:
        return SafeET.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except defusedxml.DefusedXmlException as err:
        raise ScenarioError(
            f"forbidden XML construct ({type(err).__name__}: {err}); DTDs and entities are not accepted",
            path=where,
            field="<!DOCTYPE>",
        ) from None
    except ParseError as err:
        line, col = getattr(err, "position", (0, 0))
        raise ScenarioError(
            f"malformed or truncated XML: {err}", path=where, field=f"line {line}, column {col}"
        ) from None


def scenario_id_of(name: str) -> int:
    """Stable int32 id of a CommonRoad benchmark id (crc32, non-negative)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def load_commonroad(path: str | Path, config: ImportConfig = ImportConfig()) -> ScenarioRecord:
    """Import one CommonRoad XML file; ScenarioError for any problem in it."""
    path = Path(path)
    root = parse_xml(path, config.max_bytes)
    rd = _Reader(str(path))
    if root.tag != "commonRoad":
        rd.fail("root element", f"expected <commonRoad>, got <{root.tag}>")
    name = root.get("benchmarkID") or path.stem
    rd.scenario_id = name
    version = root.get("commonRoadVersion")
    if version not in OLD_LAYOUT + NEW_LAYOUT:
        rd.fail(
            "commonRoad@commonRoadVersion",
            f"unknown CommonRoad layout {version!r} (known: {', '.join(OLD_LAYOUT + NEW_LAYOUT)})",
        )
    file_dt = rd.number(root.get("timeStepSize"), "commonRoad@timeStepSize")
    if not DT_RANGE_S[0] <= file_dt <= DT_RANGE_S[1]:
        rd.fail(
            "commonRoad@timeStepSize",
            f"time step {file_dt:g} s outside [{DT_RANGE_S[0]:g}, {DT_RANGE_S[1]:g}]",
        )
    if version in OLD_LAYOUT:
        obstacles = [o for o in root.findall("obstacle") if (o.findtext("role") or "").strip() == "dynamic"]
        tag = "obstacle"
    else:
        obstacles = root.findall("dynamicObstacle")
        tag = "dynamicObstacle"
    if len(obstacles) + 1 > MAX_AGENTS:
        rd.fail(tag, f"too many agents: {len(obstacles)} dynamic obstacles + ego > {MAX_AGENTS}")
    ids = [o.get("id") for o in obstacles]
    twice = sorted({i for i in ids if i is not None and ids.count(i) > 1})
    if twice:
        rd.fail(f"{tag}[id={twice[0]}]", f"obstacle id {twice[0]} appears more than once (one agent per id)")
    key = name if path.stem == name else f"{name}@{path.stem}"  # two files, one benchmark id
    ego = _ego_track(root, rd, config)
    tracks = [_obstacle_track(o, tag, rd, file_dt) for o in obstacles]
    tracks = ([ego] if ego is not None else []) + tracks  # without a problem: the first obstacle
    lanelets = lanes.parse_lanelets(root, rd)
    note = (
        "" if ego is not None or not tracks else "no planning problem: the first dynamic obstacle is the ego"
    )
    if not tracks:  # a map alone: generated traffic on its lanelets
        tracks = _generated_tracks(lanelets, scenario_id_of(key), config)
        if not tracks:
            rd.fail(tag, "no dynamic obstacles, no planning problem and no lanelet (zero agents)")
        note = f"no obstacles or planning problem: {len(tracks)} generated IDM vehicles, the first the ego"
    _check_log_length(tracks, file_dt, config.dt, rd)
    lights = commonroad_lights.parse_lights(root, rd, file_dt)
    goal = _goal(root, rd)
    origin = np.round(tracks[0].xy[int(np.flatnonzero(tracks[0].valid)[0])])
    tracks, lanelets, goal = recentred(tracks, lanelets, goal, origin)
    scenario, stops = build_scenario(tracks, lanelets, goal, file_dt, scenario_id_of(key), config)
    scenario = replace(scenario, signal=commonroad_lights.signal_plan(stops, lights, rd))
    if max(len(t.valid) for t in tracks) == 1:  # nothing recorded beyond the initial states
        steps = np.asarray(config.steps_without_log, np.int32)
        scenario = replace(scenario, log=None, episode_length=steps)
    validate_scenario(scenario, where=f"{path}#{name}")
    shown = name if key == name else f"{name} ({path.name})"
    return ScenarioRecord(scenario=scenario, family="commonroad", source=str(path), name=shown, note=note)


def recentred(tracks: list[Track], lanelets: list, goal, origin: np.ndarray):
    """Tracks, lanelets and goal point shifted by ``-origin`` (the ego's start rounded to
    1 m): float32 then keeps millimetres in maps several km from their origin; distances,
    arc lengths and every metric are unchanged by the shift."""
    for t in tracks:
        t.xy = t.xy - origin
    for lane in lanelets:
        lane.center = lane.center - origin
    point, refs = goal
    return tracks, lanelets, (None if point is None else point - origin, refs)


def _generated_tracks(lanelets: list, scenario_id: int, config: ImportConfig) -> list[Track]:
    """One-state tracks of map_traffic's generated agents (the ego first)."""
    cfg = config.traffic
    return [
        Track(
            f"generated[{k}]",
            cfg.length_m,
            cfg.width_m,
            p.xy[None],
            np.array([p.heading]),
            np.array([p.speed]),
            np.ones(1, bool),
            0.0,
        )
        for k, p in enumerate(map_traffic.place_traffic(lanelets, scenario_id, cfg))
    ]


def _check_log_length(tracks: list[Track], file_dt: float, dt: float, rd: _Reader) -> None:
    """Refuse a log that would resample to more than MAX_LOG_STEPS steps (before allocating)."""
    file_steps = max(len(t.valid) for t in tracks)
    steps = (file_steps - 1) * file_dt / dt + 1
    if steps > MAX_LOG_STEPS:
        rd.fail(
            "trajectory/state/time",
            f"{file_steps} steps of {file_dt:g} s give {steps:.3g} steps of {dt:g} s, "
            f"more than the {MAX_LOG_STEPS} allowed",
        )


def _obstacle_track(obs: Element, tag: str, rd: _Reader, file_dt: float) -> Track:
    field = f"{tag}[id={obs.get('id')}]"
    length, width = rd.shape(obs, field)
    states = [rd.state(rd.child(obs, "initialState", field), f"{field}/initialState")]
    for k, st in enumerate(obs.findall("trajectory/state")):
        states.append(rd.state(st, f"{field}/trajectory/state[{k}]"))
    if len(states) == 1 and obs.find("occupancySet") is not None:
        states += _occupancy_states(obs, field, rd, states[0], file_dt)
    times = [s[0] for s in states]
    if min(times) < 0:
        rd.fail(f"{field}/trajectory", "negative time step")
    steps = max(times) + 1
    xy, heading = np.zeros((steps, 2)), np.zeros(steps)
    speed, valid = np.zeros(steps), np.zeros(steps, bool)
    for t, p, h, v, _ in states:
        xy[t], heading[t], speed[t], valid[t] = p, h, v, True
    kind = OBSTACLE_KINDS.get((obs.findtext("type") or "").strip(), VEHICLE)
    return Track(
        field,
        length,
        width,
        xy,
        heading,
        _speed_from_motion(xy, speed, valid, file_dt),
        valid,
        states[0][4],
        kind,
    )


def _speed_from_motion(xy: np.ndarray, speed: np.ndarray, valid: np.ndarray, file_dt: float) -> np.ndarray:
    """``speed`` with each missing (NaN) value replaced by the distance to the next recorded
    position over the time between them (the previous one at the last step; 0 alone)."""
    steps = np.flatnonzero(valid)
    out = speed.copy()
    for k, t in enumerate(steps):
        if not np.isnan(out[t]):
            continue
        a, b = (t, steps[k + 1]) if k + 1 < len(steps) else ((steps[k - 1], t) if k else (t, t))
        out[t] = float(np.hypot(*(xy[b] - xy[a]))) / ((b - a) * file_dt) if b > a else 0.0
    return out


def _occupancy_states(obs: Element, field: str, rd: _Reader, first, file_dt: float) -> list:
    """States of a prediction given as an occupancy set: each occupancy's shape centre at its
    time (an interval's centre), heading from a rectangle's orientation or else the motion,
    speed from the distance to the previous state."""
    out, (t_prev, xy_prev, h_prev, _, _) = [], first
    for k, occ in enumerate(obs.findall("occupancySet/occupancy")):
        where = f"{field}/occupancySet/occupancy[{k}]"
        time = rd.value(rd.child(occ, "time", where), f"{where}/time")
        if not 0 <= time <= MAX_FILE_STEPS:
            rd.fail(f"{where}/time", f"time step {time:g} outside [0, {MAX_FILE_STEPS}]")
        t = int(round(time))
        xy = rd.position(rd.child(occ, "shape", where), f"{where}/shape")
        move = xy - xy_prev
        turn = occ.find("shape/rectangle/orientation")
        if turn is not None:
            heading = rd.number(turn.text, f"{where}/shape/rectangle/orientation")
        else:
            heading = math.atan2(move[1], move[0]) if np.hypot(*move) > 1e-6 else h_prev
        speed = float(np.hypot(*move)) / (max(t - t_prev, 1) * file_dt)
        out.append((t, xy, heading, speed, 0.0))
        t_prev, xy_prev, h_prev = t, xy, heading
    return out


def _ego_track(root: Element, rd: _Reader, config: ImportConfig) -> Track | None:
    """The planning problem's vehicle from its initial state, or None without a problem."""
    if root.find("planningProblem") is None:
        return None
    problem = rd.child(root, "planningProblem", "commonRoad")
    field = f"planningProblem[id={problem.get('id')}]/initialState"
    init = rd.child(problem, "initialState", field.rsplit("/", 1)[0])
    _, xy, heading, speed, accel = rd.state(init, field)
    if math.isnan(speed):
        rd.fail(f"{field}/velocity", "missing element (the ego needs its initial speed)")
    return Track(
        field,
        config.ego_length,
        config.ego_width,
        xy[None],
        np.array([heading]),
        np.array([speed]),
        np.ones(1, bool),
        accel,
    )


def _goal(root: Element, rd: _Reader) -> tuple[np.ndarray | None, list[str]]:
    """Goal point (centre of the goal position shape) and goal lanelet ids, if given."""
    pos = root.find("planningProblem/goalState/position")
    if pos is None:
        return None, []
    refs = [e.get("ref", "") for e in pos.findall("lanelet") if e.get("ref")]
    if refs:
        return None, refs
    return rd.position(pos, "planningProblem/goalState/position"), []


def build_scenario(
    tracks, lanelets, goal, file_dt, scenario_id, config: ImportConfig
) -> tuple[Scenario, list]:
    """The Scenario (without signals) of recorded ``tracks`` (the ego first) on ``lanelets``
    (lanes.Lanelet), and each agent's traffic-light lanes.Stop (or None). goal: (point or
    None, goal lanelet ids); file_dt: the tracks' time step [s]."""
    xy, heading, speed, valid = resample_log(*track_grid(tracks), file_dt, config.dt)
    xy, heading, speed = (fill_gaps(v, valid) for v in (xy, heading, speed))
    n = len(tracks)
    hints = [xy[valid[:, i], i] for i in range(n)]
    if goal[0] is not None:
        hints[0] = np.concatenate([hints[0], goal[0][None]])
    road, route, limits, stops = lanes.build_road(lanelets, xy[0], heading[0], hints, goal[1], config.road)
    road_axis = geometry.dominant_axis(heading[valid], None)
    road = replace(road, sort_axis=road_axis)
    f = np.float32
    vmax = np.array([speed[valid[:, i], i].max() for i in range(n)])
    idm = IDMParams(**{k: np.full(n, v, f) for k, v in IDM_DEFAULTS.items()})
    idm = replace(idm, v0=np.maximum.reduce([limits, 1.2 * vmax, np.full(n, 5.0)]).astype(f))
    replay = np.where(np.arange(n) == 0, False, config.replay | ~valid[0])
    agents = AgentState(
        x=xy[0, :, 0].astype(f),
        y=xy[0, :, 1].astype(f),
        heading=heading[0].astype(f),
        speed=speed[0].astype(f),
        accel=np.array([t.accel0 for t in tracks], f),
        length=np.array([t.length for t in tracks], f),
        width=np.array([t.width for t in tracks], f),
        valid=np.ones(n, bool),
        route=route.astype(np.int32),
        kind=np.array([t.kind for t in tracks], np.int32),
    )
    log = LogTrajectory(
        xy=xy.astype(f), heading=heading.astype(f), speed=speed.astype(f), valid=valid, replay=replay
    )
    return Scenario(
        agents=agents,
        idm=idm,
        stop_s=np.full(n, np.inf, f),
        road=road,
        ego_index=np.asarray(0, np.int32),
        episode_length=np.asarray(max(valid.shape[0] - 1, 1), np.int32),
        scenario_id=np.asarray(scenario_id, np.int32),
        valid=np.asarray(True),
        log=log,
    ), stops
