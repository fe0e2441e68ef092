"""Argoverse 2 motion-forecasting scenarios: ``scenario_<id>.parquet`` (one row per track and
time step) with its vector map ``log_map_archive_<id>.json`` in the same directory.

What is read and how (every rule, the approximations included):
- agents: the tracks of moving road users (``vehicle``, ``bus``, ``pedestrian``,
  ``cyclist``, ``motorcyclist``); the focal track (``focal_track_id``, or the track whose
  ``track_id`` is ``ImportConfig.ego``: ``av2:PATH?ego=ID``, whose scenario name then ends
  in ``?ego=ID``) is the ego, driven by the policy from its first recorded state; the others
  follow their log (``replay``, the default) or IDM from their first state. Static objects
  (``static``, ``background``, ``construction``, ``riderless_bicycle``, ``unknown``) are
  read and counted (``Av2File.left_out``) but are not agents;
- boxes: AV2 records no object size, so each type gets a typical box (``BOXES``): an
  approximation that collision and off-road metrics inherit;
- speed: the norm of the recorded velocity; a track is valid at the steps it has a row;
- coordinates: re-centred on the ego's first position rounded to 1 m (float32 precision);
- lanes: each lane segment's ``centerline`` (the mean of its two boundaries where it has
  none) in driving direction, as wide as the mean distance between its boundaries (at least
  2 m), linked by the map's ``successors``; drivable areas and pedestrian crossings are read
  and counted but do not reach the engine.
"""

from __future__ import annotations

import io
import json
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from drivesim.core.types import CYCLIST, PEDESTRIAN, VEHICLE
from drivesim.core.validate import MAX_AGENTS, ScenarioError, validate_scenario
from drivesim.scenarios.commonroad import ImportConfig, Track, build_scenario
from drivesim.scenarios.input_files import expand_paths, read_input
from drivesim.scenarios.lanes import Lanelet
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.sources import RecordedFilesSource

AV2_DT_S = 0.1
KINDS = {
    "vehicle": VEHICLE,
    "bus": VEHICLE,
    "pedestrian": PEDESTRIAN,
    "cyclist": CYCLIST,
    "motorcyclist": CYCLIST,
}
BOXES = {"vehicle": (4.5, 2.0), "bus": (12.0, 2.6), "pedestrian": (0.5, 0.6), "cyclist": (1.8, 0.6)}
BOXES["motorcyclist"] = (2.2, 0.8)
MIN_LANE_WIDTH_M = 2.0
COLUMNS = (
    "track_id",
    "object_type",
    "timestep",
    "position_x",
    "position_y",
    "heading",
    "velocity_x",
    "velocity_y",
)
MAX_STEPS = 2000
REPLAY = ImportConfig(replay=True)
Fail = Callable[[str, str], NoReturn]


@dataclass(frozen=True)
class Av2File:
    """What a scenario holds beyond the engine's: tracks left out per object type, and the
    map's elements per kind (lane segments, drivable areas, pedestrian crossings)."""

    left_out: dict
    map_counts: dict


def map_path(scenario: Path) -> Path:
    """``log_map_archive_<id>.json`` beside ``scenario_<id>.parquet``."""
    return scenario.with_name("log_map_archive_" + scenario.stem.removeprefix("scenario_") + ".json")


def load_av2(path: str | Path, config: ImportConfig = REPLAY) -> ScenarioRecord:
    """Import one AV2 scenario and its map; ScenarioError naming the file and field otherwise."""
    return read_av2(path, config)[0]


