"""Host-side polyline helpers (NumPy): arc length, points along a polyline, resampling,
simplification, projection. Polylines are (P, 2) float64 arrays."""

from __future__ import annotations

import numpy as np


def arc_lengths(poly: np.ndarray) -> np.ndarray:
    """Cumulative arc length at each point (P,), starting at 0."""
    seg = np.linalg.norm(np.diff(poly, axis=0), axis=1)
    return np.concatenate([[0.0], np.cumsum(seg)])


def point_along(poly: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (n, 2) and headings (n,) at arc lengths s (n,); extrapolates past both ends."""
    s = np.asarray(s, np.float64)
    cum = arc_lengths(poly)
    seg = np.clip(np.searchsorted(cum, s, side="right") - 1, 0, len(poly) - 2)
    a, b = poly[seg], poly[seg + 1]
    d = b - a
    length = np.maximum(np.linalg.norm(d, axis=1), 1e-12)
    u = d / length[:, None]
    xy = a + (s - cum[seg])[:, None] * u
    return xy, np.arctan2(u[:, 1], u[:, 0])


def resample(poly: np.ndarray, count: int) -> np.ndarray:
    """``count`` points equally spaced in arc length from the first to the last point."""
    cum = arc_lengths(poly)
    if cum[-1] <= 0:
        return np.repeat(poly[:1], count, axis=0)
    s = np.linspace(0.0, cum[-1], count)
    return np.stack([np.interp(s, cum, poly[:, 0]), np.interp(s, cum, poly[:, 1])], axis=1)


def simplify(poly: np.ndarray, tolerance: float, max_points: int) -> np.ndarray:
    """Ramer-Douglas-Peucker simplification to ``tolerance`` [m]; if still longer than
    ``max_points``, resample to ``max_points`` equally spaced points. Drops repeated points."""
    keep = np.concatenate([[True], np.linalg.norm(np.diff(poly, axis=0), axis=1) > 1e-6])
    poly = poly[keep]
    if len(poly) < 2:
        return np.concatenate([poly, poly + [1e-3, 0.0]])[:2]
    mask = np.zeros(len(poly), bool)
    mask[[0, -1]] = True
    stack = [(0, len(poly) - 1)]
    while stack:
        i, j = stack.pop()
        if j <= i + 1:
            continue
        a, b = poly[i], poly[j]
        d = b - a
        norm = np.linalg.norm(d)
        rel = poly[i + 1 : j] - a
        if norm < 1e-9:
            dist = np.linalg.norm(rel, axis=1)
        else:
            dist = np.abs(rel[:, 0] * d[1] - rel[:, 1] * d[0]) / norm
        k = int(np.argmax(dist))
        if dist[k] > tolerance:
            mask[i + 1 + k] = True
            stack += [(i, i + 1 + k), (i + 1 + k, j)]
    out = poly[mask]
    return resample(out, max_points) if len(out) > max_points else out


def distance_to(poly: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distance (n,) of points (n, 2) to the polyline and the tangent angle (n,) there."""
    a = poly[:-1][None]
    d = np.diff(poly, axis=0)[None]
    len2 = np.maximum(np.sum(d * d, axis=-1), 1e-12)
    rel = points[:, None, :] - a
    t = np.clip(np.sum(rel * d, axis=-1) / len2, 0.0, 1.0)
    near = a + t[..., None] * d
    dist = np.linalg.norm(points[:, None, :] - near, axis=-1)
    best = np.argmin(dist, axis=1)
    rows = np.arange(len(points))
    tangent = d[0, best]
    return dist[rows, best], np.arctan2(tangent[:, 1], tangent[:, 0])


def wrap_angle(angle: np.ndarray) -> np.ndarray:
    """Angle wrapped to [-pi, pi)."""
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def dominant_axis(angles: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Unit (2,) vector of the dominant direction of ``angles`` taken as axes (a and a + pi
    count the same), via the doubled-angle mean; points toward the majority direction."""
    angles = np.asarray(angles, np.float64)
    w = np.ones_like(angles) if weights is None else np.asarray(weights, np.float64)
    if angles.size == 0 or w.sum() <= 0:
        return np.array([1.0, 0.0], np.float32)
    axis_angle = 0.5 * np.arctan2(np.sum(w * np.sin(2 * angles)), np.sum(w * np.cos(2 * angles)))
    axis = np.array([np.cos(axis_angle), np.sin(axis_angle)])
    if np.sum(w * (np.cos(angles) * axis[0] + np.sin(angles) * axis[1])) < 0:
        axis = -axis
    return axis.astype(np.float32)
