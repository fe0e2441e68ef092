"""Exact neighbours: the window's certificate and the all-pairs path it falls back to.

The sorted-window search (``core.interactions``) examines, for each agent, a fixed number
of neighbours in sorted order. :func:`window_certified` proves per step that no agent
outside the window can be a leader or a collision partner the window missed; where the
proof fails, the scenario is simulated again by the all-pairs functions below
(``SimConfig.neighbours = "all_pairs"``), so every leader and collision is exact.

The proof bounds positions along the sort axis (key = x a_x + y a_y). Unexamined agents
are summarised per route by a suffix minimum and a prefix maximum of their keys; routes
that cannot reach an agent's lane corridor (parallel straight lanes farther apart than the
largest lateral drift allows) are left out, so an agent leading its lane does not fail the
proof because of traffic in other lanes. Every function works on one scenario.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core import interactions
from drivesim.core.types import Array

EPS = 0.01  # [m] slack for float32 rounding of key differences (conservative side)


def route_separation(centers: Array, ok: Array) -> Array:
    """(L, L) float32: the distance between two routes when both are single straight
    segments and parallel, else 0 (they may meet). centers (L, P, 2); ok (L, S) real
    segments."""
    a, b = centers[:, :-1], centers[:, 1:]
    d = b - a
    seg_len = jnp.sqrt(jnp.sum(d * d, axis=-1))
    straight = jnp.sum(ok, axis=-1) == 1
    first = jnp.argmax(ok, axis=-1)
    u = jnp.take_along_axis(d, first[:, None, None], axis=1)[:, 0]
    u = u / jnp.maximum(jnp.take_along_axis(seg_len, first[:, None], axis=1), 1e-9)
    p = jnp.take_along_axis(a, first[:, None, None], axis=1)[:, 0]
    cross = u[:, None, 0] * u[None, :, 1] - u[:, None, 1] * u[None, :, 0]
    rel = p[None, :] - p[:, None]
    sep = jnp.abs(-rel[..., 0] * u[:, None, 1] + rel[..., 1] * u[:, None, 0])
    parallel = straight[:, None] & straight[None, :] & (jnp.abs(cross) < 1e-5)
    return jnp.where(parallel, sep, 0.0).astype(jnp.float32)


GROUP_SEPARATION = 2.5  # [m] parallel straight routes this far apart are ordered apart


def route_groups(sep: Array, real: Array) -> Array:
    """(L,) float32 group of each route: connected components of "routes closer than
    GROUP_SEPARATION or not parallel" among ``real`` (L,) bool routes (valid, with a real
    segment) (label = smallest route index). Agents are sorted
    by (group, position): on a straight multi-lane road each lane is its own group, so an
    agent's leader is its next neighbour in the order."""
    num = sep.shape[0]
    joined = (sep < GROUP_SEPARATION) & real[:, None] & real[None, :]  # padding lanes stay alone
    joined = joined | jnp.eye(num, dtype=bool)
    label = jnp.arange(num, dtype=jnp.float32)
    for _ in range(num):
        label = jnp.min(jnp.where(joined, label[None, :], jnp.inf), axis=1)
    return label


def _shift(values: Array, offset: int, fill) -> Array:
    """out[..., i] = values[..., i + offset] (fill outside); offset may be negative."""
    n = values.shape[-1]
    padded = interactions.padded(values.T, abs(offset), fill).T
    return padded[..., abs(offset) + offset : abs(offset) + offset + n]


def _route_extremes(key: Array, valid: Array, onehot: Array):
    """Per route (L, N): suffix minimum and prefix maximum of valid agents' keys."""
    masked = onehot & valid[None]
    lo = jnp.where(masked, key[None], jnp.inf)
    hi = jnp.where(masked, key[None], -jnp.inf)
    suffix_min = jax.lax.cummin(lo, axis=1, reverse=True)
    prefix_max = jax.lax.cummax(hi, axis=1)
    return suffix_min, prefix_max


