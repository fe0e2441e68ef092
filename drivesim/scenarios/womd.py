"""Waymo Open Motion Dataset scenarios in GPUDrive's (Nocturne's) processed JSON.

One JSON object per file: ``objects`` (per step ``position`` {x, y, z}, ``velocity`` {x, y},
``heading`` [rad], ``valid``; ``length``, ``width``, ``type`` vehicle / pedestrian / cyclist,
``goalPosition``), ``roads`` (``type``, ``geometry`` polyline, ``id``), ``tl_states`` and
``metadata.sdc_track_index`` (the self-driving car: the ego). Invalid steps hold -10000
placeholders and are masked out.

What is read and how (every rule, the approximations included):
- agents: every object valid at some step, with its box and kind; the ego (the SDC, or the
  object whose ``id`` is ``ImportConfig.ego``: ``womd:PATH?ego=ID``, whose scenario name
  then ends in ``?ego=ID`` and whose id differs accordingly) is driven by the policy from
  its recorded initial state, the others follow their log (``replay``, the default here:
  recorded traffic) or IDM from their initial state; an object valid at no step is left out
  (it has no state to simulate);
- speed: the norm of the recorded velocity;
- coordinates: re-centred on the ego's initial position rounded to 1 m (WOMD frames lie
  several km from the origin, where float32 spacing is about 0.5 mm), so positions keep
  float32 precision; distances and every metric are unchanged by the shift;
- lanes: the ``lane`` polylines are lane centre lines in driving direction; WOMD gives no
  lane width, so every lane is ``LANE_WIDTH_M`` wide (an approximation of the drivable
  area: off-road is measured against these lanes); a lane's successors are the lanes that
  start within ``SUCCESSOR_GAP_M`` of its end (the JSON holds no lane graph);
- road edges, road lines, crosswalks, driveways, stop signs and signal states are read and
  counted (``WomdFile.map_counts``) but do not reach the engine.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from drivesim.core.ranges import MAX_COORD_M
from drivesim.core.types import CYCLIST, PEDESTRIAN, VEHICLE
from drivesim.core.validate import MAX_AGENTS, ScenarioError, validate_scenario
from drivesim.scenarios.commonroad import ImportConfig, Track, build_scenario
from drivesim.scenarios.input_files import expand_paths, read_input
from drivesim.scenarios.lanes import Lanelet
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.sources import RecordedFilesSource

WOMD_DT_S = 0.1
LANE_WIDTH_M = 4.0
SUCCESSOR_GAP_M = 1.0
PLACEHOLDER = -10000.0
KINDS = {"vehicle": VEHICLE, "pedestrian": PEDESTRIAN, "cyclist": CYCLIST}
REPLAY = ImportConfig(replay=True)  # the default: recorded traffic follows its log


@dataclass(frozen=True)
class WomdFile:
    """What a file holds beyond the engine's scenario: objects read and left out, and the
    map elements per type (all of them, lanes included)."""

    objects: int
    left_out: int
    map_counts: dict


def scenario_id_of(name: str) -> int:
    """Stable int32 id of a WOMD scenario id (crc32, non-negative)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def load_womd(path: str | Path, config: ImportConfig = REPLAY) -> ScenarioRecord:
    """Import one GPUDrive JSON file; ScenarioError naming the file and field otherwise."""
    return read_womd(path, config)[0]


