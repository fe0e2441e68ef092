"""Nearest agents ahead and behind in every lane, from one sort per lane: O(L N log N).

MOBIL (core.mobil) asks, for each agent i and a lane l (its own or a neighbour), which
member of lane l is nearest ahead of i and which nearest behind, measured along l's frame.
Members of l: present agents whose centre lies inside l's corridor or who are changing into
l. The answer for every (l, i) pair comes from the members sorted along each lane:

- ahead: the first member whose along coordinate is greater than i's (ties: lowest index);
- behind: among members at or behind i's coordinate, other than i, the largest coordinate
  (ties: lowest index).

These are the rules of the all-pairs search they replace (an argmin of the distance over
every pair, first index on ties) and of the float64 reference (tests/core/mobil_reference),
on the sorted coordinates instead of the rounded differences: where two members' distances
to i round to the same float32, the all-pairs search took the lower index and this takes
the nearer one. Every function works on one scenario.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.types import Array, pytree_dataclass


@pytree_dataclass
class LaneNeighbours:
    """Each agent's nearest agents ahead and behind in one lane per agent: lead / follow
    (N,) int32 agent indices (N: none); lead_ds / follow_ds (N,) their along-lane distance
    [m] (+inf / -inf: none); has_follow (N,) bool; offset (N,) the agent's own lateral
    offset from that lane [m] (0 without a lane)."""

    lead: Array
    lead_ds: Array
    follow: Array
    follow_ds: Array
    has_follow: Array
    offset: Array


def every_lane(along: Array, lateral: Array, width: Array, valid: Array, claims: Array) -> LaneNeighbours:
    """:class:`LaneNeighbours` of every agent in every lane, fields (L, N).

    along / lateral (L, N): agents' coordinates in each lane's frame; width (L,) [m];
    valid (N,) bool; claims (N, L): 1 where an agent is changing into the lane."""
    num_lanes, n = along.shape
    finite = jnp.isfinite(along) & jnp.isfinite(lateral)
    member = ((jnp.abs(lateral) < 0.5 * width[:, None]) | (claims.T > 0.5)) & valid[None, :] & finite
    key = jnp.where(member, along, jnp.inf)
    index = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], (num_lanes, n))
    _k, up = jax.lax.sort((key, index), dimension=1, num_keys=2)  # ties: lowest index first
    _k, down = jax.lax.sort((key, -index), dimension=1, num_keys=2)  # ties: lowest index last
    down = -down
    count = jnp.sum(member, axis=1)[:, None]  # (L, 1)
    # members at or behind each agent's coordinate: the position of its first member ahead
    at_or_behind = jnp.sum(member[:, None, :] & (along[:, None, :] <= along[:, :, None]), axis=2)
    at_or_behind = jnp.where(finite, at_or_behind, count)  # an agent off every frame has none
    pick = lambda order, pos: jnp.take_along_axis(order, jnp.clip(pos, 0, n - 1), axis=1)  # noqa: E731
    has_lead = at_or_behind < count
    lead = jnp.where(has_lead, pick(up, at_or_behind), n)
    last = pick(down, at_or_behind - 1)
    follow_pos = at_or_behind - 1 - (last == index[0][None, :]).astype(jnp.int32)
    has_follow = (follow_pos >= 0) & finite
    follow = jnp.where(has_follow, pick(down, follow_pos), n)
    along_of = lambda who: jnp.take_along_axis(along, jnp.minimum(who, n - 1), axis=1)  # noqa: E731
    return LaneNeighbours(
        lead=lead,
        lead_ds=jnp.where(has_lead, along_of(lead) - along, jnp.inf),
        follow=follow,
        follow_ds=jnp.where(has_follow, along_of(follow) - along, -jnp.inf),
        has_follow=has_follow,
        offset=lateral,
    )


def in_lane(lanes: LaneNeighbours, lane: Array, has_lane: Array) -> LaneNeighbours:
    """Each agent's row of :func:`every_lane` (fields (L, N)) for its lane ``lane`` (N,)
    int32; agents with ``has_lane`` (N,) False get no neighbours and offset 0."""
    n = lane.shape[0]
    row = lambda v: jnp.take_along_axis(v, jnp.clip(lane, 0, v.shape[0] - 1)[None, :], axis=0)[0]  # noqa: E731
    return LaneNeighbours(
        lead=jnp.where(has_lane, row(lanes.lead), n),
        lead_ds=jnp.where(has_lane, row(lanes.lead_ds), jnp.inf),
        follow=jnp.where(has_lane, row(lanes.follow), n),
        follow_ds=jnp.where(has_lane, row(lanes.follow_ds), -jnp.inf),
        has_follow=has_lane & row(lanes.has_follow),
        offset=jnp.where(has_lane, row(lanes.offset), 0.0),
    )


def rows_of(table: Array, who: Array) -> Array:
    """(N, C) rows ``who`` (N,) int32 of ``table`` (N, C); rows of zeros where who = N (none)."""
    return jnp.take(table, who, axis=0, mode="fill", fill_value=0.0)
