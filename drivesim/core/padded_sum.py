"""Sums over a padded axis that padding does not change, bit for bit.

A scenario's agents, lanes and points are padded to classes (drivesim.scenarios.batching), and
scenarios of several classes share a program only if padding changes none of their metrics.
``jnp.sum`` leaves the order of its additions to XLA, which picks a different reduction tree
for a different length: the same values with zeros appended can sum to a result one ulp
apart. :func:`padded_sum` adds in one fixed pairwise order instead: the values, zero-filled to
the next power of two, are added in adjacent pairs, level by level. Zeros appended at the end
only add ``+ 0`` to the tail of each level, so any zero padding gives the same float result
(XLA does not reassociate floating-point additions).
"""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import Array


def padded_sum(values: Array, axis: int = -1) -> Array:
    """Sum of ``values`` over ``axis`` (shape of ``values`` without that axis), in the fixed
    pairwise order above; equal bit for bit for ``values`` followed by any number of zeros
    along ``axis``. Costs log2(n) additions of halving size."""
    x = jnp.moveaxis(jnp.asarray(values), axis, -1)
    n = x.shape[-1]
    if n == 0:
        return jnp.zeros(x.shape[:-1], x.dtype)
    size = 1 << (n - 1).bit_length()
    if size != n:
        x = jnp.concatenate([x, jnp.zeros((*x.shape[:-1], size - n), x.dtype)], axis=-1)
    while x.shape[-1] > 1:
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        x = pairs[..., 0] + pairs[..., 1]
    return x[..., 0]
