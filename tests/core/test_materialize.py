"""core.materialize: the identity bit for bit, and a value read by several fusions computed once."""

import re

import jax
import jax.numpy as jnp
import numpy as np
from trace_count import conditionals

from drivesim.core.materialize import materialize
from drivesim.core.search_plan import SearchPlan, tracing


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


def test_store_off_hands_values_on_as_they_are():
    with tracing(SearchPlan(store=False)):  # a program traced under such a plan
        tree = {"a": jnp.arange(3.0)}
        assert materialize(tree) is tree
        assert _abs_ops(materialize) > 2  # XLA's fusion decides again
    assert _abs_ops(materialize) == 2  # the plan is current only inside


def _scanned(store, steps: int = 3):
    """A vmapped scan whose body stores a value read by three consumers, inside
    stores_by_branch with the scan's unbatched counter; (program text, outputs)."""
    from drivesim.core.materialize import stores_by_branch

    def one(x, y):
        def body(carry, step_index):
            with stores_by_branch(step_index):
                hit = store((jnp.abs(carry * 1.3 + y * 0.7) > jnp.abs(carry - y * 2.1)) & (carry * y > 0.5))
            nxt = jnp.where(hit, carry * 0.5, carry + 1.0) + jnp.roll(hit, 1)
            return nxt, jnp.sum(hit)

        return jax.lax.scan(body, x, jnp.arange(steps, dtype=jnp.int32))

    rng = np.random.default_rng(3)
    args = [jnp.asarray(rng.normal(size=(8, 32)), jnp.float32) for _ in range(2)]
    program = jax.jit(jax.vmap(one))
    return program.lower(*args).compile().as_text(), program(*args)


def test_a_store_in_a_scan_body_passes_through_a_conditional():
    text, out = _scanned(materialize)
    assert conditionals(text) == 1
    jax.clear_caches()  # the same function traced again, under another plan
    with tracing(SearchPlan(branch_stores=False)):
        reduced_text, reduced = _scanned(materialize)
    assert conditionals(reduced_text) == 0
    for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(reduced), strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _stored_twice(x):
    """Module-level (JAX caches its traced branches by function), stores a value."""
    return materialize(x * 2.0) + materialize(x * 3.0)


def _unchanged(x):
    return x


def test_stores_in_nested_control_flow_take_the_reduction():
    """A store traced in a conditional inside the scan body must not capture the body's
    counter: JAX caches the branch by function, and a second program reusing it would meet
    the first one's tracer (an UnexpectedTracerError)."""
    from drivesim.core.materialize import stores_by_branch

    def program(scale):
        def body(carry, step_index):
            with stores_by_branch(step_index):
                carry = jax.lax.cond(carry[0] > -1e9, _stored_twice, _unchanged, carry)
            return carry * scale, None

        return jax.jit(lambda x: jax.lax.scan(body, x, jnp.arange(2, dtype=jnp.int32))[0])

    x = jnp.ones(4)
    first = program(0.5)(x)
    second = program(0.25)(x)  # traced after the first, the cached branch reused
    assert np.allclose(first, 6.25) and np.allclose(second, 1.5625)


def test_the_engine_gives_the_same_bits_with_stores_through_reductions(assert_bitwise):
    """The engine's stores through conditionals (the default on the CPU) and through the
    identity reduction give the same metrics bit for bit, on the family with every search."""
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.core.types import SimConfig
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    family = FamilyConfig(num_agents=16, steps=12)
    scenarios = [generate("intersection_turns", i, family).scenario for i in range(4)]
    batch = pad_and_stack(scenarios, num_agents=16)
    config, policy = SimConfig(num_steps=12), idm_policy()
    branched = simulate.lower(batch, policy, config).compile()
    reduced = simulate.lower(batch, policy, config.with_search(branch_stores=False)).compile()
    assert conditionals(branched.as_text()) > conditionals(reduced.as_text())
    assert_bitwise(jax.device_get(branched(batch, policy)), jax.device_get(reduced(batch, policy)))
