"""Junction zone: exact interactions between crossing straight routes, without all pairs.

Straight routes that cross (single-segment lines, not parallel) are put in different route
groups (core.exact.route_groups), so each lane of a crossing road keeps its own sorted
order and the window search finds leaders and collisions along it. Across two crossing
lines A and B every interaction happens near their crossing point p_AB:

- a leader j of i (j on B) has its centre inside i's lane corridor, |lat| < w_A / 2 from
  line A, and lies within ``drift`` of line B, so |j - p_AB| <= (w_A / 2 + drift) / sin(AB)
  + drift, wherever i is;
- overlapping boxes i and j have centres at most (d_i + d_j) / 2 apart (d: box diagonals),
  so i lies within (reach_i + 2 drift) / sin(AB) + drift of p_AB, where ``reach_i`` bounds
  (d_i + d_j) / 2 for every j: the smaller of (d_i + the largest d) / 2 and half the two
  largest diagonals added;

where ``drift`` is the largest lateral offset of an agent from its route and sin(AB) the
sine of the crossing angle. :func:`zone_radius` takes the largest of these around a centre
holding every crossing point (:func:`crossings`), per agent; the agents inside their own
radius are the zone (a long vehicle's larger reach does not widen a car's).
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
from drivesim.core.materialize import decided_once, materialize
from drivesim.core.types import Array, pytree_dataclass

EPS = 0.01  # [m] slack for float32 rounding (conservative side)


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
    """Radius of the zone this step, the shape of ``reach`` (-inf: no crossing): every
    cross-route leader and every agent of a cross-route overlap lies inside its own (see the
    module docstring). drift: () largest |lateral offset| of a present agent; widest: ()
    widest lane; reach: () or (N,) each agent's overlap reach."""
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


# Up to this many slots, members() counts them over an (N, N) triangle: XLA:CPU runs a
# cumulative sum as a slow reduce-window (0.94-0.97x the time at 32 agents), but at 128 agents
# the triangle is 1.2-1.6x slower.
TRIANGLE_SLOTS = 32


def members(inside: Array, capacity: int) -> tuple[Array, Array]:
    """Sorted slot of each agent with ``inside`` (N,) bool, in slot order, (capacity,)
    int32 (-1: empty row), and () bool: all of them fit."""
    n = inside.shape[0]
    if n <= TRIANGLE_SLOTS:  # members up to and including each slot, over an (N, N) triangle
        slot = jnp.arange(n)
        count = jnp.sum((slot[:, None] >= slot[None, :]) & inside[None, :], axis=1, dtype=jnp.int32)
    else:
        count = jnp.cumsum(inside.astype(jnp.int32))
    # member k sits at the first slot where the running count exceeds k
    first = jnp.sum((count[None, :] <= jnp.arange(capacity)[:, None]).astype(jnp.int32), axis=1)
    return jnp.where(first < n, first, -1), count[-1] <= capacity


FIELDS = ("x", "y", "length", "width", "cos_h", "sin_h", "speed")


def member_rows(a, member_slot: Array, extra: tuple[Array, ...] = ()) -> Array:
    """(capacity, len(FIELDS) + len(extra) + 3) float32: each member's FIELDS, its
    ``extra`` (N,) rows, then its sorted slot, is_ego (0/1) and agent id (-1 and zeros on
    empty rows); member_slot (capacity,) from :func:`members`."""
    n = a.x.shape[0]
    tail = [jnp.arange(n, dtype=jnp.float32), a.is_ego.astype(jnp.float32), a.agent_id.astype(jnp.float32)]
    rows = jnp.stack([getattr(a, f) for f in FIELDS] + list(extra) + tail)  # slots, ids < 2^24: exact
    picked = rows[:, jnp.maximum(member_slot, 0)].T  # one small gather (capacity, F)
    unset = jnp.zeros(rows.shape[0]).at[-3].set(-1.0).at[-1].set(-1.0)
    return jnp.where((member_slot < 0)[:, None], unset[None, :], picked)


