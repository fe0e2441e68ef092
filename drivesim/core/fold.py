"""Reductions over a short axis folded pairwise: log2(n) elementwise steps instead of n.

A reduction over a short axis (a route's segments, a search's rows, an agent's candidate
segments) written as ``jnp.min(values, axis)`` is a separate, slow loop on XLA:CPU (not
vectorised), and written out term by term (``functools.reduce`` over n slices) it is n
instructions for XLA to compile, at every call site. :func:`fold` combines neighbouring
entries of the axis, ``(0, 1), (2, 3), ...``, then neighbouring pairs, and so on: the same
elementwise work in log2(n) vectorised steps, and each result is the left-to-right fold's
where ``combine`` is associative (the minimum, and :func:`first_of`'s pick, which the callers
use: both exact, so the grouping cannot change a bit).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from drivesim.core.types import Array


def fold(combine: Callable, values, axis: int = 0, commutes: bool = False):
    """``values`` (a pytree of arrays of one size n >= 1 along ``axis``) reduced over that
    axis by the associative ``combine(earlier, later)`` (pytrees of equal shapes -> one):
    the leaves without ``axis``. Neighbours first, (0, 1), (2, 3), ..., so entry k is always
    combined with later entries on its right and ``combine`` need not commute; where it does
    (``commutes``), the first half with the second, contiguous slices (cheaper to read)."""
    leaves, tree = jax.tree_util.tree_flatten(values)
    n = leaves[0].shape[axis]
    while n > 1:
        pairs = n // 2
        if commutes:
            left = [jax.lax.slice_in_dim(v, 0, pairs, 1, axis) for v in leaves]
            right = [jax.lax.slice_in_dim(v, pairs, 2 * pairs, 1, axis) for v in leaves]
        else:
            left = [jax.lax.slice_in_dim(v, 0, 2 * pairs, 2, axis) for v in leaves]
            right = [jax.lax.slice_in_dim(v, 1, 2 * pairs, 2, axis) for v in leaves]
        joined = jax.tree_util.tree_leaves(
            combine(jax.tree_util.tree_unflatten(tree, left), jax.tree_util.tree_unflatten(tree, right))
        )
        if n % 2:  # the last entry waits for the next step, still last
            joined = [
                jnp.concatenate([j, jax.lax.slice_in_dim(v, n - 1, n, 1, axis)], axis)
                for j, v in zip(joined, leaves, strict=True)
            ]
        leaves, n = joined, pairs + n % 2
    return jax.tree_util.tree_unflatten(tree, [jax.lax.index_in_dim(v, 0, axis, False) for v in leaves])


def minimum(values: Array, axis: int = 0) -> Array:
    """Minimum over ``axis`` (:func:`fold` of jnp.minimum)."""
    return fold(jnp.minimum, values, axis, commutes=True)


def _pick(earlier, later):
    (mask_a, fields_a), (mask_b, fields_b) = earlier, later
    return mask_a | mask_b, tuple(jnp.where(mask_a, a, b) for a, b in zip(fields_a, fields_b, strict=True))


def first_found(mask: Array, fields: tuple[Array, ...], axis: int = 0) -> tuple[Array, tuple[Array, ...]]:
    """Whether ``mask`` has a True along ``axis``, and each field (shape of ``mask``) at the
    first True (where none is: at the last entry)."""
    return fold(_pick, (mask, tuple(fields)), axis)


def first_of(mask: Array, fields: tuple[Array, ...], axis: int = 0) -> tuple[Array, ...]:
    """Each field (shape of ``mask``) at the first True of ``mask`` along ``axis``, +0.0
    where none is (the value picked, plus +0.0: a picked -0.0 comes out +0.0)."""
    found, picked = first_found(mask, fields, axis)
    return tuple(jnp.where(found, value, jnp.zeros_like(value)) + 0.0 for value in picked)
