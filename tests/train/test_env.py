"""The RL environment: observation, reward, termination and automatic reset."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.core.observation import observation_size
from drivesim.core.rollout import simulate
from drivesim.train.config import tiny_config
from drivesim.train.env import build_pool, env_reset, env_step, physics_step, pool_index
from drivesim.train.networks import actor_mean, init_actor_critic

CFG = tiny_config().env


@pytest.fixture(scope="module")
def pool():
    return build_pool(CFG)


def test_pool_holds_training_ids(pool):
    ids = np.asarray(pool.scenarios.scenario_id)
    assert ids[0] == CFG.pool_start and len(ids) == CFG.pool_size
    assert pool.obs.shape == (CFG.pool_size, observation_size(CFG.obs_neighbours))


def test_hard_steering_goes_offroad_is_penalised_and_resets(pool):
    num_envs = 4
    env, obs = env_reset(pool, jnp.arange(num_envs, dtype=jnp.int32), num_envs, CFG)
    step = jax.jit(lambda e, a: env_step(pool, e, a, CFG, num_envs))
    # env 0: full left lock; env 1: straight at constant speed; env 2: full braking
    action = jnp.asarray([[0.5, 1.0], [0.0, 0.0], [-1.0, 0.0], [0.0, 0.0]])
    _, _, first = step(env, action)
    env1 = jax.tree_util.tree_map(lambda x: x[1], env)
    speed = float(env1.sim.agents.speed[env1.sim.agents.is_ego][0])
    assert float(first.reward[1]) == pytest.approx(CFG.reward.progress_weight * speed * CFG.dt, rel=0.05)
    assert float(first.reward[2]) < float(first.reward[1]) - CFG.reward.jerk_weight * 50  # jerk penalty
    ended = None
    for _ in range(CFG.episode_steps):
        before = env
        env, obs, out = step(env, action)
        if bool(out.done[0]):
            ended = out
            break
    assert ended is not None, "full steering lock never ended the episode"
    assert bool(ended.offroad[0] | ended.collided[0])
    assert float(ended.reward[0]) < -CFG.reward.offroad_penalty / 2
    # automatic reset: next pool scenario, t = 0, fresh observation and return
    assert int(env.episode[0]) == 1 and int(env.sim.t[0]) == 0 and float(env.ep_return[0]) == 0.0
    nxt = int(pool_index(0, 1, num_envs, CFG.pool_size))
    assert int(env.state.info["scenario_id"][0]) == CFG.pool_start + nxt
    np.testing.assert_allclose(obs[0], pool.obs[nxt])
    assert int(before.sim.t[0]) >= 1


def _episode(pool, cfg, policy, num_envs: int = 8, offset: int = 0):
    """One episode of the first ``num_envs`` pool scenarios under ``policy`` (obs -> unit action),
    without resets; the shared re-sort counter starts at ``offset``. StepOutputs (T, B)."""
    env, obs = env_reset(pool, jnp.arange(num_envs, dtype=jnp.int32), cfg.pool_size, cfg)

    @jax.jit
    def episode(env, obs):
        def body(carry, i):
            env, obs = carry
            state, out = jax.vmap(lambda e, a: physics_step(pool, e, a, cfg, i))(env, policy(obs))
            return (dataclasses.replace(env, state=state), state.obs), out

        steps = offset + jnp.arange(cfg.episode_steps, dtype=jnp.int32)
        return jax.lax.scan(body, (env, obs), steps)[1]

    return episode(env, obs)


def test_mean_action_in_env_equals_engine_mlp_policy(pool):
    """The deterministic trained policy in the env is what SimConfig(policy=MLP) runs (with the
    evaluation's per-episode re-sort schedule, ``sort_schedule="episode"``)."""
    p = tiny_config().ppo
    params = init_actor_critic(jax.random.PRNGKey(1), CFG.obs_size, p.hidden, p.init_log_std, 1.0)
    batch = jax.tree_util.tree_map(lambda x: x[:8], pool.scenarios)
    engine = simulate(batch, params.actor, CFG.sim)
    cfg = dataclasses.replace(CFG, sort_schedule="episode")
    outs = _episode(pool, cfg, lambda obs: actor_mean(params, obs), offset=1)
    np.testing.assert_allclose(outs.final_progress[-1], engine.progress_m, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(np.any(outs.collided, axis=0), engine.ego_collided)


def test_global_sort_schedule_keeps_the_physics(pool):
    """Training's shared re-sort counter ("global", here out of phase with the episodes) only
    changes the agents' storage order: fixed actions give the same episode as "episode"."""
    action = lambda obs: jnp.tile(jnp.asarray([[0.3, 0.02]]), (obs.shape[0], 1))  # noqa: E731
    episodic = _episode(pool, dataclasses.replace(CFG, sort_schedule="episode"), action)
    shared = _episode(pool, dataclasses.replace(CFG, sort_schedule="global"), action, offset=1)
    np.testing.assert_allclose(shared.final_progress, episodic.final_progress, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(shared.collided, episodic.collided)
    np.testing.assert_array_equal(shared.offroad, episodic.offroad)