def leaders_among(a, proj, z: Array) -> tuple[Array, Array, Array, Array]:
    """Each agent's nearest leader candidate among the members (rows ``z`` from
    :func:`member_rows`): distance along its tangent (+inf none), the member's sorted slot
    (-1 none), speed and length; each (N,). Every agent against every member, one member at
    a time (elementwise over the agents, as the window search; the same rule and the first
    of equally near candidates); the chosen member's values read by one gather."""
    n, capacity = a.x.shape[0], z.shape[0]
    zx, zy, z_slot = z[:, 0], z[:, 1], z[:, -3]
    member = z_slot >= 0.0
    slot = jnp.arange(n, dtype=jnp.float32)
    best_ds = jnp.full(n, jnp.inf, jnp.float32)
    best = jnp.full(n, -1, jnp.int32)
    half_width = 0.5 * a.lane_width
    for k in range(capacity):
        rx, ry = zx[k] - a.x, zy[k] - a.y
        ds = rx * proj.tx + ry * proj.ty
        lat = -rx * proj.ty + ry * proj.tx + proj.d
        cand = member[k] & a.valid & (z_slot[k] != slot) & (ds > 0.0) & (jnp.abs(lat) < half_width)
        cand = cand & (ds < best_ds)
        best_ds = jnp.where(cand, ds, best_ds)
        best = jnp.where(cand, k, best)
    best = materialize(best)  # one search, read by every taken value
    found, at = best >= 0, jnp.maximum(best, 0)
    chosen = z[at]  # (N, F): the chosen member's row
    lead = jnp.where(found, chosen[:, -3].astype(jnp.int32), -1)
    # the chosen member's distance again from its stored index: the readers of the loop's
    # best_ds would each run the whole loop once more
    rx, ry = chosen[:, 0] - a.x, chosen[:, 1] - a.y
    best_ds = jnp.where(found, rx * proj.tx + ry * proj.ty, jnp.inf)
    return best_ds, lead, jnp.where(found, chosen[:, 6], 0.0), jnp.where(found, chosen[:, 2], 0.0)


def search(a, proj, geo: Crossings, radius: Array, window: int, capacity: int) -> ZoneSearch:
    """Zone leaders and overlaps of SortedAgents ``a`` with Projection ``proj`` (N,)."""
    n = a.x.shape[0]
    dx, dy = a.x - geo.centre_x, a.y - geo.centre_y
    # agents on bent routes are searched against every agent (core.bends), not here
    inside = a.valid & ~a.bent & (jnp.sqrt(dx * dx + dy * dy) <= radius)
    member_slot, fits = members(inside, capacity)
    z = member_rows(a, member_slot)
    zx, zy, zl, zw, zc, zs = (z[:, i] for i in range(6))
    z_slot, z_ego, z_id = z[:, -3], z[:, -2], z[:, -1]
    member = z_slot >= 0.0
    ds, lead, lead_speed, lead_length = leaders_among(a, proj, z)
    # overlaps among members more than ``window`` slots apart (nearer pairs: the window's)
    col, row = (lambda v: v[:, None]), (lambda v: v[None, :])  # noqa: E731
    hit = interactions.boxes_overlap(
        row(zx) - col(zx),
        row(zy) - col(zy),
        col(zc),
        col(zs),
        row(zc),
        row(zs),
        0.5 * col(zl),
        0.5 * col(zw),
        0.5 * row(zl),
        0.5 * row(zw),
    )
    upper = hit & col(member) & row(member) & ((row(z_slot) - col(z_slot)) > window)  # members in slot order
    both = upper | upper.T
    hit_slot = jnp.where(jnp.any(both, axis=1), member_slot, -1)
    hit_agent = jnp.any(hit_slot[:, None] == jnp.arange(n)[None, :], axis=0)
    partner = jnp.min(jnp.where(both & col(z_ego > 0.5), row(z_id), jnp.inf))
    return ZoneSearch(
        ds=ds,
        lead=lead,
        lead_speed=lead_speed,
        lead_length=lead_length,
        pairs=jnp.sum(upper.astype(jnp.int32)),
        hit=hit_agent,
        partner=partner_id(partner),
        fits=fits,
    )


def partner_id(smallest: Array) -> Array:
    """() int32 agent id from the smallest partner id found as float32 (+inf: none, -1)."""
    return jnp.where(smallest == jnp.inf, -1, smallest).astype(jnp.int32)


def merge(first: ZoneSearch, second: ZoneSearch) -> ZoneSearch:
    """One ZoneSearch from two that searched disjoint sets of pairs: the nearer leader
    candidate (``first``'s on ties), pairs added, hits joined, the smaller partner id."""
    nearer = second.ds < first.ds
    nearer = decided_once(nearer)  # read by four selects: one decision for all of them
    pick = lambda s, f: jnp.where(nearer, s, f)  # noqa: E731
    p, q = first.partner, second.partner
    return ZoneSearch(
        ds=pick(second.ds, first.ds),
        lead=pick(second.lead, first.lead),
        lead_speed=pick(second.lead_speed, first.lead_speed),
        lead_length=pick(second.lead_length, first.lead_length),
        pairs=first.pairs + second.pairs,
        hit=first.hit | second.hit,
        partner=jnp.where(p < 0, q, jnp.where(q < 0, p, jnp.minimum(p, q))),
        fits=first.fits & second.fits,
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