def read_av2(path: str | Path, config: ImportConfig = REPLAY) -> tuple[ScenarioRecord, Av2File]:
    """The record of one scenario and what else it holds (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    where = str(path)
    try:
        table = pq.read_table(io.BytesIO(read_input(path, config.max_bytes)), use_threads=False)
    except (pa.ArrowException, OSError) as err:
        raise ScenarioError(f"not a readable Parquet file ({err})", path=where) from None
    missing = [c for c in (*COLUMNS, "focal_track_id", "scenario_id") if c not in table.column_names]
    if missing:
        raise ScenarioError(f"missing column {missing[0]!r}", path=where, field=missing[0])
    cols = {c: table.column(c).to_pylist() for c in (*COLUMNS, "focal_track_id", "scenario_id")}
    name = str(cols["scenario_id"][0]) if cols["scenario_id"] else path.stem

    def fail(field: str, reason: str) -> NoReturn:
        raise ScenarioError(reason, path=where, scenario_id=name, field=field)

    if config.ego is not None:
        if config.ego not in {str(t) for t in cols["track_id"]}:
            fail("track_id", f"no track has id {config.ego!r} (the ego asked for)")
        cols["focal_track_id"] = [config.ego]
    name = config.scenario_name(name)
    tracks, left_out, origin = _tracks(cols, fail)
    map_file = map_path(path)
    lanelets, counts = _map(_json(map_file, config.max_bytes), origin, str(map_file))
    scenario, _ = build_scenario(tracks, lanelets, (None, []), AV2_DT_S, scenario_id_of(name), config)
    validate_scenario(scenario, where=f"{where}#{name}")
    info = Av2File(left_out, counts)
    record = ScenarioRecord(scenario=scenario, family="av2", source=where, name=name, note=_note(info))
    return record, info


def _note(info: Av2File) -> str:
    """What the engine does not get: the tracks of static objects and the map's drivable
    areas and pedestrian crossings (the lane segments make the road)."""
    parts = [f"{n} {kind} tracks" for kind, n in sorted(info.left_out.items()) if n]
    parts += [
        f"{n} {kind.replace('_', ' ')}"
        for kind, n in sorted(info.map_counts.items())
        if kind != "lane_segments"
    ]
    return "left out: " + ", ".join(parts) if parts else ""


def scenario_id_of(name: str) -> int:
    """Stable int32 id of an AV2 scenario id (crc32, non-negative)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def _tracks(cols: dict, fail: Fail) -> tuple[list[Track], dict, np.ndarray]:
    """The agents' tracks (the focal track first), tracks left out per type, and the origin."""
    steps = np.asarray(cols["timestep"], dtype=float)
    if len(steps) == 0:
        fail("timestep", "no rows (zero agents)")
    if not np.all(np.isfinite(steps)) or steps.min() < 0 or steps.max() >= MAX_STEPS:
        fail("timestep", f"time steps must be integers in [0, {MAX_STEPS})")
    numbers = {c: np.asarray(cols[c], dtype=float) for c in COLUMNS[3:]}
    for c, v in numbers.items():
        if not np.all(np.isfinite(v)):
            fail(c, "non-finite value (NaN or Inf)")
        if c.startswith("position") and np.any(np.abs(v) > 1e6):
            fail(c, "value outside the physical range [-1e+06, 1e+06]")
    focal = cols["focal_track_id"][0]
    ids = [str(t) for t in cols["track_id"]]
    order = sorted(set(ids), key=lambda t: (t != str(focal), t))
    if order[0] != str(focal):
        fail("focal_track_id", f"focal track {focal!r} has no rows")
    length = int(steps.max()) + 1
    by_track: dict[str, list[int]] = {}
    for row, t in enumerate(ids):
        by_track.setdefault(t, []).append(row)
    tracks: list[Track] = []
    left_out: dict[str, int] = {}
    for t in order:
        rows = np.asarray(by_track[t])
        kind_name = str(cols["object_type"][rows[0]])
        if kind_name not in KINDS:
            if t == str(focal):
                fail("object_type", f"the ego's track {t} is a {kind_name!r}, not a road user")
            left_out[kind_name] = left_out.get(kind_name, 0) + 1
            continue
        at = steps[rows].astype(int)
        xy, heading, speed = np.zeros((length, 2)), np.zeros(length), np.zeros(length)
        valid = np.zeros(length, bool)
        xy[at] = np.stack([numbers["position_x"][rows], numbers["position_y"][rows]], axis=1)
        heading[at] = numbers["heading"][rows]
        speed[at] = np.hypot(numbers["velocity_x"][rows], numbers["velocity_y"][rows])
        valid[at] = True
        box = BOXES[kind_name]
        tracks.append(Track(f"track {t}", box[0], box[1], xy, heading, speed, valid, 0.0, KINDS[kind_name]))
    if len(tracks) > MAX_AGENTS:
        fail("track_id", f"too many agents: {len(tracks)} road users > {MAX_AGENTS}")
    origin = np.round(tracks[0].xy[np.flatnonzero(tracks[0].valid)[0]])
    for track in tracks:
        track.xy = track.xy - origin
    return tracks, left_out, origin


