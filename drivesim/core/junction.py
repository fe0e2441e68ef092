"""Junction zone: exact interactions between crossing straight routes, without all pairs.

Straight routes that cross (single-segment lines, not parallel) are put in different route
groups (core.exact.route_groups), so each lane of a crossing road keeps its own sorted
order and the window search finds leaders and collisions along it. Across two crossing
lines A and B every interaction happens near their crossing point p_AB:

- a leader j of i (j on B) has its centre inside i's lane corridor, |lat| < w_A / 2 from
  line A, and lies within ``drift`` of line B, so |j - p_AB| <= (w_A / 2 + drift) / sin(AB)
  + drift, wherever i is;
- overlapping boxes have centres at most ``reach`` (the largest box diagonal) apart, so
  both lie within (reach + 2 drift) / sin(AB) + drift of p_AB;

where ``drift`` is the largest lateral offset of an agent from its route and sin(AB) the
sine of the crossing angle. :func:`zone_radius` takes the largest of these around a centre
holding every crossing point (:func:`crossings`); the agents inside that disc are the zone.
Every agent is tested against the zone's agents as a leader candidate (N x C) and the
zone's agents against each other as collision pairs (C x C, pairs beyond the window only,
so no pair is counted twice). While no more than ``capacity`` agents are in the zone the
search is exact; otherwise the window certificate fails and the scenario falls back to all
pairs (core.fallback). Every function works on one scenario.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from drivesim.core import interactions
from drivesim.core.types import Array, pytree_dataclass

EPS = 0.01  # [m] slack for float32 rounding (conservative side)
NONE = jnp.iinfo(jnp.int32).max


@pytree_dataclass
class Crossings:
    """Static crossing geometry of one scenario, each (): centre_x, centre_y of the disc
    holding every crossing point of occupied straight routes of different groups, r0 its
    radius (-inf: no such crossing), sin_min the smallest |sine| of their crossing angles."""

    centre_x: Array
    centre_y: Array
    r0: Array
    sin_min: Array


def crossings(lines, groups: Array, occupied: Array) -> Crossings:
    """Crossings of one scenario. lines: core.exact.RouteLines (fields (L,) / (L, 2));
    groups (L,) route groups; occupied (L,) bool: some agent drives the route."""
    u, p = lines.u, lines.p
    cross = u[:, None, 0] * u[None, :, 1] - u[:, None, 1] * u[None, :, 0]  # (L, L)
    pair = lines.crossing & occupied[:, None] & occupied[None, :] & (groups[:, None] != groups[None, :])
    rel = p[None, :] - p[:, None]  # p_B - p_A
    t = (rel[..., 0] * u[None, :, 1] - rel[..., 1] * u[None, :, 0]) / jnp.where(pair, cross, 1.0)
    px = p[:, None, 0] + t * u[:, None, 0]
    py = p[:, None, 1] + t * u[:, None, 1]
    count = jnp.maximum(jnp.sum(pair), 1)
    cx = jnp.sum(jnp.where(pair, px, 0.0)) / count
    cy = jnp.sum(jnp.where(pair, py, 0.0)) / count
    dist = jnp.sqrt((px - cx) ** 2 + (py - cy) ** 2)
    r0 = jnp.max(jnp.where(pair, dist, -jnp.inf))
    sin_min = jnp.min(jnp.where(pair, jnp.abs(cross), 1.0))
    return Crossings(centre_x=cx, centre_y=cy, r0=r0, sin_min=sin_min)


def zone_radius(geo: Crossings, drift: Array, widest: Array, reach: Array) -> Array:
    """() radius of the zone this step (-inf: no crossing): every cross-route leader and
    every agent of a cross-route overlap lies inside (see the module docstring). drift:
    () largest |lateral offset| of a present agent; widest: () widest lane; reach: ()."""
    spread = jnp.maximum(0.5 * widest + drift, reach + 2.0 * drift) / geo.sin_min
    return geo.r0 + spread + drift + EPS


class ZoneSearch(NamedTuple):
    """What the zone found, in sorted order: ds (N,) distance along each agent's tangent to
    its nearest zone leader candidate (+inf none), lead (N,) int32 its sorted slot (-1 none),
    lead_speed / lead_length (N,) its speed and length; pairs () int32 overlapping zone
    pairs more than ``window`` slots apart; hit (N,) bool in such a pair; partner () int32
    id of the agent such a pair joins the ego with (the smallest, -1 none); fits () bool:
    the zone held at most ``capacity`` agents."""

    ds: Array
    lead: Array
    lead_speed: Array
    lead_length: Array
    pairs: Array
    hit: Array
    partner: Array
    fits: Array


def _members(a, geo: Crossings, radius: Array, capacity: int) -> tuple[Array, Array]:
    """(capacity, N) bool selection of the zone's agents in sorted order (row k: the k-th
    member) and () bool: all members fit."""
    dx, dy = a.x - geo.centre_x, a.y - geo.centre_y
    inside = a.valid & (jnp.sqrt(dx * dx + dy * dy) <= radius)
    rank = jnp.cumsum(inside.astype(jnp.int32)) - 1
    select = inside[None, :] & (rank[None, :] == jnp.arange(capacity)[:, None])
    return select, jnp.sum(inside.astype(jnp.int32)) <= capacity


def _pick(select: Array, values: Array, fill=0.0) -> Array:
    """(capacity,) the members' entries of ``values`` (N,) (``fill`` for empty rows)."""
    return jnp.sum(jnp.where(select, values[None, :], jnp.zeros((), values.dtype)), axis=1) + jnp.where(
        jnp.any(select, axis=1), jnp.zeros((), values.dtype), jnp.asarray(fill, values.dtype)
    )


