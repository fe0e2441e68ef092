"""Scoring a policy on an environment's pool: one episode per pool entry, every one from
its reset (``reset_at``), without restarts, in one jitted ``lax.scan``."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from drivesim.core.types import Array

Actor = Callable[[Array, Array], Array]


def score(env, act: Actor, until_done: bool = True, seed: int = 0) -> dict[str, float]:
    """Collision and off-road rates and mean route progress [m] of ``act`` (obs (M, ...),
    key -> actions (M, ...)) on every pool entry of ``env`` (a DrivingEnv or MultiAgentEnv:
    rates over its learned agents), for ``env.episode_length`` steps. ``until_done``: each
    (agent's) count stops at its termination (the single-agent episode's end); False counts
    the whole episode (an agent collides or leaves the road "at least once")."""
    count = env.pool_size
    state = jax.vmap(env.reset_at)(jnp.arange(count))

    def body(carry, key):
        state, alive, progress, collided, offroad = carry
        state = jax.vmap(env.step)(state, act(state.obs, key))
        m = state.metrics
        progress = progress + jnp.where(alive, m["progress"], 0.0)
        collided = collided | (alive & (m["collided"] > 0))
        offroad = offroad | (alive & (m["offroad"] > 0))
        if until_done:
            alive = alive & (state.done == 0)
        return (state, alive, progress, collided, offroad), None

    zeros = jnp.zeros(state.reward.shape)
    start = (state, zeros == 0, zeros, zeros > 0, zeros > 0)
    keys = jax.random.split(jax.random.PRNGKey(seed), env.episode_length)
    (_, _, progress, collided, offroad), _ = jax.jit(lambda s: jax.lax.scan(body, s, keys))(start)
    return {
        "collision_rate": float(jnp.mean(collided)),
        "offroad_rate": float(jnp.mean(offroad)),
        "progress_m": float(jnp.mean(progress)),
    }