def window_certified(a, proj, lead_gap: Array, reach: Array, sep: Array, axis: Array, window: int) -> Array:
    """Whether the window search was provably exact for every agent this step; () bool.

    a: SortedAgents (x, y, valid, length, lane_width, route rows); proj: their Projection;
    lead_gap: (N,) gap to the window's leader (+inf none); reach: () largest box diagonal;
    sep: (L, L) from :func:`route_separation`; axis: (2,) sort axis.
    """
    num_routes = sep.shape[0]
    route = a.route.astype(jnp.int32)
    onehot = route[None, :] == jnp.arange(num_routes)[:, None]  # (L, N)
    key = interactions.sort_key(a.x, a.y, a.valid, axis)
    suffix_min, prefix_max = _route_extremes(key, a.valid, onehot)
    slack = min(interactions.BEHIND_SLACK, window)
    drift = jnp.max(jnp.where(a.valid, jnp.abs(proj.d), 0.0))
    own_sep = jnp.sum(jnp.where(onehot[None, :, :], sep[:, :, None], 0.0), axis=1)  # (L, N): sep[l, route_i]
    # leaders: routes whose agents can enter agent i's corridor
    lead_ok_route = own_sep - drift < 0.5 * a.lane_width[None] + EPS
    ta = proj.tx * axis[0] + proj.ty * axis[1]
    na = jnp.abs(-proj.ty * axis[0] + proj.tx * axis[1])
    forward = ta >= 0.0
    ahead_far = jnp.where(
        forward[None], _shift(suffix_min, window + 1, jnp.inf), _shift(suffix_min, slack + 1, jnp.inf)
    )
    behind_far = jnp.where(
        forward[None], _shift(prefix_max, -slack - 1, -jnp.inf), _shift(prefix_max, -window - 1, -jnp.inf)
    )
    ahead_min = jnp.min(jnp.where(lead_ok_route, ahead_far, jnp.inf), axis=0)
    behind_max = jnp.max(jnp.where(lead_ok_route, behind_far, -jnp.inf), axis=0)
    corridor = (0.5 * a.lane_width + jnp.abs(proj.d)) * na + EPS
    bound = lead_gap + 0.5 * a.length + 0.5 * reach + EPS  # >= the leader's ds (+inf: none)
    reach_along = jnp.where(ta == 0.0, 0.0, bound * ta)
    hi = corridor + jnp.where(forward, reach_along, 0.0)
    lo = -corridor + jnp.where(forward, 0.0, reach_along)
    none_ahead, none_behind = ahead_min == jnp.inf, behind_max == -jnp.inf  # (inf > inf is False)
    lead_ok = (none_ahead | (ahead_min - key > hi)) & (none_behind | (behind_max - key < lo))
    # collisions: pairs (i, j) with j more than ``window`` places after i; parallel routes
    # farther apart than twice the largest lateral reach (centre offset + half the box's
    # extent across the lane) cannot hold overlapping boxes
    cos_rel = jnp.abs(a.cos_h * proj.tx + a.sin_h * proj.ty)
    sin_rel = jnp.abs(a.cos_h * proj.ty - a.sin_h * proj.tx)
    across = jnp.abs(proj.d) + 0.5 * (a.width * cos_rel + a.length * sin_rel)
    lateral_reach = jnp.max(jnp.where(a.valid, across, 0.0))
    coll_ok_route = own_sep > 2.0 * lateral_reach + EPS
    far = _shift(suffix_min, window + 1, jnp.inf)
    coll_min = jnp.min(jnp.where(coll_ok_route, jnp.inf, far), axis=0)
    coll_ok = coll_min - key > reach + EPS
    return jnp.all(~a.valid | (lead_ok & coll_ok))


def all_pairs_leader_index(a, proj) -> tuple[Array, Array]:
    """Sorted slot of each agent's leader over all agents (same rule as the window
    search: ahead along the lane tangent, centre inside the lane, nearest) and whether
    there is one; each (N,)."""
    rx = a.x[None, :] - a.x[:, None]
    ry = a.y[None, :] - a.y[:, None]
    ds = rx * proj.tx[:, None] + ry * proj.ty[:, None]
    lat = -rx * proj.ty[:, None] + ry * proj.tx[:, None] + proj.d[:, None]
    n = a.x.shape[0]
    cand = a.valid[:, None] & a.valid[None, :] & ~jnp.eye(n, dtype=bool)
    cand = cand & (ds > 0.0) & (jnp.abs(lat) < 0.5 * a.lane_width[:, None])
    ds_c = jnp.where(cand, ds, jnp.inf)
    return jnp.argmin(ds_c, axis=1), jnp.any(cand, axis=1)


def all_pairs_leaders(a, proj) -> tuple[Array, Array]:
    """Leader of every agent over all agents (:func:`all_pairs_leader_index`): gap
    bumper to bumper (+inf: none) and leader speed; each (N,)."""
    n = a.x.shape[0]
    j, has = all_pairs_leader_index(a, proj)
    pick = lambda v: jnp.sum(jnp.where(jnp.arange(n)[None, :] == j[:, None], v[None, :], 0.0), axis=1)  # noqa: E731
    lx, ly, lv, ll = pick(a.x), pick(a.y), pick(a.speed), pick(a.length)
    gap = (lx - a.x) * proj.tx + (ly - a.y) * proj.ty - 0.5 * (a.length + ll)
    return jnp.where(has, gap, jnp.inf), jnp.where(has, lv, 0.0)


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
