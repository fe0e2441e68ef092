"""Line of sight for the ego's observation (``SimConfig.occlusion``).

An agent is visible from the ego when at least one of its five sight points (its box's centre
and four corners) can be joined to the ego's centre by a segment that passes through no other
agent's box. Boxes are open: a segment that only touches a box's edge or corner is not
blocked by it. The ego and the observed agent never block; invalid slots never block.
"""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import Array

# unit offsets (along, across) of the sight points: centre, then the four corners
_ALONG = (0.0, 1.0, 1.0, -1.0, -1.0)
_ACROSS = (0.0, 1.0, -1.0, 1.0, -1.0)


def sight_points(
    x: Array, y: Array, cos_h: Array, sin_h: Array, length: Array, width: Array
) -> tuple[Array, Array]:
    """Centre and corners of boxes with inputs (...,): x and y (..., 5) [m]."""
    u = jnp.asarray(_ALONG, x.dtype) * (0.5 * length)[..., None]
    v = jnp.asarray(_ACROSS, x.dtype) * (0.5 * width)[..., None]
    c, s = cos_h[..., None], sin_h[..., None]
    return x[..., None] + u * c - v * s, y[..., None] + u * s + v * c


def crosses_box(start: tuple[Array, Array], end: tuple[Array, Array], box: tuple[Array, ...]) -> Array:
    """Whether the segments ``start`` -> ``end`` ((x, y), each broadcastable) pass through the
    open interior of the boxes ``box`` = (x, y, cos_h, sin_h, length, width) (broadcastable);
    bool, the broadcast shape. Liang-Barsky clipping in each box's frame: the segment's
    parameter interval inside the box's open slab along each axis, intersected with [0, 1]."""
    bx, by, c, s, length, width = box
    ax, ay = start[0] - bx, start[1] - by
    dx, dy = end[0] - start[0], end[1] - start[1]
    lo = jnp.zeros_like(ax * c)
    hi = jnp.ones_like(lo)
    for origin, step, half in (
        (ax * c + ay * s, dx * c + dy * s, 0.5 * length),
        (-ax * s + ay * c, -dx * s + dy * c, 0.5 * width),
    ):
        moving = step != 0.0
        safe = jnp.where(moving, step, 1.0)
        t_a, t_b = (-half - origin) / safe, (half - origin) / safe
        inside = jnp.abs(origin) < half  # a segment parallel to the slab: in it or never
        enter = jnp.where(moving, jnp.minimum(t_a, t_b), jnp.where(inside, -jnp.inf, jnp.inf))
        leave = jnp.where(moving, jnp.maximum(t_a, t_b), jnp.where(inside, jnp.inf, -jnp.inf))
        lo, hi = jnp.maximum(lo, enter), jnp.minimum(hi, leave)
    return lo < hi


def visible(
    eye: tuple[Array, Array], points: tuple[Array, Array], boxes: tuple[Array, ...], blockers: Array
) -> Array:
    """Whether some sight point is seen from ``eye`` (x, y) (): ``points`` (x, y) each (P,);
    ``boxes`` (x, y, cos_h, sin_h, length, width) each (N,); ``blockers`` (N,) bool, the boxes
    that can block. Returns () bool."""
    column = tuple(v[None, :] for v in boxes)
    blocked = crosses_box(eye, (points[0][:, None], points[1][:, None]), column) & blockers[None, :]
    return jnp.any(~jnp.any(blocked, axis=1))
