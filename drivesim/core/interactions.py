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

from drivesim.core.types import Array


def shift(values: Array, offset: int, fill) -> Array:
    """out[i] = values[i + offset] along axis 0, ``fill`` where i + offset is out of range."""
    n = values.shape[0]
    if offset == 0:
        return values
    pad_shape = (min(abs(offset), n),) + values.shape[1:]
    pad = jnp.full(pad_shape, fill, values.dtype)
    if abs(offset) >= n:
        return pad
    if offset > 0:
        return jnp.concatenate([values[offset:], pad], axis=0)
    return jnp.concatenate([pad, values[:offset]], axis=0)


def sort_key(x: Array, y: Array, valid: Array, axis: Array) -> Array:
    """Position along the sort axis (N,); padding slots get +inf so they sit at the end."""
    key = x * axis[0] + y * axis[1]
    return jnp.where(valid, key, jnp.inf)


def odd_even_pass(tree, key: Array, parity: Array):
    """One odd-even transposition pass: swap neighbours (i, i+1), i % 2 == parity,
    where key[i] > key[i+1]. Applies the same permutation to every leaf of ``tree``
    (leaves have agents on axis 0)."""
    n = key.shape[0]
    left = (jnp.arange(n) % 2) == parity
    take_next = left & (key > shift(key, 1, jnp.inf))
    take_prev = (~left) & (shift(key, -1, -jnp.inf) > key)

    def permute(leaf):
        expand = (slice(None),) + (None,) * (leaf.ndim - 1)
        nxt = shift(leaf, 1, jnp.zeros((), leaf.dtype))
        prv = shift(leaf, -1, jnp.zeros((), leaf.dtype))
        return jnp.where(take_next[expand], nxt, jnp.where(take_prev[expand], prv, leaf))

    return jax.tree_util.tree_map(permute, tree)


def find_leaders(
    x: Array, y: Array, speed: Array, length: Array, valid: Array,
    tx: Array, ty: Array, lateral: Array, lane_width: Array, window: int,
) -> tuple[Array, Array, Array]:
    """Leader of each agent among the ``window`` agents before and after it in sorted order.

    A candidate j leads agent i when it is ahead along i's lane tangent (tx, ty) and its
    centre lies inside i's lane (|lateral offset from i's lane centre| < lane_width / 2).
    The leader is the nearest such candidate. All inputs (N,).

    Returns gap (bumper-to-bumper, +inf without leader), leader speed, and whether a
    leader was found; each (N,).
    """
    best_ds = jnp.full_like(x, jnp.inf)
    best_gap = jnp.full_like(x, jnp.inf)
    best_speed = jnp.zeros_like(x)
    half_width = 0.5 * lane_width
    offsets = [k for k in range(-window, window + 1) if k != 0]
    for k in offsets:
        xj = shift(x, k, 0.0)
        yj = shift(y, k, 0.0)
        vj = shift(valid, k, False)
        rx = xj - x
        ry = yj - y
        ds = rx * tx + ry * ty
        lat = -rx * ty + ry * tx + lateral
        candidate = vj & valid & (ds > 0.0) & (jnp.abs(lat) < half_width) & (ds < best_ds)
        gap = ds - 0.5 * (length + shift(length, k, 0.0))
        best_ds = jnp.where(candidate, ds, best_ds)
        best_gap = jnp.where(candidate, gap, best_gap)
        best_speed = jnp.where(candidate, shift(speed, k, 0.0), best_speed)
    return best_gap, best_speed, jnp.isfinite(best_ds)


def boxes_overlap(
    dx: Array, dy: Array, cos_i: Array, sin_i: Array, cos_j: Array, sin_j: Array,
    half_len_i: Array, half_wid_i: Array, half_len_j: Array, half_wid_j: Array,
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


def window_collisions(
    x: Array, y: Array, cos_h: Array, sin_h: Array, length: Array, width: Array,
    valid: Array, window: int,
) -> tuple[Array, Array]:
    """Overlapping pairs among agents at most ``window`` apart in sorted order (N,).

    Returns (collided: (N,) bool, any overlap involving the agent; pairs: () int32).
    """
    hl = 0.5 * length
    hw = 0.5 * width
    collided = jnp.zeros_like(valid)
    pairs = jnp.zeros((), jnp.int32)
    for k in range(1, window + 1):
        vj = shift(valid, k, False)
        hit = boxes_overlap(
            shift(x, k, 0.0) - x, shift(y, k, 0.0) - y, cos_h, sin_h,
            shift(cos_h, k, 1.0), shift(sin_h, k, 0.0), hl, hw,
            shift(hl, k, 0.0), shift(hw, k, 0.0),
        ) & valid & vj
        collided = collided | hit | shift(hit, -k, False)
        pairs = pairs + jnp.sum(hit.astype(jnp.int32))
    return collided, pairs


def window_overflow(key: Array, length: Array, width: Array, valid: Array, window: int) -> Array:
    """True when the K-th agent ahead is still close enough along the sort axis that an
    agent beyond the window could touch agent i (the window may be too small); () bool."""
    diag = jnp.sqrt(length * length + width * width)
    max_diag = jnp.max(jnp.where(valid, diag, 0.0))
    far_key = shift(key, window, jnp.inf)
    reach = 0.5 * (diag + max_diag)
    return jnp.any(valid & (far_key - key <= reach))
