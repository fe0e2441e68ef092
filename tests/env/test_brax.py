"""Brax's own PPO trains on ``drivesim.env.make(...)`` as it is, with Brax's wrappers (the
README's Brax snippet runs it with ``drivesim.env.wrap`` as its ``wrap_env_fn``)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import drivesim.env as dse
from drivesim.env.brax_compat import patch_jax

pytestmark = pytest.mark.slow


def test_brax_ppo_trains():
    patch_jax()
    from brax.training.agents.ppo import train as ppo

    env = dse.make("synthetic:highway", agents=8, episode_steps=20, pool_size=64)
    seen = []
    make_policy, params, metrics = ppo.train(
        environment=env,
        num_timesteps=2_000,
        episode_length=env.episode_length,
        num_envs=16,
        batch_size=16,
        num_minibatches=2,
        unroll_length=5,
        num_updates_per_batch=1,
        num_evals=2,
        num_eval_envs=8,
        seed=0,
        progress_fn=lambda step, m: seen.append((step, m)),
    )
    assert [s for s, _ in seen][-1] >= 2_000
    assert np.isfinite(float(metrics["eval/episode_reward"]))
    assert 0.0 <= float(metrics["eval/episode_collided"]) <= 1.0
    policy = make_policy(params, deterministic=True)
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    action, _ = policy(state.obs[None], jax.random.PRNGKey(1))
    assert action.shape == (1, 2) and np.all(np.abs(np.asarray(action)) <= 1.0)
