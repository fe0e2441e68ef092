"""core.padded_sum: one float result whatever zero padding follows the values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.core.padded_sum import padded_sum


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 25, 33, 64])
def test_zero_padding_changes_no_bit(n):
    rng = np.random.default_rng(n)
    values = rng.lognormal(0.0, 2.0, size=(4, n)).astype(np.float32)
    total = jax.jit(padded_sum)(values)
    for pad in (1, 7, 64 - n % 64, 128):
        padded = np.concatenate([values, np.zeros((4, pad), np.float32)], axis=1)
        np.testing.assert_array_equal(jax.jit(padded_sum)(padded), total)
    np.testing.assert_allclose(total, values.astype(np.float64).sum(axis=1), rtol=n * 6e-8)


def test_axis_and_empty():
    values = jnp.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(padded_sum(values, axis=1), values.sum(axis=1))
    assert padded_sum(jnp.zeros((3, 0))).shape == (3,)