def _json(path: Path, max_bytes: int) -> dict:
    def refuse(value):
        raise ValueError(f"non-finite number {value}")

    try:
        doc = json.loads(read_input(path, max_bytes), parse_constant=refuse)
    except (ValueError, RecursionError) as err:
        raise ScenarioError(f"not JSON ({err})", path=str(path)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("lane_segments"), dict):
        raise ScenarioError("expected an object with lane_segments", path=str(path), field="lane_segments")
    return doc


def _points(value, field: str, where: str, origin: np.ndarray) -> np.ndarray:
    """(P, 2) float64 of a list of {x, y} points, re-centred."""
    try:
        pts = np.array([[float(p["x"]), float(p["y"])] for p in value], float).reshape(-1, 2)
    except (TypeError, KeyError, ValueError):
        raise ScenarioError("expected a list of {x, y} points", path=where, field=field) from None
    if not np.all(np.isfinite(pts)) or np.any(np.abs(pts) > 1e6):
        raise ScenarioError("non-finite or out-of-range coordinate", path=where, field=field)
    return pts - origin


def _map(doc: dict, origin: np.ndarray, where: str) -> tuple[list[Lanelet], dict]:
    """Lanelets of the lane segments, and the map's element counts."""
    lanes = []
    for key, seg in doc["lane_segments"].items():
        field = f"lane_segments[{key}]"
        if not isinstance(seg, dict):
            raise ScenarioError("expected an object", path=where, field=field)
        left = _points(seg.get("left_lane_boundary"), f"{field}.left_lane_boundary", where, origin)
        right = _points(seg.get("right_lane_boundary"), f"{field}.right_lane_boundary", where, origin)
        center = seg.get("centerline")
        line = _points(center, f"{field}.centerline", where, origin) if center else _mean_line(left, right)
        if len(line):
            line = line[np.concatenate([[True], np.any(np.diff(line, axis=0) != 0, axis=1)])]
        if len(line) < 2:
            continue
        width = max(_mean_gap(left, right), MIN_LANE_WIDTH_M)
        successors = [str(s) for s in seg.get("successors") or []]
        lanes.append(Lanelet(str(seg.get("id", key)), line, width, successors, 0.0))
    counts = {k: len(v) for k, v in doc.items() if isinstance(v, (dict, list))}
    return lanes, counts


def _resample(line: np.ndarray, n: int) -> np.ndarray:
    s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(line, axis=0).T))])
    u = np.linspace(0.0, s[-1], n)
    return np.stack([np.interp(u, s, line[:, 0]), np.interp(u, s, line[:, 1])], axis=1)


def _mean_line(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    if len(left) < 2 or len(right) < 2:
        return np.zeros((0, 2))
    return 0.5 * (_resample(left, 16) + _resample(right, 16))


def _mean_gap(left: np.ndarray, right: np.ndarray) -> float:
    if len(left) < 2 or len(right) < 2:
        return 0.0
    gap = np.hypot(*(_resample(left, 16) - _resample(right, 16)).T)
    return float(np.mean(gap)) if math.isfinite(float(np.mean(gap))) else 0.0


class Av2Source(RecordedFilesSource):
    """AV2 scenario files (a directory expands to its ``scenario_*.parquet`` at any depth,
    sorted), each with its map beside it; one scenario per position. ego: the track id to
    drive as the ego (None: each scenario's focal track)."""

    title = "Argoverse 2"

    def __init__(self, paths: list[Path], replay: bool = True, dt: float = AV2_DT_S, ego: str | None = None):
        files: list[Path] = []
        for p in map(Path, paths):
            files += sorted(p.rglob("scenario_*.parquet")) if p.is_dir() else expand_paths([p], "*")
        super().__init__(files, "av2", paths, replay, dt, ego)

    def load_file(self, path: Path, config) -> ScenarioRecord:
        return load_av2(path, config)
