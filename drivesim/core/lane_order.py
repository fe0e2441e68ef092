"""Nearest agents ahead and behind in every lane, for every agent.

MOBIL (core.mobil) asks, for each agent i and a lane l (its own or a neighbour), which
member of lane l is nearest ahead of i and which nearest behind, measured along l's frame.
Members of l: present agents whose centre lies inside l's corridor or who are changing into
l. The rules, those of the float64 reference (tests/core/mobil_reference):

- ahead: the member with the smallest coordinate greater than i's (ties: lowest index);
- behind: among members at or behind i's coordinate, other than i, the one with the largest
  coordinate (ties: lowest index).

Each member's place in its lane's order by (coordinate, index) comes from integer
compare-and-count passes over the L N^2 (lane, agent, member) triples, which XLA:CPU runs as fused
loops, up to COUNT_MAX_AGENTS agents, and from two sorts per lane above; the answer for
agent i is the member at the place given by the count of members at or behind i (found by
one more counting pass, or read from the sorted order). Members are
ordered by their coordinates, where the all-pairs search this replaced compared rounded
float32 distances: the two differ only where two members' distances to i round to the same
float32. Every function works on one scenario.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.types import Array, pytree_dataclass

# Up to this many agents, places come from counts over the (lane, agent, member) triples;
# above, from two sorts per lane. One decision step on the 2-core CPU, wall ms: counting 14
# against 20 for sorts at 32 agents x 512 scenarios, 49-65 against 35-46 at 64 x 256, 90-97
# against 52-70 at 128 x 128 (benchmarks/lane_changes.py). Both give the same places.
COUNT_MAX_AGENTS = 32


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
    valid (N,) bool; claims (N, L) bool: an agent is changing into the lane."""
    n = along.shape[1]
    finite = jnp.isfinite(along)
    member = ((jnp.abs(lateral) < 0.5 * width[:, None]) | claims.T) & valid[None, :] & finite
    key, query, is_member = along[:, None, :], along[:, :, None], member[:, None, :]  # [l, i, j]
    members = jnp.sum(member.astype(jnp.int32), axis=1)[:, None]
    at_or_behind = jnp.sum((is_member & (key <= query)).astype(jnp.int32), axis=2)
    behind = jnp.where(finite, at_or_behind, members)  # members at or behind each agent
    has_lead = behind < members
    search = _neighbours_by_count if n <= COUNT_MAX_AGENTS else _neighbours_by_sort
    lead, follow_pos, follow = search(along, member, behind)
    lead = jnp.where(has_lead, lead, n)
    has_follow = (follow_pos >= 0) & finite
    follow = jnp.where(has_follow, follow, n)
    along_of = lambda who: jnp.take_along_axis(along, jnp.minimum(who, n - 1), axis=1)  # noqa: E731
    return LaneNeighbours(
        lead=lead,
        lead_ds=jnp.where(has_lead, along_of(lead) - along, jnp.inf),
        follow=follow,
        follow_ds=jnp.where(has_follow, along_of(follow) - along, -jnp.inf),
        has_follow=has_follow,
        offset=lateral,
    )


def _neighbours_by_count(along: Array, member: Array, behind: Array) -> tuple[Array, Array, Array]:
    """(lead, follow place, follow) (L, N) int32 of every agent in every lane, from counts over
    the (lane, agent, member) triples; along / member (L, N); behind (L, N): members at or
    behind each agent. Lead: the member at place ``behind`` of the (coordinate, index) order;
    follow: the last member at or behind the agent in the (coordinate, -index) order, other
    than the agent. Values where there is none are unspecified."""
    n = along.shape[1]
    index = jnp.arange(n, dtype=jnp.int32)
    key, query, is_member = along[:, None, :], along[:, :, None], member[:, None, :]  # [l, i, j]
    count = lambda hit: jnp.sum(hit.astype(jnp.int32), axis=2)  # noqa: E731  (int sums: fast on XLA:CPU)
    lower = index[None, None, :] < index[None, :, None]  # [., i, j]: j < i
    higher = index[None, None, :] > index[None, :, None]
    up = count(is_member & ((key < query) | ((key == query) & lower)))  # each member's place
    down = count(is_member & ((key < query) | ((key == query) & higher)))

    def at(place: Array, wanted: Array) -> Array:
        """The member whose place is ``wanted`` (L, N): a sum over the pairs, which XLA:CPU
        runs faster than a gather from the inverse order."""
        hit = is_member & (place[:, None, :] == wanted[:, :, None])
        return jnp.sum(jnp.where(hit, index, 0), axis=2)

    follow_pos = behind - 1 - (member & (down == behind - 1)).astype(jnp.int32)  # not the agent itself
    return at(up, behind), follow_pos, at(down, follow_pos)


def _neighbours_by_sort(along: Array, member: Array, behind: Array) -> tuple[Array, Array, Array]:
    """:func:`_neighbours_by_count` from two sorts per lane (members first, by coordinate)."""
    n = along.shape[1]
    key = jnp.where(member, along, jnp.inf)
    index = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], along.shape)
    _k, at_up = jax.lax.sort((key, index), dimension=1, num_keys=2)
    _k, minus = jax.lax.sort((key, -index), dimension=1, num_keys=2)
    at_down = -minus
    pick = lambda order, pos: jnp.take_along_axis(order, jnp.clip(pos, 0, n - 1), axis=1)  # noqa: E731
    last = pick(at_down, behind - 1)  # ties: the lowest index is last in the (coordinate, -index) order
    follow_pos = behind - 1 - (last == index).astype(jnp.int32)
    return pick(at_up, behind), follow_pos, pick(at_down, follow_pos)


def in_lane(lanes: LaneNeighbours, lane: Array) -> LaneNeighbours:
    """Each agent's row of :func:`every_lane` (fields (L, N)) for its lane ``lane`` (N,)
    int32; agents with lane -1 (none) get no neighbours and offset 0."""
    n = lane.shape[0]
    has_lane = lane >= 0
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
