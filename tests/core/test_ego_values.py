"""The ego's entries (core.observation.at_ego, ego_values): read at the ego's slot, they are
the values a masked sum over the agents gives, bit for bit: -0.0 reads as +0.0, a NaN or
infinity in another slot does not leak, zeros without an ego; also under vmap."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.core.observation import at_ego, ego_values


def _masked_sum(is_ego: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.sum(np.where(is_ego, values, np.zeros((), values.dtype)), axis=-1)


def _bits(values) -> np.ndarray:
    values = np.asarray(values)
    return values.view(np.int32) if values.dtype == np.float32 else values


@pytest.mark.parametrize("ego", [0, 5, 31, None])
def test_the_ego_entry_equals_the_masked_sum(ego):
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(4, 32)).astype(np.float32)
    rows[0, :] = -0.0  # the ego's -0.0 reads as +0.0, as in a sum
    rows[1, ::3] = np.nan  # NaN and infinity elsewhere stay out
    rows[2, 1::4] = np.inf
    if ego is not None:
        rows[1:3, ego] = 2.5
    is_ego = np.arange(32) == (-1 if ego is None else ego)
    want = _masked_sum(is_ego, rows)
    got = np.stack(jax.jit(ego_values)(jnp.asarray(is_ego), [jnp.asarray(r) for r in rows]))
    np.testing.assert_array_equal(_bits(got), _bits(want))
    slots = np.arange(32, dtype=np.int32)
    assert int(jax.jit(at_ego)(jnp.asarray(is_ego), jnp.asarray(slots))) == int(_masked_sum(is_ego, slots))


def test_a_batch_of_scenarios_reads_each_ones_ego():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(6, 16)).astype(np.float32)
    egos = np.array([0, 15, 7, -1, 3, 3])
    is_ego = np.arange(16)[None, :] == egos[:, None]
    got = jax.jit(jax.vmap(at_ego))(jnp.asarray(is_ego), jnp.asarray(values))
    np.testing.assert_array_equal(_bits(got), _bits(_masked_sum(is_ego, values)))
