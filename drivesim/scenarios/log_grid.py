"""Recorded tracks on one time grid, resampled to the simulation step (NumPy, host side).

Tracks are any objects with ``xy`` (Tf, 2), ``heading``, ``speed`` and ``valid`` (Tf,) on the
file's time grid (drivesim.scenarios.commonroad.Track).
"""

from __future__ import annotations

import numpy as np

from drivesim.scenarios import geometry

__all__ = ["fill_gaps", "resample_log", "track_grid"]


def track_grid(tracks: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stack tracks on a common time grid: xy (Tf, N, 2), heading, speed, valid (Tf, N)."""
    steps = max(len(t.valid) for t in tracks)
    n = len(tracks)
    xy, heading = np.zeros((steps, n, 2)), np.zeros((steps, n))
    speed, valid = np.zeros((steps, n)), np.zeros((steps, n), bool)
    for i, t in enumerate(tracks):
        k = len(t.valid)
        xy[:k, i], heading[:k, i], speed[:k, i], valid[:k, i] = t.xy, t.heading, t.speed, t.valid
    return xy, heading, speed, valid


def resample_log(xy, heading, speed, valid, file_dt: float, dt: float):
    """Resample (Tf, N[, 2]) log arrays from ``file_dt`` to ``dt`` by linear interpolation
    (headings along the shorter arc); a resampled step is valid when its bracketing
    recorded steps are. Exact copy when the steps agree."""
    tf = valid.shape[0]
    if abs(file_dt - dt) < 1e-9:
        return xy, heading, speed, valid
    steps = int(np.floor((tf - 1) * file_dt / dt + 1e-6)) + 1
    u = np.arange(steps) * dt / file_dt
    i0 = np.clip(np.floor(u + 1e-6).astype(int), 0, tf - 1)
    frac = u - i0
    frac[np.abs(frac) < 1e-6] = 0.0
    i1 = np.minimum(i0 + 1, tf - 1)
    w = frac[:, None]
    out_valid = valid[i0] & ((frac[:, None] == 0) | valid[i1])
    out_xy = xy[i0] + w[..., None] * (xy[i1] - xy[i0])
    out_heading = heading[i0] + w * geometry.wrap_angle(heading[i1] - heading[i0])
    out_speed = speed[i0] + w * (speed[i1] - speed[i0])
    return out_xy, out_heading, out_speed, out_valid


def fill_gaps(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Replace invalid steps (T, N[, ...]) by the nearest earlier (else later) valid value."""
    out = values.copy()
    for i in range(valid.shape[1]):
        idx = np.flatnonzero(valid[:, i])
        if idx.size == 0:
            continue
        pick = np.clip(np.searchsorted(idx, np.arange(valid.shape[0]), side="right") - 1, 0, idx.size - 1)
        out[:, i] = values[idx[pick], i]
    return out