def read_womd(path: str | Path, config: ImportConfig = REPLAY) -> tuple[ScenarioRecord, WomdFile]:
    """The record of one file and what else it holds (see the module docstring)."""
    path = Path(path)
    where = str(path)
    doc = _parse(read_input(path, config.max_bytes), where)
    name = str(doc.get("scenario_id") or path.stem)
    name = config.scenario_name(name)
    fail = _failer(where, name)
    objects = _list(doc, "objects", fail)
    sdc = _ego_index(doc, objects, config.ego, fail)
    tracks = [_track(objects[sdc], f"objects[{sdc}]", fail)]
    for k, obj in enumerate(objects):
        if k != sdc:
            tracks.append(_track(obj, f"objects[{k}]", fail))
    if tracks[0] is None:
        who = "the SDC" if config.ego is None else f"object {config.ego}"
        fail(f"objects[{sdc}].valid", f"the ego ({who}) is valid at no step")
    kept = [t for t in tracks if t is not None]
    if len(kept) > MAX_AGENTS:
        fail("objects", f"too many agents: {len(kept)} valid objects > {MAX_AGENTS}")
    origin = np.round(kept[0].xy[np.flatnonzero(kept[0].valid)[0]])
    for t in kept:
        t.xy = t.xy - origin
    roads = _list(doc, "roads", fail)
    lanelets = _lanes(roads, origin, fail)
    goal = _goal(objects[sdc], origin)
    scenario, _ = build_scenario(kept, lanelets, (goal, []), WOMD_DT_S, scenario_id_of(name), config)
    validate_scenario(scenario, where=f"{where}#{name}")
    counts: dict[str, int] = {}
    for road in roads:
        kind = str(road.get("type")) if isinstance(road, dict) else "?"
        counts[kind] = counts.get(kind, 0) + 1
    info = WomdFile(len(objects), len(tracks) - len(kept), counts)
    signals = len(doc.get("tl_states") or {})
    record = ScenarioRecord(
        scenario=scenario, family="womd", source=where, name=name, note=_note(info, signals)
    )
    return record, info


def _ego_index(doc: dict, objects: list, ego: str | None, fail: Fail) -> int:
    """The index in ``objects`` of the ego: the object whose ``id`` is ``ego``, or the SDC
    (``metadata.sdc_track_index``) when ``ego`` is None."""
    if ego is not None:
        found = [k for k, obj in enumerate(objects) if isinstance(obj, dict) and str(obj.get("id")) == ego]
        if not found:
            fail("objects[].id", f"no object has id {ego!r} (the ego asked for)")
        return found[0]
    meta = doc.get("metadata")
    sdc = meta.get("sdc_track_index") if isinstance(meta, dict) else None
    if not isinstance(sdc, int) or isinstance(sdc, bool) or not 0 <= sdc < len(objects):
        fail("metadata.sdc_track_index", f"{sdc!r} is not an object index (0..{len(objects) - 1})")
    return sdc


def _note(info: WomdFile, signal_lanes: int) -> str:
    """What the engine does not get: objects valid at no step, every map element but the
    lanes, and the signal states."""
    parts = [
        f"{n} {kind.replace('_', ' ')}{'s' if n != 1 else ''}"
        for kind, n in sorted(info.map_counts.items())
        if kind != "lane"
    ]
    if info.left_out:
        parts.insert(0, f"{info.left_out} objects valid at no step")
    if signal_lanes:
        parts.append(f"signal states of {signal_lanes} lanes")
    return "left out: " + ", ".join(parts) if parts else ""


def _parse(data: bytes, where: str) -> dict:
    def refuse(value):
        raise ValueError(f"non-finite number {value}")

    try:
        doc = json.loads(data, parse_constant=refuse)
    except (ValueError, RecursionError) as err:  # JSONDecodeError and UnicodeDecodeError too
        raise ScenarioError(f"not JSON ({err})", path=where) from None
    if not isinstance(doc, dict):
        raise ScenarioError(f"expected a JSON object, got a {type(doc).__name__}", path=where)
    return doc


Fail = Callable[[str, str], NoReturn]


def _failer(where: str, name: str) -> Fail:
    def fail(field: str, reason: str) -> NoReturn:
        raise ScenarioError(reason, path=where, scenario_id=name, field=field)

    return fail


def _list(doc: dict, key: str, fail: Fail) -> list:
    value = doc.get(key)
    if not isinstance(value, list):
        fail(key, f"expected a list, got {type(value).__name__}")
    return value


