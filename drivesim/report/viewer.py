"""The scenario viewer: one scenario's rollout as a self-contained HTML animation.

``render(scenario, trajectory)`` gives the page: lanes and the drivable area (lane corridors),
every agent in the shape and colour of its road-user type (``AgentState.kind``: a vehicle as
an oriented box, a pedestrian as a disc, a cyclist as a narrow pointed capsule), with a
legend of the types present and each agent's type in its tooltip, the ego highlighted, the
collision step and the agent hit marked, play/pause and a step slider, and the ego's speed,
acceleration and time-to-collision under the map. No network, no plotly: a few kB of SVG and
JavaScript around the data.

The page reports itself for headless checks: ``<body data-ready="ok" data-frames=F
data-step=K>``, agents ``<polygon id="agent-I" data-kind=NAME points=...>`` (a pedestrian:
``<circle id="agent-I" data-kind="pedestrian" cx=.. cy=.. r=..>``), the legend's types in
``<p id="kinds">``, JavaScript errors in ``<pre id="js-errors">``; ``page.html#step=K`` opens
it at frame K (the slider's own path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from drivesim.core.types import KIND_NAMES
from drivesim.report.blocks import esc
from drivesim.report.strict_json import dumps

DEFAULT_DT = 0.1  # SimConfig.dt [s]


@dataclass(frozen=True)
class ViewerData:
    """Host arrays of one rollout, frame 0 = the initial state, frame k = after step k.

    x, y, heading, speed: (F, N) float; valid: (F, N) bool; length, width: (N,) [m];
    kind: (N,) int road-user type (``AgentState.kind``, scenario order); ego: ego slot;
    collision_frame: first frame with the ego overlapping an agent, or -1; hit: that agent's
    slot or -1.
    """

    x: np.ndarray
    y: np.ndarray
    heading: np.ndarray
    speed: np.ndarray
    valid: np.ndarray
    length: np.ndarray
    width: np.ndarray
    kind: np.ndarray
    ego: int
    collision_frame: int
    hit: int


def viewer_data(
    scenario, trajectory, collision_step: int | None = None, hit: int | None = None
) -> ViewerData:
    """Frames of one scenario (unbatched ``Scenario``) and its ``Trajectory`` (S, N).

    collision_step: the campaign's ``collision_step`` (step index, -1 none); None: found here
    from the boxes. hit: the agent the ego hit (e.g. a ``collided_with`` column); None: the
    agent overlapping the ego at the collision frame, found here with oriented boxes.
    """
    a = scenario.agents
    first = [np.asarray(v, float)[None] for v in (a.x, a.y, a.heading, a.speed)]
    rest = [np.asarray(v, float) for v in (trajectory.x, trajectory.y, trajectory.heading, trajectory.speed)]
    x, y, heading, speed = (np.concatenate([f, r]) for f, r in zip(first, rest, strict=True))
    valid = np.concatenate([np.asarray(a.valid, bool)[None], np.asarray(trajectory.valid, bool)])
    length, width = np.asarray(a.length, float), np.asarray(a.width, float)
    kind = agent_kinds(a.kind, valid)
    ego = int(np.asarray(scenario.ego_index))
    overlaps = _ego_overlaps(x, y, heading, valid, length, width, ego)  # (F, N)
    if collision_step is None:
        hits = np.flatnonzero(overlaps.any(axis=1))
        frame = int(hits[0]) if hits.size else -1
    else:
        frame = int(collision_step) + 1 if int(collision_step) >= 0 else -1
    if hit is None or hit < 0:
        near: np.ndarray | list[int] = np.flatnonzero(overlaps[frame]) if 0 <= frame < len(x) else []
        hit = int(near[0]) if len(near) else -1
    return ViewerData(x, y, heading, speed, valid, length, width, kind, ego, frame, int(hit))


def agent_kinds(kind, valid: np.ndarray) -> np.ndarray:
    """(N,) int road-user types of a scenario's agents; ValueError naming the agent when a
    type of an agent valid at some frame of ``valid`` (F, N) is not one of KIND_NAMES."""
    kind = np.asarray(kind).astype(int).reshape(-1)
    bad = np.flatnonzero(valid.any(axis=0) & ((kind < 0) | (kind >= len(KIND_NAMES))))
    if bad.size:
        i = int(bad[0])
        known = ", ".join(f"{k} {n}" for k, n in enumerate(KIND_NAMES))
        raise ValueError(f"agents.kind: agent {i} has road-user type {int(kind[i])}, not one of {known}")
    return kind


def _corners(x, y, heading, length, width) -> np.ndarray:
    """Box corners (..., 4, 2) of boxes centred at x, y."""
    c, s = np.cos(heading), np.sin(heading)
    hl, hw = length / 2, width / 2
    out = []
    for u, v in ((1, 1), (1, -1), (-1, -1), (-1, 1)):
        out.append(np.stack([x + u * hl * c - v * hw * s, y + u * hl * s + v * hw * c], -1))
    return np.stack(out, -2)


def _ego_overlaps(x, y, heading, valid, length, width, ego) -> np.ndarray:
    """(F, N) bool: agent's box overlaps the ego's (separating-axis test), ego excluded."""
    boxes = _corners(x, y, heading, length, width)  # (F, N, 4, 2)
    e = boxes[:, ego : ego + 1]  # (F, 1, 4, 2)
    separated = np.zeros(x.shape, bool)
    for poly in (e, boxes):
        for k in range(2):
            edge = poly[..., k + 1, :] - poly[..., k, :]
            axis = np.stack([-edge[..., 1], edge[..., 0]], -1)[..., None, :]  # (F, *, 1, 2)
            pa, pb = (e * axis).sum(-1), (boxes * axis).sum(-1)  # (F, *, 4)
            separated |= (pa.max(-1) < pb.min(-1)) | (pb.max(-1) < pa.min(-1))
    out = ~separated & valid & valid[:, ego : ego + 1]
    out[:, ego] = False
    return out


def ego_ttc(data: ViewerData) -> np.ndarray:
    """(F,) ego time-to-collision [s] with the nearest agent ahead in its corridor
    (lateral offset below the half widths); inf when nothing ahead is closing."""
    e = data.ego
    dx, dy = data.x - data.x[:, e : e + 1], data.y - data.y[:, e : e + 1]
    c, s = np.cos(data.heading[:, e : e + 1]), np.sin(data.heading[:, e : e + 1])
    ahead, side = dx * c + dy * s, -dx * s + dy * c
    gap = ahead - (data.length + data.length[e]) / 2
    closing = data.speed[:, e : e + 1] - data.speed * np.cos(data.heading - data.heading[:, e : e + 1])
    lane = data.valid & (ahead > 0) & (np.abs(side) < (data.width + data.width[e]) / 2)
    lane[:, e] = False
    with np.errstate(divide="ignore", invalid="ignore"):
        ttc = np.where(lane & (closing > 0), np.maximum(gap, 0.0) / closing, np.inf)
    return ttc.min(axis=1) if ttc.shape[1] else np.full(len(ttc), np.inf)


def _lanes(scenario, bounds) -> list[dict]:
    """Valid lane centre lines (points rounded to cm) clipped to the viewed area: the points
    from the first to the last segment whose bounding box meets it (a long straight lane of
    two points far outside the view still crosses it)."""
    road = scenario.road
    centers, widths = np.asarray(road.centers, float), np.asarray(road.widths, float)
    valid = np.asarray(road.lane_valid, bool)
    x0, y0, x1, y1 = bounds
    out = []
    for lane in np.flatnonzero(valid):
        pts = centers[lane]
        keep = np.ones(len(pts), bool)
        if len(pts) > 1:  # drop repeated padding points
            keep[1:] = np.any(np.diff(pts, axis=0) != 0, axis=1)
        pts = pts[keep]
        m = 50.0
        ends = (pts[:-1], pts[1:]) if len(pts) > 1 else (pts, pts)
        lo, hi = np.minimum(*ends), np.maximum(*ends)  # (segments, 2) bounding boxes
        meets = (hi[:, 0] > x0 - m) & (lo[:, 0] < x1 + m) & (hi[:, 1] > y0 - m) & (lo[:, 1] < y1 + m)
        if not meets.any():
            continue
        idx = np.flatnonzero(meets)
        pts = pts[idx[0] : idx[-1] + 2]
        out.append({"c": np.round(pts, 2).tolist(), "w": round(float(widths[lane]), 2)})
    return out


def _bounds(data: ViewerData) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) around every valid agent position, with a margin."""
    xs, ys = data.x[data.valid], data.y[data.valid]
    if xs.size == 0:
        return (-10.0, -10.0, 10.0, 10.0)
    m = 8.0 + float(data.length.max(initial=0.0))
    return (float(xs.min()) - m, float(ys.min()) - m, float(xs.max()) + m, float(ys.max()) + m)


