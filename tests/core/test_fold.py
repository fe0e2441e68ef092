"""core.fold: the pairwise fold equals the left-to-right fold, on every length and axis."""

import functools

import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.core import fold


def _then(earlier, later):
    """Composition of integer affine maps x -> m x + c, ``earlier`` first: associative, not
    commutative, so a fold that swapped or regrouped out of order would show."""
    (m1, c1), (m2, c2) = earlier, later
    return m2 * m1, m2 * c1 + c2


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 9, 16, 31])
def test_fold_equals_the_left_to_right_fold(n):
    rng = np.random.default_rng(n)
    m = rng.integers(-3, 4, size=(n, 5)).astype(np.int64)
    c = rng.integers(-9, 10, size=(n, 5)).astype(np.int64)
    want = functools.reduce(_then, [(m[k], c[k]) for k in range(n)])
    got = fold.fold(_then, (jnp.asarray(m, jnp.int32), jnp.asarray(c, jnp.int32)))
    np.testing.assert_array_equal(np.asarray(got[0]), want[0].astype(np.int32))
    np.testing.assert_array_equal(np.asarray(got[1]), want[1].astype(np.int32))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_minimum_on_any_axis(axis):
    rng = np.random.default_rng(7)
    values = rng.normal(size=(4, 11, 3)).astype(np.float32)
    values[1, 3] = np.inf
    np.testing.assert_array_equal(np.asarray(fold.minimum(jnp.asarray(values), axis)), values.min(axis=axis))


@pytest.mark.parametrize("n", [1, 2, 6, 13, 31])
def test_first_of_picks_the_first_true_and_zero_where_none(n):
    rng = np.random.default_rng(n)
    mask = rng.random((n, 40)) < 0.2
    mask[:, 0] = False  # a column with no True
    field = rng.normal(size=(n, 40)).astype(np.float32)
    field[0, 1], mask[0, 1] = -0.0, True  # a picked -0.0 comes out +0.0
    (got,) = fold.first_of(jnp.asarray(mask), (jnp.asarray(field),))
    got = np.asarray(got)
    for col in range(40):
        rows = np.flatnonzero(mask[:, col])
        want = np.float32(field[rows[0], col] + 0.0) if rows.size else np.float32(0.0)
        assert got[col].tobytes() == want.tobytes(), col
