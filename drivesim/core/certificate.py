"""The window certificate: a per-step proof that the sorted-window search missed nothing.

Agents are sorted by (route group, position along the sort axis) and groups stay contiguous
in that order (core.exact.route_groups; the odd-even passes compare the group first). For
agent i the window search examines ``window`` neighbours on one side and a few on the
other; :func:`window_certified` proves that no agent outside them can be i's leader or
overlap i's box:

- same group: every agent beyond the window, inside i's group, must lie farther along the
  sort axis (key = x a_x + y a_y) than any leader or overlapping box could (the bounds use
  i's leader gap, lane corridor and the longest agent for leaders, and for boxes the
  largest distance at which two can overlap: half the two largest diagonals added). The
  order lags the positions a little (one odd-even pass every few steps), so the first key
  beyond the window bounds the rest only up to the group's total descent
  (:func:`_descent`): one (N,) pass instead of a running minimum per route, which cost
  more than the search it checks on the CPU.
- other groups: routes of different groups are either straight lines that cross (their
  interactions are searched in the junction zone, core.junction, which must hold all its
  agents), bent routes whose agents are searched against every agent (core.bends), or
  parallel straight lines at least ``cross_sep`` apart
  (:func:`cross_group_separation`); agents of the latter can be neither leaders (when
  ``cross_sep`` minus the largest lateral offset exceeds half the lane width) nor collision
  partners (when it exceeds the two largest lateral reaches of boxes added). Otherwise the
  scenario is not certified.

Where the proof fails, the scenario is simulated again with all pairs (core.fallback), so
every leader and collision is exact. Every function works on one scenario.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from drivesim.core import interactions
from drivesim.core.types import Array

EPS = 0.01  # [m] slack for float32 rounding of key differences (conservative side)


def cross_group_separation(sep: Array, groups: Array, occupied: Array, crossing: Array) -> Array:
    """() float32: the smallest separation between two occupied routes of different groups
    that do not cross (+inf with one group). sep (L, L) from core.exact.route_separation
    (0: may meet); groups (L,) route groups; occupied (L,) bool: some agent drives the
    route; crossing (L, L) bool: straight routes that cross (core.junction covers them)."""
    pair = occupied[:, None] & occupied[None, :] & (groups[:, None] != groups[None, :]) & ~crossing
    return jnp.min(jnp.where(pair, sep, jnp.inf))


def _shift(values: Array, offset: int, fill) -> Array:
    """out[i] = values[i + offset] (``fill`` outside); values (N,), offset may be negative."""
    padded = interactions.padded(values, abs(offset), fill)
    return interactions.view(padded, abs(offset), offset, values.shape[0])


def _descent(key: Array, group: Array, real: Array) -> Array:
    """() total descent of ``key`` (N,) along the sorted order inside groups (the sum of
    key[k] - key[k+1] over adjacent slots k, k+1 of one group where the key drops), over
    ``real`` (N,) slots. For slots m <= j of one group, key[j] >= key[m] - descent and
    key[m] <= key[j] + descent: a telescoping sum, so one number bounds every running
    minimum or maximum that a scan would compute."""
    following = _shift(key, 1, jnp.nan)
    same = (_shift(group, 1, jnp.nan) == group) & real & _shift(real, 1, False)
    return jnp.sum(jnp.where(same, jnp.maximum(key - following, 0.0), 0.0))


def _beyond(key: Array, group: Array, offset: int, fill) -> Array:
    """key[i + offset] when slot i + offset is in i's group, else ``fill``; (N,)."""
    same = _shift(group, offset, jnp.nan) == group
    return jnp.where(same, _shift(key, offset, fill), fill)


class Reach(NamedTuple):
    """How far one scenario's boxes reach, each () float32: ``pair`` the largest distance
    between the centres of two overlapping boxes (half the two largest diagonals added: two
    boxes overlap within (d_i + d_j) / 2), ``longest`` the longest agent's length."""

    pair: Array
    longest: Array


def reach_of(length: Array, width: Array, real: Array) -> Reach:
    """The Reach of boxes ``length`` x ``width`` (N,) over ``real`` (N,) slots."""
    diag = jnp.sqrt(length * length + width * width)
    return Reach(pair=0.5 * two_largest(diag, real), longest=jnp.max(jnp.where(real, length, 0.0)))


