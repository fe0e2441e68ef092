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
    bool, the broadcast shape. Separating axes in each box's frame: the segment misses the
    open box iff its projections touch or clear the box's on the box's two axes or on the
    segment's normal (no division)."""
    bx, by, c, s, length, width = box
    ax, ay = start[0] - bx, start[1] - by
    dx, dy = end[0] - start[0], end[1] - start[1]
    u0, v0 = ax * c + ay * s, -ax * s + ay * c
    du, dv = dx * c + dy * s, -dx * s + dy * c
    hl, hw = 0.5 * length, 0.5 * width
    clear_u = (jnp.minimum(u0, u0 + du) >= hl) | (jnp.maximum(u0, u0 + du) <= -hl)
    clear_v = (jnp.minimum(v0, v0 + dv) >= hw) | (jnp.maximum(v0, v0 + dv) <= -hw)
    # a point (du = dv = 0) has no normal: its two axis tests decide
    clear_normal = (jnp.abs(u0 * dv - v0 * du) >= hl * jnp.abs(dv) + hw * jnp.abs(du)) & (
        (du != 0) | (dv != 0)
    )
    return ~(clear_u | clear_v | clear_normal)


def visible(
    eye: tuple[Array, Array], points: tuple[Array, Array], boxes: tuple[Array, ...], blockers: Array
) -> Array:
    """Whether some sight point of each target is seen from ``eye`` (x, y) (): ``points``
    (x, y) each (..., P); ``boxes`` (x, y, cos_h, sin_h, length, width) each (N,);
    ``blockers`` (..., N) bool, the boxes that can block each target. Returns (...,) bool."""
    blocked = crosses_box(eye, (points[0][..., None], points[1][..., None]), boxes) & blockers[..., None, :]
    return jnp.any(~jnp.any(blocked, axis=-1), axis=-1)
