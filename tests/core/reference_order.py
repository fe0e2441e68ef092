"""The reference's route groups: the order by (route group, position) that the sorted agent
order of tests/core/reference.py follows (the MLP observation's neighbours are defined on it).

Independent of drivesim.core: NumPy on the host road dict (``centers`` (L, P, 2),
``lane_valid`` (L,)).
"""

from __future__ import annotations

import numpy as np


def bent_alone(road, route_id, valid, config):
    """(L,) bool: bent routes (more than one real segment) that stay groups of their own,
    which they do when their agents fit SearchPlan.bend_capacity ("auto": a quarter of the
    agent slots, at least 16; never with lane changes or all pairs). route_id, valid: (N,)
    each agent's route and whether it is present."""
    n = len(route_id)
    seg = np.diff(road["centers"], axis=1)
    real = np.hypot(seg[..., 0], seg[..., 1]) > 1e-6
    bent = (real.sum(axis=1) > 1) & road["lane_valid"]
    cap = config.search.bend_capacity
    if cap == "auto":
        cap = max(16, 8 * -(-n // 32))
    if config.lane_changes or config.search.neighbours == "all_pairs":
        cap = 0
    cap = min(cap, n)
    on_bent = int(np.sum(valid & bent[route_id]))
    return bent & (cap > 0) & (on_bent <= cap)


def route_groups(road, min_separation=2.5, alone=None):
    """Group of each route: routes are joined unless both are single straight segments
    and either cross (not parallel) or are parallel and at least ``min_separation`` apart
    (connected components, label = the smallest route index); invalid routes stay alone,
    and so do the routes ``alone`` marks (bent routes whose agents are searched directly)."""
    centers, valid = road["centers"], road["lane_valid"]
    count = len(valid)
    lines = []
    for r in range(count):
        pts = centers[r]
        seg = np.diff(pts, axis=0)
        real = np.hypot(seg[:, 0], seg[:, 1]) > 1e-6
        k = int(np.argmax(real))
        u = seg[k] / max(np.hypot(*seg[k]), 1e-12)
        lines.append((real.sum() == 1, pts[k], u, real.any() and valid[r]))
    label = np.arange(count)
    for _ in range(count):
        for r in range(count):
            for q in range(count):
                (sr, pr, ur, okr), (sq, pq, uq, okq) = lines[r], lines[q]
                if not (okr and okq) or (alone is not None and (alone[r] or alone[q])):
                    continue
                rel = pq - pr
                parallel = sr and sq and abs(ur[0] * uq[1] - ur[1] * uq[0]) < 1e-5
                crossing = sr and sq and not parallel
                apart = parallel and abs(-rel[0] * ur[1] + rel[1] * ur[0]) >= min_separation
                if not (crossing or apart):
                    label[r] = min(label[r], label[q])
    return label