def _finite(values: np.ndarray, digits: int = 3) -> list:
    """Rounded floats with None for NaN/Inf (strict JSON)."""
    return [round(float(v), digits) if math.isfinite(v) else None for v in np.asarray(values, float)]


def kinds_present(data: ViewerData) -> list[str]:
    """Names of the road-user types of the agents valid at some frame, in KIND_NAMES order."""
    present = set(data.kind[data.valid.any(axis=0)].tolist())
    return [name for k, name in enumerate(KIND_NAMES) if k in present]


def page_data(
    scenario, data: ViewerData, dt: float = DEFAULT_DT, title: str = "", info: dict | None = None
) -> dict:
    """The JSON the page draws from."""
    bounds = _bounds(data)
    e = data.ego
    accel = np.concatenate([[0.0], np.diff(data.speed[:, e]) / dt])
    frames = {k: [_finite(row, 2) for row in getattr(data, k)] for k in ("x", "y")}
    frames["h"] = [_finite(row, 3) for row in data.heading]
    frames["v"] = data.valid.astype(int).tolist()
    return {
        "title": title,
        "dt": dt,
        "bounds": bounds,
        "lanes": _lanes(scenario, bounds),
        "ego": e,
        "hit": data.hit,
        "collision_frame": data.collision_frame,
        "length": _finite(data.length, 2),
        "width": _finite(data.width, 2),
        "kind": data.kind.tolist(),
        "kind_names": list(KIND_NAMES),
        "kinds_present": kinds_present(data),
        "frames": frames,
        "traces": {
            "speed [m/s]": _finite(data.speed[:, e]),
            "accel [m/s²]": _finite(accel),
            "TTC [s]": _finite(np.minimum(ego_ttc(data), 1e9)),
        },
        "info": {k: v for k, v in (info or {}).items()},
    }


def render(
    scenario,
    trajectory,
    *,
    title: str = "",
    dt: float = DEFAULT_DT,
    collision_step: int | None = None,
    hit: int | None = None,
    info: dict | None = None,
) -> str:
    """The HTML page of one scenario (unbatched ``Scenario``, host or device arrays) and its
    ``Trajectory`` (S, N). ``info``: extra key/values shown above the map (e.g. the metrics)."""
    data = viewer_data(scenario, trajectory, collision_step, hit)
    payload = dumps(page_data(scenario, data, dt, title, info))
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    from drivesim.report.viewer_page import PAGE

    return PAGE.replace("%%TITLE%%", esc(title or "drivesim scenario")).replace("%%DATA%%", payload)


def write_page(html: str, out: str | Path) -> Path:
    """Write a page atomically; returns its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out
