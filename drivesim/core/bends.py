"""Agents on bent routes: their leaders and overlaps by a direct search, without all pairs.

The sorted-window search and its certificate (core.certificate) need routes that are
straight lines. Along a bent route (a merge ramp, a turn through a junction, a curved lane)
the sort axis does not follow the agents, so such a route shared one route group with every
route it meets and the certificate failed for the whole scenario. Where a scenario has at
most ``capacity`` agents on bent routes (decided once per scenario,
core.neighbours.route_layout), each bent route is a group of its own, the certificate
proves the straight routes only, and :func:`search` examines every pair with a bent agent:

- every agent against every bent agent as its leader candidate (N x C);
- every bent agent against every agent as its leader (C x N);
- every bent agent's box against every agent's box (C x N): the pairs more than ``window``
  slots apart (nearer pairs are the window's), a pair of two bent agents once.

So every leader and overlap that involves a bent agent is found, whatever the sorted order.
The result is a core.junction.ZoneSearch; core.neighbours merges it with the junction
zone's, which leaves bent agents out. Every function works on one scenario.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp

from drivesim.core import interactions, junction, search_choice
from drivesim.core.materialize import decided_once, materialize
from drivesim.core.types import Array, SimConfig


def capacity(config: SimConfig, agents: int) -> int:
    """Most agents on bent routes searched directly: :func:`group_capacity`, and 0 on the
    all-pairs path (every pair is searched there)."""
    return 0 if config.search.neighbours == "all_pairs" else group_capacity(config, agents)


def group_capacity(config: SimConfig, agents: int) -> int:
    """SearchPlan.bend_capacity for scenarios of ``agents`` slots ("auto": a quarter of the
    slots in multiples of 8, at least 16; 0 turns the search off), at most ``agents``: bent
    routes with at most this many agents are groups of their own in the sorted order. 0 with
    lane changes (every lane is one group there). The same whichever search runs, so the
    order, and the observation that lists neighbours in it, do not depend on the search."""
    if config.lane_changes:
        return 0
    return min(search_choice.bend_capacity(config, agents), agents)


def search_rows(most: int) -> int:
    """Rows of the search for a batch whose scenarios have at most ``most`` agents on bent
    routes: ``most`` rounded up to an even count, at least 2 (fewer distinct programs; the
    rows beyond the agents are empty, and every result is the same whatever the rows)."""
    return max(2, most + most % 2)


def _own_leaders(a, proj, z: Array, extra: int) -> tuple[Array, Array, Array, Array]:
    """Each member's nearest leader over every agent, written to its own slot: distance
    along its tangent (+inf none), the leader's slot (-1 none), speed and length; (N,) each.
    z: member rows (junction.member_rows with tx, ty, d, lane_width as ``extra`` rows
    from column ``extra``)."""
    n = a.x.shape[0]
    col, row = (lambda v: v[:, None]), (lambda v: v[None, :])  # noqa: E731
    zx, zy, z_slot = z[:, 0], z[:, 1], z[:, -3]
    ztx, zty, zd, zw = (z[:, extra + i] for i in range(4))
    slot = jnp.arange(n, dtype=jnp.float32)
    rx, ry = row(a.x) - col(zx), row(a.y) - col(zy)  # (C, N)
    ds = rx * col(ztx) + ry * col(zty)
    lat = -rx * col(zty) + ry * col(ztx) + col(zd)
    cand = col(z_slot >= 0.0) & row(a.valid) & (row(slot) != col(z_slot))
    cand = cand & (ds > 0.0) & (jnp.abs(lat) < 0.5 * col(zw))
    ds_c = jnp.where(cand, ds, jnp.inf)
    nearest = jnp.min(ds_c, axis=1)  # (C,)
    first = jnp.min(jnp.where(ds_c == col(nearest), row(slot), n), axis=1)  # lowest slot of ties
    found = nearest < jnp.inf
    chosen = row(slot) == col(first)  # (C, N) one-hot on the leader's slot
    speed = jnp.sum(jnp.where(chosen, row(a.speed), 0.0), axis=1)
    length = jnp.sum(jnp.where(chosen, row(a.length), 0.0), axis=1)
    own = [(slot == z_slot[k]) & found[k] for k in range(z.shape[0])]  # (N,) each: member k at slot i

    def back(v):  # each member's value in its own slot (slots are distinct; added to 0.0 as a sum would)
        out = jnp.zeros(n, jnp.float32)
        for k, at_k in enumerate(own):
            out = jnp.where(at_k, out + v[k], out)
        return out

    mine = functools.reduce(jnp.logical_or, own)
    return (
        jnp.where(mine, back(nearest), jnp.inf),
        jnp.where(mine, back(first), -1.0).astype(jnp.int32),
        back(speed),
        back(length),
    )


def search(a, proj, window: int, capacity: int) -> junction.ZoneSearch:
    """Leaders and overlaps of every pair with a bent agent (``a.bent``) of SortedAgents ``a``
    with Projection ``proj`` (N,); ``fits``: every present bent agent had a row."""
    n = a.x.shape[0]
    member_slot, fits = junction.members(a.valid & a.bent, capacity)
    extra = len(junction.FIELDS)
    z = junction.member_rows(a, member_slot, (proj.tx, proj.ty, proj.d, a.lane_width))
    zx, zy, zl, zw, zc, zs = (z[:, i] for i in range(6))
    z_slot, z_ego, z_id = z[:, -3], z[:, -2], z[:, -1]
    member = z_slot >= 0.0
    # leaders: every agent among the members, and every member among all agents
    lead = junction.leaders_among(a, proj, z)
    own = _own_leaders(a, proj, z, extra)
    nearer = own[0] < lead[0]
    nearer = decided_once(nearer)  # read by four selects: one decision for all of them
    ds, lead_slot, lead_speed, lead_length = (jnp.where(nearer, o, w) for o, w in zip(own, lead, strict=True))
    # overlaps of members with every agent more than ``window`` slots away
    col, row = (lambda v: v[:, None]), (lambda v: v[None, :])  # noqa: E731
    slot = jnp.arange(n, dtype=jnp.float32)
    hit = interactions.boxes_overlap(
        row(a.x) - col(zx),
        row(a.y) - col(zy),
        col(zc),
        col(zs),
        row(a.cos_h),
        row(a.sin_h),
        0.5 * col(zl),
        0.5 * col(zw),
        0.5 * row(a.length),
        0.5 * row(a.width),
    )
    apart = jnp.abs(row(slot) - col(z_slot)) > window
    once = ~row(a.bent) | (row(slot) > col(z_slot))  # two members: from the lower slot only
    counted = materialize(hit & col(member) & row(a.valid) & apart & once)  # (C, N), read 4 times
    # a sum, not any(): XLA merges any() with the store's own or-reduction and tests the boxes again
    by_member = jnp.sum(counted, axis=1) > 0
    hit_agent = functools.reduce(
        jnp.logical_or, [counted[k] | ((slot == z_slot[k]) & by_member[k]) for k in range(z.shape[0])]
    )  # member by member: elementwise over the agents, no reduction over the members' axis
    ids = a.agent_id.astype(jnp.float32)
    partner = jnp.where(col(z_ego > 0.5), row(ids), jnp.where(row(a.is_ego), col(z_id), jnp.inf))
    partner = jnp.min(jnp.where(counted, partner, jnp.inf))
    return junction.ZoneSearch(
        ds=ds,
        lead=lead_slot,
        lead_speed=lead_speed,
        lead_length=lead_length,
        pairs=jnp.sum(counted.astype(jnp.int32)),
        hit=hit_agent,
        partner=junction.partner_id(partner),
        fits=fits,
    )
