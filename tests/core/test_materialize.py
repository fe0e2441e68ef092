"""core.materialize: the identity bit for bit, and a value read by several fusions computed once."""

import re

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core.materialize import materialize


def test_identity_bit_for_bit():
    floats = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-45, -3.4e38], np.float32)
    ints = np.array([0, -1, 7, np.iinfo(np.int32).min, np.iinfo(np.int32).max], np.int32)
    bools = np.array([True, False, True])
    out = jax.jit(materialize)({"f": floats, "i": ints, "b": bools})
    assert np.asarray(out["f"]).view(np.uint32).tolist() == floats.view(np.uint32).tolist()
    assert np.asarray(out["i"]).tolist() == ints.tolist()
    assert np.asarray(out["b"]).tolist() == bools.tolist()
    assert out["f"].dtype == jnp.float32 and out["i"].dtype == jnp.int32 and out["b"].dtype == jnp.bool_


def _abs_ops(store) -> int:
    """abs ops in the compiled program of an expression with 2 abs, read by 3 consumers."""

    def step(x, y):
        hit = store((jnp.abs(x * 1.3 + y * 0.7) > jnp.abs(x - y * 2.1)) & (x * y > 0.5))
        return jnp.sum(hit), jnp.where(hit, x, 0.0), jnp.roll(hit, 1) | hit

    args = (jnp.ones((64, 32)), jnp.ones((64, 32)))
    text = jax.jit(jax.vmap(step)).lower(*args).compile().as_text()
    return len(re.findall(r" abs\(", text))


def test_a_value_with_three_readers_is_computed_once():
    assert _abs_ops(materialize) == 2
    # without it XLA fuses the expression into every reader (with JAX 0.10.2, so does
    # jax.lax.optimization_barrier on the CPU, which is why the engine stores such values
    # with materialize)
    assert _abs_ops(lambda v: v) > 2


def test_store_off_hands_values_on_as_they_are(monkeypatch):
    from drivesim.core import materialize as module

    monkeypatch.setattr(module, "STORE", False)
    tree = {"a": jnp.arange(3.0)}
    assert module.materialize(tree) is tree
    assert _abs_ops(module.materialize) > 2  # XLA's fusion decides again
