"""CommonRoad lanelets -> RoadMap: centre lines, widths, per-agent routes.

Each agent's route is a chain of lanelets: the lanelet under its initial position (heading
aligned), then successors chosen to follow its recorded path (or the ego's goal), joined
and simplified to a modest number of points. The road's lanes are the distinct routes
followed by every lanelet near the agents (the drivable area). A route that passes a lanelet
referencing a traffic light gets that light's stop line at the lanelet's end (``Stop``).
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.etree.ElementTree import Element

import numpy as np

from drivesim.core.types import RoadMap
from drivesim.scenarios import geometry


@dataclass(frozen=True)
class RoadConfig:
    """route_points / lanelet_points: most polyline points per route / drivable lanelet;
    tolerance: simplification tolerance [m]; min_route_length [m]; margin: lanelets
    farther than this from every agent are dropped [m]; max_lanes: most road lanes;
    fallback_width: width of a straight route for an agent on no lanelet [m]."""

    route_points: int = 32
    lanelet_points: int = 16
    tolerance: float = 0.1
    min_route_length: float = 200.0
    margin: float = 50.0
    max_lanes: int = 256
    fallback_width: float = 3.5


@dataclass
class Lanelet:
    """id, centre (P, 2) float64 in driving direction, mean width, successor ids, speed limit,
    ids of the traffic lights it references (its own and its stop line's)."""

    id: str | None
    center: np.ndarray
    width: float
    successors: list
    speed_limit: float
    lights: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stop:
    """An agent's signal stop line: the traffic light's id, the lanelet whose end it is, and
    its arc length along the agent's route [m]."""

    light: str
    lanelet: str | None
    s: float


def parse_lanelets(root: Element, rd) -> list[Lanelet]:
    """Lanelets of a CommonRoad root; ``rd`` is the commonroad _Reader (errors)."""
    out = []
    for elem in root.findall("lanelet"):
        field = f"lanelet[id={elem.get('id')}]"
        bounds = []
        for side in ("leftBound", "rightBound"):
            pts = elem.findall(f"{side}/point")
            if len(pts) < 2:
                rd.fail(f"{field}/{side}", f"needs at least 2 points, has {len(pts)}")
            bounds.append(np.array([rd.point(p, f"{field}/{side}/point") for p in pts]))
        count = max(len(bounds[0]), len(bounds[1]))
        left, right = geometry.resample(bounds[0], count), geometry.resample(bounds[1], count)
        limit = elem.findtext("speedLimit")
        out.append(
            Lanelet(
                id=elem.get("id"),
                center=0.5 * (left + right),
                width=float(np.mean(np.linalg.norm(left - right, axis=1))),
                successors=[s.get("ref") for s in elem.findall("successor") if s.get("ref")],
                speed_limit=rd.number(limit, f"{field}/speedLimit") if limit is not None else 0.0,
                lights=_light_refs(elem),
            )
        )
    return out


def _light_refs(elem: Element) -> tuple[str, ...]:
    """Traffic light ids a lanelet references (itself or in its stop line), in order."""
    refs = [r.get("ref") for r in elem.findall("trafficLightRef") + elem.findall("stopLine/trafficLightRef")]
    return tuple(dict.fromkeys(r for r in refs if r))


def _stop_of(lanelets: list[Lanelet], chain: list[int], route: np.ndarray) -> Stop | None:
    """The first traffic-light stop line on a chain of lanelets: the end of the first lanelet
    that references a light, as an arc length along the (simplified) ``route``."""
    for k in chain:
        if lanelets[k].lights:
            end = lanelets[k].center[-1]
            return Stop(lanelets[k].lights[0], lanelets[k].id, _arc_length_at(route, end))
    return None


def _arc_length_at(line: np.ndarray, point: np.ndarray) -> float:
    """Arc length along polyline ``line`` (P, 2) of the point of it nearest ``point``."""
    a, b = line[:-1], line[1:]
    seg = b - a
    length2 = np.maximum(np.sum(seg * seg, axis=1), 1e-12)
    u = np.clip(np.sum((point - a) * seg, axis=1) / length2, 0.0, 1.0)
    dist = np.linalg.norm(a + u[:, None] * seg - point, axis=1)
    k = int(np.argmin(dist))
    return float(geometry.arc_lengths(line)[k] + u[k] * np.sqrt(length2[k]))


def _match(lanelets: list[Lanelet], xy: np.ndarray, heading: float) -> int | None:
    """Index of the lanelet under ``xy`` whose direction agrees with ``heading``."""
    best, best_d = None, np.inf
    for k, lane in enumerate(lanelets):
        d, tangent = geometry.distance_to(lane.center, xy[None])
        aligned = np.cos(tangent[0] - heading) > 0.5
        if aligned and d[0] <= 0.5 * lane.width + 1.0 and d[0] < best_d:
            best, best_d = k, d[0]
    return best


def _chain(
    lanelets: list[Lanelet], by_id: dict, start: int, hints: np.ndarray, goal_ids: set, length: float
) -> list[int]:
    """Lanelet indices from ``start`` along successors, following hint points, for ``length`` m."""
    chain = [start]
    total = geometry.arc_lengths(lanelets[start].center)[-1]
    while total < length:
        succ = [by_id[s] for s in lanelets[chain[-1]].successors if s in by_id and by_id[s] not in chain]
        if not succ:
            break
        chain.append(_pick(lanelets, chain[-1], succ, hints, goal_ids))
        total += geometry.arc_lengths(lanelets[chain[-1]].center)[-1]
    return chain


def _pick(lanelets, current: int, succ: list[int], hints: np.ndarray, goal_ids: set) -> int:
    goal = [k for k in succ if lanelets[k].id in goal_ids]
    if goal:
        return goal[0]
    if len(hints):
        dist = [geometry.distance_to(lanelets[k].center, hints)[0].min() for k in succ]
        k = int(np.argmin(dist))
        if dist[k] < lanelets[succ[k]].width:
            return succ[k]
    end = lanelets[current].center[-2:]
    out_angle = np.arctan2(*(end[1] - end[0])[::-1])
    first = [lanelets[k].center[1] - lanelets[k].center[0] for k in succ]
    turn = [abs(geometry.wrap_angle(np.arctan2(d[1], d[0]) - out_angle)) for d in first]
    return succ[int(np.argmin(turn))]


def _join(lanelets: list[Lanelet], chain: list[int]) -> np.ndarray:
    parts = [lanelets[chain[0]].center] + [lanelets[k].center[1:] for k in chain[1:]]
    return np.concatenate(parts)


def build_road(lanelets, xy0, heading0, hints, goal_ids, cfg: RoadConfig):
    """RoadMap (sort_axis to be set by the caller), route index (N,), the speed limit
    of each agent's start lanelet (N,) (0 where unknown) and each agent's traffic-light
    Stop (None: its route passes no lanelet with a light)."""
    by_id = {lane.id: k for k, lane in enumerate(lanelets)}
    routes: list[np.ndarray]
    key: tuple
    routes, widths, keys, route, limits, stops = [], [], {}, [], [], []
    for i in range(len(xy0)):
        travelled = geometry.arc_lengths(hints[i])[-1] if len(hints[i]) > 1 else 0.0
        length = max(cfg.min_route_length, 1.5 * travelled + 100.0)
        start = _match(lanelets, xy0[i], heading0[i])
        chain = []
        if start is None:
            u = np.array([np.cos(heading0[i]), np.sin(heading0[i])])
            key = ("straight", i)
            line, width, limit = np.stack([xy0[i] - 50.0 * u, xy0[i] + length * u]), cfg.fallback_width, 0.0
        else:
            chain = _chain(lanelets, by_id, start, hints[i][1:], set(goal_ids if i == 0 else ()), length)
            key = tuple(chain)
            line = _join(lanelets, chain)
            width = float(np.mean([lanelets[k].width for k in chain]))
            limit = lanelets[start].speed_limit
        if key not in keys:
            keys[key] = len(routes)
            routes.append(geometry.simplify(line, cfg.tolerance, cfg.route_points))
            widths.append(width)
        route.append(keys[key])
        limits.append(limit)
        stops.append(_stop_of(lanelets, chain, routes[keys[key]]))
    extra = _nearby(lanelets, np.concatenate(hints + [xy0]), cfg.margin)
    extra = extra[: max(cfg.max_lanes - len(routes), 0)]
    routes += [geometry.simplify(lanelets[k].center, cfg.tolerance, cfg.lanelet_points) for k in extra]
    widths += [lanelets[k].width for k in extra]
    points = max(len(r) for r in routes)
    centers = np.stack([np.concatenate([r, np.repeat(r[-1:], points - len(r), 0)]) for r in routes])
    f = np.float32
    road = RoadMap(
        centers=centers.astype(f),
        widths=np.asarray(widths, f),
        lane_valid=np.ones(len(routes), bool),
        sort_axis=np.array([1.0, 0.0], f),
        conflict_xy=np.zeros(2, f),
        conflict_radius=np.zeros((), f),
    )
    return road, np.asarray(route), np.asarray(limits), stops


def _nearby(lanelets: list[Lanelet], points: np.ndarray, margin: float) -> list[int]:
    """Lanelets within ``margin`` of some point, nearest first."""
    lo, hi = points.min(0) - margin, points.max(0) + margin
    scored = []
    for k, lane in enumerate(lanelets):
        if np.any(lane.center.max(0) < lo) or np.any(lane.center.min(0) > hi):
            continue
        d = geometry.distance_to(lane.center, points[:: max(1, len(points) // 256)])[0].min()
        if d <= margin:
            scored.append((d, k))
    return [k for _, k in sorted(scored)]
