"""The training networks' products (actor and critic, forward and gradient) run at full
float32 precision on every platform, as the engine's do (core.matmul): read from the lowered
program, so no GPU is needed to catch a default-precision product."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from trace_count import product_precisions

from drivesim.train import networks


def test_actor_and_critic_products_are_full_float32():
    params = networks.init_actor_critic(jax.random.PRNGKey(0), 6, (8, 8), -0.5, 0.01)
    obs = jnp.ones((5, 6), jnp.float32)

    def loss(p):
        return jnp.sum(networks.actor_mean(p, obs)) + jnp.sum(networks.critic_value(p, obs))

    found = product_precisions(jax.jit(jax.value_and_grad(loss)).lower(params).as_text())
    assert len(found) >= 12, found  # 3 layers x 2 networks, forward and backward
    assert all(p == "HIGHEST,HIGHEST" for p in found), found
