"""Float64 reference geometry of oriented boxes: corners, separating-axis distance and
polygon overlap (independent of drivesim.core's box tests)."""

from __future__ import annotations

import math

import numpy as np


def box_corners(x, y, h, length, width):
    """(4, 2) corners of an oriented box, counter-clockwise."""
    c, s = math.cos(h), math.sin(h)
    u = np.array([c, s]) * 0.5 * length
    v = np.array([-s, c]) * 0.5 * width
    centre = np.array([x, y])
    return np.array([centre + u + v, centre - u + v, centre - u - v, centre + u - v])


def sat_separation(ci, cj):
    """Largest gap between the projections of two convex quads on their edge normals
    (> 0: separated, <= 0: overlapping or touching)."""
    best = -np.inf
    for corners in (ci, cj):
        for k in range(2):
            edge = corners[k + 1] - corners[k]
            axis = np.array([-edge[1], edge[0]]) / math.hypot(*edge)
            pi, pj = ci @ axis, cj @ axis
            best = max(best, max(pi.min() - pj.max(), pj.min() - pi.max()))
    return best


def _inside(point, corners):
    """Point inside or on a counter-clockwise convex quad."""
    for k in range(4):
        a, b = corners[k], corners[(k + 1) % 4]
        if (b[0] - a[0]) * (point[1] - a[1]) - (b[1] - a[1]) * (point[0] - a[0]) < 0.0:
            return False
    return True


def _segments_cross(p1, p2, q1, q2):
    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    d1, d2 = orient(q1, q2, p1), orient(q1, q2, p2)
    d3, d4 = orient(p1, p2, q1), orient(p1, p2, q2)
    return (d1 * d2 <= 0.0) and (d3 * d4 <= 0.0)


def polygon_overlap(ci, cj):
    """Two convex quads intersect (touching included): a corner of one inside the other,
    or two edges crossing. Polygon test, independent of separating axes."""
    if any(_inside(p, cj) for p in ci) or any(_inside(p, ci) for p in cj):
        return True
    for k in range(4):
        for m in range(4):
            if _segments_cross(ci[k], ci[(k + 1) % 4], cj[m], cj[(m + 1) % 4]):
                return True
    return False
