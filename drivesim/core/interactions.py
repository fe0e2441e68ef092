"""Agent interactions in O(N * K) per step: sorted layout, neighbour window, leaders, boxes.

Agents of a scenario are kept physically ordered by their position along the road's main
axis (``RoadMap.sort_axis``). One odd-even transposition pass per step keeps the order
(agents overtake each other by a few places at most per step), so the K agents ahead and
behind are fixed shifts of the arrays: no sort, gather or scatter inside the time loop,
which XLA:CPU executes slowly. Every function works on one scenario with agents on axis 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.agents import PROP_ROWS
from drivesim.core.materialize import decided_once, stores_by_branch
from drivesim.core.types import Array


def padded(values: Array, width: int, fill) -> Array:
    """``values`` (N, ...) with ``width`` fill entries added before and after on axis 0.

    Pad once, then take every shift as a slice (:func:`view`): XLA fuses slices into their
    consumers but materialises each separately padded copy.
    """
    pad = [(width, width)] + [(0, 0)] * (values.ndim - 1)
    return jnp.pad(values, pad, constant_values=fill)


def view(padded_values: Array, width: int, offset: int, n: int) -> Array:
    """out[i] = values[i + offset] from ``padded(values, width, fill)``; |offset| <= width."""
    return padded_values[width + offset : width + offset + n]


def sort_key(x: Array, y: Array, valid: Array, axis: Array) -> Array:
    """Position along the sort axis (N,); padding slots get +inf so they sit at the end."""
    key = x * axis[0] + y * axis[1]
    return jnp.where(valid, key, jnp.inf)


def odd_even_pass(tree, key: Array, parity: Array, group: Array | None = None):
    """One odd-even transposition pass: swap neighbours (i, i+1), i % 2 == parity,
    where (group[i], key[i]) > (group[i+1], key[i+1]) (lexicographic; key alone without
    ``group``). Applies the same permutation along the LAST axis of every leaf of ``tree``
    (leaves shaped (..., N); pack many rows into one leaf for speed)."""
    n = key.shape[0]
    index = jnp.arange(n)
    left = (index % 2) == parity
    after = key > jnp.roll(key, -1)
    if group is not None:
        g_next = jnp.roll(group, -1)
        after = (group > g_next) | ((group == g_next) & after)
    # decided once: every leaf, and both slots of a pair, read the same swaps (recomputed in
    # each reader, a near tie of the keys could swap one leaf and not another, or move an
    # agent into its neighbour's slot without the neighbour leaving it)
    take_next = decided_once(left & (index < n - 1) & after)
    take_prev = jnp.roll(take_next, 1)

    def permute(leaf):  # rolls fuse into one loop; a padded copy would be materialised
        nxt = jnp.roll(leaf, -1, axis=-1)
        prv = jnp.roll(leaf, 1, axis=-1)
        return jnp.where(take_next, nxt, jnp.where(take_prev, prv, leaf))

    return jax.tree_util.tree_map(permute, tree)


BEHIND_SLACK = 2  # agents searched on the far side of the sorted order (see leader_offsets)


def leader_offsets(
    x: Array,
    y: Array,
    valid: Array,
    tx: Array,
    ty: Array,
    lateral: Array,
    lane_width: Array,
    window: int,
    forward: Array | None = None,
) -> Array:
    """Signed sorted-order offset of each agent's leader (0 = none); (N,) int32.

    A candidate j leads agent i when it is ahead along i's lane tangent (tx, ty) and its
    centre lies inside i's lane (|lateral offset from i's lane centre| < lane_width / 2);
    the leader is the nearest such candidate among the ``window`` agents after (forward
    True: i's lane runs along the sort axis) or before it, plus BEHIND_SLACK agents on the
    other side (the order may be a little stale between re-sorts), or among ``window`` on
    both sides when ``forward`` is None. One small integer output, so XLA evaluates the
    search once.
    """
    n = x.shape[0]
    xp, yp = padded(x, window, 0.0), padded(y, window, 0.0)
    vp = padded(valid, window, False)
    half_width = 0.5 * lane_width
    best_ds = jnp.full_like(x, jnp.inf)
    best = jnp.zeros(x.shape, jnp.int32)
    if forward is None:
        offsets: list[tuple[int, int | None]] = [(k, None) for k in range(-window, window + 1) if k != 0]
    else:  # mostly ahead, plus a little slack behind for order gone stale between re-sorts
        slack = min(BEHIND_SLACK, window)
        offsets = [(k, -k) for k in range(-slack, window + 1) if k != 0]
    for k, back in offsets:
        rx = _at(xp, window, k, back, forward, n) - x
        ry = _at(yp, window, k, back, forward, n) - y
        ds = rx * tx + ry * ty
        lat = -rx * ty + ry * tx + lateral
        there = _at(vp, window, k, back, forward, n)
        candidate = there & valid & (ds > 0.0) & (jnp.abs(lat) < half_width) & (ds < best_ds)
        best_ds = jnp.where(candidate, ds, best_ds)
        signed = k if back is None or forward is None else jnp.where(forward, k, back)
        best = jnp.where(candidate, signed, best)
    return best


def _at(values_p: Array, window: int, k: int, back, forward, n: int) -> Array:
    ahead = view(values_p, window, k, n)
    return ahead if back is None else jnp.where(forward, ahead, view(values_p, window, back, n))


def leader_pick(
    offset: Array, x: Array, y: Array, speed: Array, length: Array, tx: Array, ty: Array, window: int
) -> tuple[Array, Array, Array]:
    """From :func:`leader_offsets`: distance along the tangent to the leader's centre
    (+inf without leader), the leader's speed and length (0 without); each (N,)."""
    n = x.shape[0]
    # the four values picked as one (N, 4) array: one select per offset, not four
    rows_p = padded(jnp.stack([x, y, speed, length], axis=-1), window, 0.0)
    out = jnp.zeros((n, 4), x.dtype)
    for k in (k for k in range(-window, window + 1) if k != 0):
        out = jnp.where((offset == k)[:, None], view(rows_p, window, k, n), out)
    lx, ly, lv, ll = (out[:, i] for i in range(4))
    has = offset != 0
    ds = (lx - x) * tx + (ly - y) * ty
    return jnp.where(has, ds, jnp.inf), jnp.where(has, lv, 0.0), jnp.where(has, ll, 0.0)


def leader_values(
    offset: Array,
    x: Array,
    y: Array,
    speed: Array,
    length: Array,
    tx: Array,
    ty: Array,
    window: int,
) -> tuple[Array, Array, Array]:
    """Gap (bumper to bumper along the tangent, +inf without leader), leader speed and
    whether there is a leader, from :func:`leader_offsets`; each (N,)."""
    ds, lv, ll = leader_pick(offset, x, y, speed, length, tx, ty, window)
    has = offset != 0
    return jnp.where(has, ds - 0.5 * (length + ll), jnp.inf), lv, has


def find_leaders(
    x: Array,
    y: Array,
    speed: Array,
    length: Array,
    valid: Array,
    tx: Array,
    ty: Array,
    lateral: Array,
    lane_width: Array,
    window: int,
    forward: Array | None = None,
) -> tuple[Array, Array, Array]:
    """Leader of each agent among its ``window`` neighbours in sorted order (see
    :func:`leader_offsets`); all inputs (N,).

    Returns gap (bumper-to-bumper, +inf without leader), leader speed, and whether a
    leader was found; each (N,).
    """
    offset = leader_offsets(x, y, valid, tx, ty, lateral, lane_width, window, forward)
    return leader_values(offset, x, y, speed, length, tx, ty, window)


def boxes_overlap(
    dx: Array,
    dy: Array,
    cos_i: Array,
    sin_i: Array,
    cos_j: Array,
    sin_j: Array,
    half_len_i: Array,
    half_wid_i: Array,
    half_len_j: Array,
    half_wid_j: Array,
) -> Array:
    """Exact oriented-box overlap by separating axes (touching counts as overlap).

    (dx, dy) is centre_j - centre_i; cos/sin are of each box's heading; halves of the
    box length and width. Broadcasting shapes; returns bool of the broadcast shape.
    """
    c = jnp.abs(cos_i * cos_j + sin_i * sin_j)  # |cos(h_j - h_i)|
    s = jnp.abs(cos_i * sin_j - sin_i * cos_j)  # |sin(h_j - h_i)|
    d_ui = jnp.abs(dx * cos_i + dy * sin_i)
    d_vi = jnp.abs(-dx * sin_i + dy * cos_i)
    d_uj = jnp.abs(dx * cos_j + dy * sin_j)
    d_vj = jnp.abs(-dx * sin_j + dy * cos_j)
    sep_ui = d_ui > half_len_i + half_len_j * c + half_wid_j * s
    sep_vi = d_vi > half_wid_i + half_len_j * s + half_wid_j * c
    sep_uj = d_uj > half_len_j + half_len_i * c + half_wid_i * s
    sep_vj = d_vj > half_wid_j + half_len_i * s + half_wid_i * c
    return ~(sep_ui | sep_vi | sep_uj | sep_vj)


def window_pair_hits(
    x: Array,
    y: Array,
    cos_h: Array,
    sin_h: Array,
    length: Array,
    width: Array,
    valid: Array,
    window: int,
) -> list[Array]:
    """Box overlaps of each agent i with the agent k places ahead in sorted order, for
    k = 1..window: a list of (N,) bool (entry i of list item k-1 is the pair (i, i+k))."""
    n = x.shape[0]
    hl = 0.5 * length
    hw = 0.5 * width
    xp, yp, cp, sp, hlp, hwp = (padded(v, window, 0.0) for v in (x, y, cos_h, sin_h, hl, hw))
    vp = padded(valid, window, False)
    hits = []
    for k in range(1, window + 1):
        at = lambda p: view(p, window, k, n)  # noqa: B023
        hit = boxes_overlap(at(xp) - x, at(yp) - y, cos_h, sin_h, at(cp), at(sp), hl, hw, at(hlp), at(hwp))
        hits.append(hit & valid & at(vp))
    return hits


def collision_summary(hits: list[Array], is_ego: Array) -> tuple[Array, Array]:
    """From :func:`window_pair_hits`: (overlapping pairs () int32, ego overlaps () bool).

    Both come from ONE sum, pairs + base * (pairs involving the ego) with base larger than
    any pair count, so XLA evaluates every overlap test once instead of once per consumer.
    """
    n = is_ego.shape[0]
    window = len(hits)
    base = window * n + 1
    ego_p = padded(is_ego, window, False)
    code = jnp.zeros(is_ego.shape, jnp.int32)
    for k, hit in enumerate(hits, start=1):
        ego_pair = is_ego | view(ego_p, window, k, n)
        code = code + jnp.where(hit, jnp.where(ego_pair, base + 1, 1), 0)
    total = jnp.sum(code)
    return total % base, total >= base


def window_overflow(key: Array, valid: Array, reach: Array, window: int) -> Array:
    """True when the ``window``-th agent ahead in sorted order is within ``reach`` (the
    largest distance at which two boxes of the scenario overlap) along the sort axis, so an agent beyond the
    window could touch agent i (the window may be too small); () bool."""
    n = key.shape[0]
    far_key = view(padded(key, window, jnp.inf), window, window, n)
    return jnp.any(valid & (far_key - key <= reach))


def resort(agents, axis: Array, every: int, t: Array, step_index):
    """SortedAgents ``agents`` kept ordered by (group, position along the sort ``axis``) with
    odd-even passes.

    Standalone steps do one pass per step (parity t % 2). Inside a rollout the unbatched
    ``step_index`` drives it: one pass every ``every`` steps (SearchPlan.resort_every),
    parities alternating, under a real conditional (a batched condition would run both
    branches).
    """

    def one_pass(ag, parity):  # slots holding an agent keep their place while it is absent
        key = sort_key(ag.x, ag.y, ag.base_valid, axis)
        return odd_even_pass(ag, key, parity, ag.props[PROP_ROWS.index("group")])

    if step_index is None:
        return one_pass(agents, t % 2)
    if every == 1:
        return one_pass(agents, step_index % 2)

    def on_step(ag, index):  # the counter passed in: a store inside reads this branch's own
        with stores_by_branch(index):
            return one_pass(ag, (index // every) % 2)

    return jax.lax.cond(step_index % every == 0, on_step, lambda ag, _: ag, agents, step_index)