def _number(value, field: str, fail: Fail, bound: float = math.inf) -> float:
    """A finite JSON number within ±``bound``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        fail(field, f"expected a finite number, got {value!r}")
    if abs(value) > bound:
        fail(field, f"value {value:g} outside the physical range [-{bound:g}, {bound:g}]")
    return float(value)


def _track(obj, field: str, fail: Fail) -> Track | None:
    """The object's recorded states on the file's grid, or None when valid at no step."""
    if not isinstance(obj, dict):
        fail(field, "expected an object")
    valid_raw = obj.get("valid")
    if not isinstance(valid_raw, list) or not valid_raw:
        fail(f"{field}.valid", "expected a list of booleans per step")
    steps = len(valid_raw)
    series: dict[str, list] = {}
    for key in ("position", "velocity", "heading"):
        value = obj.get(key)
        if not isinstance(value, list) or len(value) != steps:
            fail(f"{field}.{key}", f"expected {steps} steps (as many as valid), got {_len(value)}")
        series[key] = value
    valid = np.array([v is True for v in valid_raw])
    xy, heading, speed = np.zeros((steps, 2)), np.zeros(steps), np.zeros(steps)
    for t in np.flatnonzero(valid):
        p, v = series["position"][t], series["velocity"][t]
        if not isinstance(p, dict) or not isinstance(v, dict):
            fail(f"{field}.position[{t}]", "expected {x, y} objects")
        x, y = (_number(p.get(a), f"{field}.position[{t}].{a}", fail, MAX_COORD_M) for a in ("x", "y"))
        vx, vy = (_number(v.get(a), f"{field}.velocity[{t}].{a}", fail) for a in ("x", "y"))
        h = _number(series["heading"][t], f"{field}.heading[{t}]", fail)
        if x == PLACEHOLDER or y == PLACEHOLDER:  # flagged valid with a placeholder position
            valid[t] = False
            continue
        xy[t], heading[t], speed[t] = (x, y), h, math.hypot(vx, vy)
    if not valid.any():
        return None
    length = _number(obj.get("length"), f"{field}.length", fail)
    width = _number(obj.get("width"), f"{field}.width", fail)
    kind = KINDS.get(str(obj.get("type")))
    if kind is None:
        fail(f"{field}.type", f"unknown type {obj.get('type')!r} (known: {', '.join(KINDS)})")
    return Track(field, length, width, xy, heading, speed, valid, 0.0, kind)


def _len(value) -> str:
    return str(len(value)) if isinstance(value, list) else type(value).__name__


def _lanes(roads: list, origin: np.ndarray, fail: Fail) -> list[Lanelet]:
    """Lanelets of the ``lane`` polylines (re-centred), successors joined by end points."""
    lanes = []
    for k, road in enumerate(roads):
        if not isinstance(road, dict) or road.get("type") != "lane":
            continue
        geometry = road.get("geometry")
        if not isinstance(geometry, list):
            fail(f"roads[{k}].geometry", "expected a list of {x, y} points")
        pts = np.array(
            [
                [
                    _number(
                        p.get(a) if isinstance(p, dict) else None,
                        f"roads[{k}].geometry.{a}",
                        fail,
                        MAX_COORD_M,
                    )
                    for a in "xy"
                ]
                for p in geometry
            ]
        ).reshape(-1, 2)
        if len(pts):
            keep = np.concatenate([[True], np.any(np.diff(pts, axis=0) != 0, axis=1)])
            pts = pts[keep] - origin
        if len(pts) >= 2:
            lanes.append(Lanelet(str(road.get("id", k)), pts, LANE_WIDTH_M, [], 0.0))
    if lanes:
        starts = np.array([lane.center[0] for lane in lanes])
        for lane in lanes:
            near = np.flatnonzero(np.hypot(*(starts - lane.center[-1]).T) <= SUCCESSOR_GAP_M)
            lane.successors.extend(lanes[j].id for j in near if lanes[j] is not lane)
    return lanes


def _goal(ego: dict, origin: np.ndarray) -> np.ndarray | None:
    goal = ego.get("goalPosition")
    if not isinstance(goal, dict):
        return None
    x, y = goal.get("x"), goal.get("y")
    ok = all(isinstance(v, (int, float)) and math.isfinite(v) and v != PLACEHOLDER for v in (x, y))
    return np.array([x, y], float) - origin if ok else None


class WomdSource(RecordedFilesSource):
    """GPUDrive JSON files (a directory expands to its *.json, sorted); one file per position.
    replay: the other agents follow their log (default) or IDM from their initial state;
    ego: the object id to drive as the ego (None: each file's SDC)."""

    title = "Waymo Open Motion (GPUDrive JSON)"

    def __init__(self, paths: list[Path], replay: bool = True, dt: float = WOMD_DT_S, ego: str | None = None):
        super().__init__(expand_paths(paths, "*.json"), "womd", paths, replay, dt, ego)

    def load_file(self, path: Path, config) -> ScenarioRecord:
        return load_womd(path, config)
