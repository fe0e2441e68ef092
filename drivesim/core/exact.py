"""Exact neighbours: route groups for the sorted order, and the all-pairs path.

The sorted-window search (``core.interactions``) examines, for each agent, a fixed number
of neighbours in the order by (route group, position). ``core.certificate`` proves per step
that no agent outside the window can be a leader or a collision partner the window missed;
where the proof fails, the scenario is simulated again by the all-pairs functions below
(``SearchPlan.neighbours = "all_pairs"``), so every leader and collision is exact. Every
function works on one scenario.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from drivesim.core import fold, interactions
from drivesim.core.types import Array, pytree_dataclass

EPS = 0.01  # [m] slack for float32 rounding of key differences (conservative side)


@pytree_dataclass
class RouteLines:
    """The line of each route that is one straight segment: straight (L,) bool, u (L, 2) unit
    direction and p (L, 2) a point on it (of the first real segment otherwise), crossing
    (L, L) bool: both routes straight and not parallel (their lines meet once)."""

    straight: Array
    u: Array
    p: Array
    crossing: Array


def route_lines(centers: Array, ok: Array) -> RouteLines:
    """RouteLines of routes ``centers`` (L, P, 2) with real segments ``ok`` (L, S)."""
    a, b = centers[:, :-1], centers[:, 1:]
    d = b - a
    seg_len = jnp.sqrt(jnp.sum(d * d, axis=-1))
    straight = jnp.sum(ok, axis=-1) == 1
    # the first real segment's fields (on a route without one, the last's: u and p unused there)
    fields = (d[..., 0], d[..., 1], seg_len, a[..., 0], a[..., 1])
    dx, dy, length, px, py = fold.first_found(ok > 0, fields, axis=1)[1]
    u = jnp.stack([dx, dy], axis=-1) / jnp.maximum(length, 1e-9)[:, None]
    p = jnp.stack([px, py], axis=-1)
    cross = u[:, None, 0] * u[None, :, 1] - u[:, None, 1] * u[None, :, 0]
    both = straight[:, None] & straight[None, :]
    return RouteLines(straight=straight, u=u, p=p, crossing=both & (jnp.abs(cross) >= 1e-5))


def route_separation(lines: RouteLines) -> Array:
    """(L, L) float32: the distance between two routes when both are single straight
    segments and parallel, else 0 (they may meet)."""
    u, p = lines.u, lines.p
    rel = p[None, :] - p[:, None]
    sep = jnp.abs(-rel[..., 0] * u[:, None, 1] + rel[..., 1] * u[:, None, 0])
    parallel = lines.straight[:, None] & lines.straight[None, :] & ~lines.crossing
    return jnp.where(parallel, sep, 0.0).astype(jnp.float32)


GROUP_SEPARATION = 2.5  # [m] parallel straight routes this far apart are ordered apart


def route_groups(
    sep: Array,
    real: Array,
    separation: float = GROUP_SEPARATION,
    crossing: Array | None = None,
    alone: Array | None = None,
) -> Array:
    """(L,) float32 group of each route: connected components of "routes closer than
    ``separation`` or not both straight" among ``real`` (L,) bool routes (valid, with a
    real segment) (label = smallest route index). Agents are sorted by (group, position):
    on a straight multi-lane road each lane is its own group, so an agent's leader is its
    next neighbour in the order. ``crossing`` (L, L): straight routes that cross
    (RouteLines.crossing) stay apart, their interactions found by core.junction.
    ``separation`` +inf: all real routes one group (the lane-change mode). ``alone`` (L,)
    bool: routes that stay groups of their own (bent routes whose agents core.bends
    searches directly)."""
    num = sep.shape[0]
    joined = (sep < separation) & real[:, None] & real[None, :]  # padding lanes stay alone
    if crossing is not None and separation != math.inf:
        joined = joined & ~crossing
    if alone is not None:
        joined = joined & ~alone[:, None] & ~alone[None, :]
    joined = joined | jnp.eye(num, dtype=bool)
    label = jnp.arange(num, dtype=jnp.float32)

    def spread(carry):  # each route takes the smallest label among the routes it joins
        label, _changed = carry
        new = jnp.min(jnp.where(joined, label[None, :], jnp.inf), axis=1)
        return new, jnp.any(new != label)

    # until no label changes (at most num rounds): one loop body in the program, not num
    label, _ = jax.lax.while_loop(lambda carry: carry[1], spread, (label, jnp.ones((), bool)))
    return label


def all_pairs_leader_index(a, proj) -> tuple[Array, Array]:
    """Sorted slot of each agent's leader over all agents (same rule as the window
    search: ahead along the lane tangent, centre inside the lane, nearest; ties: the lowest
    slot) and whether there is one; each (N,).

    Two fused reductions over the (N, N) pairs, a min of the distances and then a min of
    the slots at that distance: ``argmin``'s paired reduction costs more on the CPU."""
    rx = a.x[None, :] - a.x[:, None]
    ry = a.y[None, :] - a.y[:, None]
    ds = rx * proj.tx[:, None] + ry * proj.ty[:, None]
    lat = -rx * proj.ty[:, None] + ry * proj.tx[:, None] + proj.d[:, None]
    n = a.x.shape[0]
    cand = a.valid[:, None] & a.valid[None, :] & ~jnp.eye(n, dtype=bool)
    cand = cand & (ds > 0.0) & (jnp.abs(lat) < 0.5 * a.lane_width[:, None])
    ds_c = jnp.where(cand, ds, jnp.inf)
    nearest = jnp.min(ds_c, axis=1)
    slots = jnp.arange(n, dtype=jnp.int32)
    # without a candidate every slot is at distance +inf, so the first is slot 0
    first = jnp.min(jnp.where(ds_c == nearest[:, None], slots[None, :], n), axis=1)
    return first, nearest < jnp.inf


def all_pairs_leaders(a, proj) -> tuple[Array, Array, Array]:
    """Leader of every agent over all agents (:func:`all_pairs_leader_index`): its sorted
    slot (-1: none), the gap bumper to bumper (+inf: none) and its speed; each (N,)."""
    j, has = all_pairs_leader_index(a, proj)
    lx, ly, lv, ll = jnp.take(jnp.stack([a.x, a.y, a.speed, a.length]), j, axis=1)
    gap = (lx - a.x) * proj.tx + (ly - a.y) * proj.ty - 0.5 * (a.length + ll)
    return jnp.where(has, j, -1), jnp.where(has, gap, jnp.inf), jnp.where(has, lv, 0.0)


def all_pairs_hits(a) -> Array:
    """(N, N) bool: boxes of agents i < j overlap (upper triangle only)."""
    n = a.x.shape[0]
    hl, hw = 0.5 * a.length, 0.5 * a.width
    col = lambda v: v[:, None]  # noqa: E731
    row = lambda v: v[None, :]  # noqa: E731
    hit = interactions.boxes_overlap(
        row(a.x) - col(a.x),
        row(a.y) - col(a.y),
        col(a.cos_h),
        col(a.sin_h),
        row(a.cos_h),
        row(a.sin_h),
        col(hl),
        col(hw),
        row(hl),
        row(hw),
    )
    upper = jnp.arange(n)[:, None] < jnp.arange(n)[None, :]
    return hit & upper & col(a.valid) & row(a.valid)