def two_largest(values: Array, real: Array) -> Array:
    """() the sum of the two largest of ``values`` (N,) >= 0 over ``real`` slots (a missing
    one counts 0): no two agents' values (lateral reaches, box diagonals) add up to more.
    Ties count twice."""
    masked = jnp.where(real, values, 0.0)
    first = jnp.max(masked)
    ties = jnp.sum(jnp.where(masked == first, 1.0, 0.0))
    second = jnp.where(ties >= 2.0, first, jnp.max(jnp.where(masked < first, masked, 0.0)))
    return first + second


def window_certified(
    a,
    proj,
    lead_gap: Array | None,
    reach: Reach,
    cross_sep: Array,
    axis: Array,
    window: int,
) -> Array:
    """Whether the window search was provably exact for every agent this step; () bool.

    a: SortedAgents (x, y, valid, length, width, lane_width, group rows); proj: their
    Projection; lead_gap: (N,) gap to the window's leader (+inf none), or None where the
    leaders come from all pairs (core.neighbours.leaders_from_all_pairs) and only collisions
    and other groups need the proof; reach: the scenario's Reach (SimState.reach);
    cross_sep: () from
    :func:`cross_group_separation`; axis: (2,) sort axis.
    """
    group = a.group
    key = interactions.sort_key(a.x, a.y, a.valid, axis)
    # every slot of an agent (present or not) keeps a finite key: absent agents sit at their
    # entry or exit position, so the chain of keys through them bounds the present ones
    slot_key = interactions.sort_key(a.x, a.y, a.base_valid, axis)
    # agents on bent routes: every pair with one is searched directly (core.bends); their
    # groups hold only them, so the proof below is over the straight routes' agents
    straight = a.valid & ~a.bent
    descent = _descent(slot_key, group, a.base_valid & ~a.bent)

    def leaders_ok() -> Array:
        """(N,) bool: leaders in i's group, from bounds on the nearest unexamined keys ahead
        of and behind i."""
        slack = min(interactions.BEHIND_SLACK, window)
        ta = proj.tx * axis[0] + proj.ty * axis[1]
        na = jnp.abs(-proj.ty * axis[0] + proj.tx * axis[1])
        forward = ta >= 0.0
        ahead_min = (
            jnp.where(
                forward,
                _beyond(slot_key, group, window + 1, jnp.inf),
                _beyond(slot_key, group, slack + 1, jnp.inf),
            )
            - descent
        )
        behind_max = (
            jnp.where(
                forward,
                _beyond(slot_key, group, -slack - 1, -jnp.inf),
                _beyond(slot_key, group, -window - 1, -jnp.inf),
            )
            + descent
        )
        corridor = (0.5 * a.lane_width + jnp.abs(proj.d)) * na + EPS
        bound = lead_gap + 0.5 * a.length + 0.5 * reach.longest + EPS  # >= the leader's ds (+inf: none)
        reach_along = jnp.where(ta == 0.0, 0.0, bound * ta)
        hi = corridor + jnp.where(forward, reach_along, 0.0)
        lo = -corridor + jnp.where(forward, 0.0, reach_along)
        none_ahead, none_behind = ahead_min == jnp.inf, behind_max == -jnp.inf  # inf > inf: False
        return (none_ahead | (ahead_min - key > hi)) & (none_behind | (behind_max - key < lo))

    lead_ok = True if lead_gap is None else leaders_ok()  # None: leaders from all pairs
    # collisions in i's group: pairs (i, j) with j more than ``window`` places after i
    far = _beyond(slot_key, group, window + 1, jnp.inf) - descent
    coll_ok = far - key > reach.pair + EPS
    # other groups: too far across for a leader or an overlapping box
    drift = jnp.max(jnp.where(straight, jnp.abs(proj.d), 0.0))
    widest = jnp.max(jnp.where(straight, a.lane_width, 0.0))
    cos_rel = jnp.abs(a.cos_h * proj.tx + a.sin_h * proj.ty)
    sin_rel = jnp.abs(a.cos_h * proj.ty - a.sin_h * proj.tx)
    across = jnp.abs(proj.d) + 0.5 * (a.width * cos_rel + a.length * sin_rel)
    apart = (cross_sep - drift >= 0.5 * widest + EPS) & (cross_sep > two_largest(across, straight) + EPS)
    ok = ~straight | (lead_ok & coll_ok)
    # a float count, not all(): XLA:CPU runs a boolean reduction over the agents as one loop
    # with the whole proof inside, an element at a time; the count's operand is computed as
    # vector code first
    return apart & (jnp.sum(jnp.where(ok, 0.0, 1.0)) == 0.0)