def search(a, proj, geo: Crossings, radius: Array, window: int, capacity: int) -> ZoneSearch:
    """Zone leaders and overlaps of SortedAgents ``a`` with Projection ``proj`` (N,)."""
    n = a.x.shape[0]
    select, fits = _members(a, geo, radius, capacity)
    member = jnp.any(select, axis=1)  # (C,)
    slot = jnp.arange(n, dtype=jnp.int32)
    z_slot = _pick(select, slot, -1)
    zx, zy, zl, zw = (_pick(select, v) for v in (a.x, a.y, a.length, a.width))
    zc, zs, zv = (_pick(select, v) for v in (a.cos_h, a.sin_h, a.speed))
    # leaders: every agent against every member (same rule as the window search)
    rx = zx[None, :] - a.x[:, None]
    ry = zy[None, :] - a.y[:, None]
    ds = rx * proj.tx[:, None] + ry * proj.ty[:, None]
    lat = -rx * proj.ty[:, None] + ry * proj.tx[:, None] + proj.d[:, None]
    cand = member[None, :] & a.valid[:, None] & (z_slot[None, :] != slot[:, None])
    cand = cand & (ds > 0.0) & (jnp.abs(lat) < 0.5 * a.lane_width[:, None])
    ds = jnp.where(cand, ds, jnp.inf)
    best = jnp.argmin(ds, axis=1)
    at_best = jnp.arange(capacity)[None, :] == best[:, None]
    take = lambda v: jnp.sum(jnp.where(at_best, v[None, :], jnp.zeros((), v.dtype)), axis=1)  # noqa: E731
    best_ds = jnp.min(ds, axis=1)
    has = jnp.isfinite(best_ds)
    lead = jnp.where(has, take(z_slot), -1)
    # overlaps among members more than ``window`` slots apart (nearer pairs: the window's)
    hit = interactions.boxes_overlap(
        zx[None, :] - zx[:, None],
        zy[None, :] - zy[:, None],
        zc[:, None],
        zs[:, None],
        zc[None, :],
        zs[None, :],
        0.5 * zl[:, None],
        0.5 * zw[:, None],
        0.5 * zl[None, :],
        0.5 * zw[None, :],
    )
    apart = (z_slot[None, :] - z_slot[:, None]) > window  # members are in slot order
    upper = hit & apart & member[:, None] & member[None, :]
    both = upper | upper.T
    hit_member = jnp.any(both, axis=1)
    hit_agent = jnp.any(select & hit_member[:, None], axis=0)
    z_ego = _pick(select, a.is_ego.astype(jnp.int32)) > 0
    z_id = _pick(select, a.agent_id, -1)
    partner = jnp.min(jnp.where(both & z_ego[:, None], z_id[None, :], NONE))
    return ZoneSearch(
        ds=best_ds,
        lead=lead,
        lead_speed=jnp.where(has, take(zv), 0.0),
        lead_length=jnp.where(has, take(zl), 0.0),
        pairs=jnp.sum(upper.astype(jnp.int32)),
        hit=hit_agent,
        partner=jnp.where(partner == NONE, -1, partner),
        fits=fits,
    )


def empty(n: int) -> ZoneSearch:
    """The ZoneSearch of a scenario without crossings (N = ``n`` agents)."""
    f32 = jnp.float32
    return ZoneSearch(
        ds=jnp.full(n, jnp.inf, f32),
        lead=jnp.full(n, -1, jnp.int32),
        lead_speed=jnp.zeros(n, f32),
        lead_length=jnp.zeros(n, f32),
        pairs=jnp.zeros((), jnp.int32),
        hit=jnp.zeros(n, bool),
        partner=jnp.full((), -1, jnp.int32),
        fits=jnp.ones((), bool),
    )
