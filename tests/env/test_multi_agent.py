"""drivesim.env with several learned agents: zero actions are the engine bit for bit, each
agent's action moves that agent only, per-agent rewards equal the formula computed in NumPy
from the states, an episode ends for everyone at the first crash, and Brax's own rollout
and evaluation code runs on the flattened streams."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import drivesim.env as dse
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import finalize, simulate
from drivesim.core.types import replace
from drivesim.env.multi_agent import flat_wrap

B = 8
AGENTS = 8
STEPS = 24


@pytest.fixture(scope="module")
def both():
    kw = dict(agents=AGENTS, episode_steps=STEPS, pool_size=B)
    return dse.make("synthetic:highway,merge", learned="all", **kw), dse.make("synthetic:highway,merge", **kw)


def _scan(env, actions):
    """Every pool entry from its reset, ``actions`` (T, B, K, 2); final states and the
    per-step (reward, done, truncation, obs)."""
    start = jax.vmap(env.reset_at)(jnp.arange(B))

    def body(s, a):
        s = jax.vmap(env.step)(s, a)
        return s, (s.reward, s.done, s.info["truncation"], s.obs)

    return jax.jit(lambda s, a: jax.lax.scan(body, s, a))(start, actions)


def test_spaces(both):
    multi, single = both
    assert multi.observation_space.shape == (AGENTS, single.observation_size)
    assert multi.action_space.shape == (AGENTS, 2) and multi.observation_size == single.observation_size
    state = multi.reset_at(0)
    assert (
        state.obs.shape == (AGENTS, 55) and state.reward.shape == (AGENTS,) and state.done.shape == (AGENTS,)
    )


def test_zero_actions_are_the_engine_bit_for_bit(both):
    """Every agent learned, all corrections zero: the engine with every agent under IDM
    (the ego under the published defaults); the ego's row is the single-agent env's."""
    multi, single = both
    final, (reward, done, _, obs) = _scan(multi, jnp.zeros((STEPS, B, AGENTS, 2)))
    metrics = jax.vmap(finalize)(final.pipeline_state.sim, multi.pool.scenarios)
    engine = simulate(multi.pool.scenarios, idm_policy(), replace(multi.config, policy=None))
    for name in metrics.__dataclass_fields__:  # the re-sort schedule moves only the window flag
        if name != "window_overflow":
            np.testing.assert_array_equal(
                np.asarray(getattr(metrics, name)), np.asarray(getattr(engine, name))
            )
    ego = np.asarray(multi.pool.scenarios.ego_index)
    start = jax.vmap(single.reset_at)(jnp.arange(B))

    def body(s, a):
        s = jax.vmap(single.step)(s, a)
        return s, (s.reward, s.obs)

    _, (r1, o1) = jax.jit(lambda s, a: jax.lax.scan(body, s, a))(start, jnp.zeros((STEPS, B, 2)))
    rows = np.arange(B)
    np.testing.assert_array_equal(np.asarray(reward)[:, rows, ego], np.asarray(r1))
    np.testing.assert_array_equal(np.asarray(obs)[:, rows, ego], np.asarray(o1))


def test_a_subset_learns_and_each_action_moves_its_agent():
    env = dse.make("synthetic:highway", agents=AGENTS, episode_steps=STEPS, pool_size=2, learned=(1, 4))
    assert env.num_learned == 2 and not env.has_ego
    start = env.reset_at(0)
    zero = env.step(start, jnp.zeros((2, 2)))
    brake = env.step(start, jnp.array([[-1.0, 0.0], [0.0, 0.0]]))

    def speeds(state):
        a = state.pipeline_state.sim.agents
        order = np.argsort(np.asarray(a.agent_id))
        return np.asarray(a.speed)[order]

    v0, v1 = speeds(zero), speeds(brake)
    np.testing.assert_allclose((v0[1] - v1[1]) / env.config.dt, -env.config.min_accel, rtol=1e-5)
    others = np.arange(AGENTS) != 1
    np.testing.assert_array_equal(v0[others], v1[others])  # one step: nobody else reacted yet


def _reward_numpy(before, after, ids, cfg, dt):
    """RewardConfig's formula per learned agent from two SimStates (NumPy, float64)."""

    def by_id(sim, values):
        order = np.argsort(np.asarray(sim.agents.agent_id))
        return np.asarray(values, np.float64)[order][ids]

    gain = by_id(after, after.proj.s) - by_id(before, before.proj.s)
    limit = cfg.speed_limit * dt
    gap, lead = by_id(before, before.lead_gap), by_id(before, before.lead_speed)
    closing = by_id(before, before.agents.speed) - lead
    with np.errstate(divide="ignore", invalid="ignore"):
        ttc = np.where(np.isfinite(gap) & (closing > 0), np.maximum(gap, 0.0) / closing, np.inf)
    close = np.where(np.isfinite(ttc), np.clip(1.0 - ttc / cfg.headway_ttc_s, 0.0, 1.0), 0.0)
    outcome = by_id(after, after.agents.outcome).astype(int)
    jerk = np.abs(by_id(after, after.agents.accel) - by_id(before, before.agents.accel)) / dt
    return (
        cfg.progress_weight * np.minimum(gain, limit)
        - cfg.overspeed_weight * np.maximum(gain - limit, 0.0)
        - cfg.collision_penalty * (outcome & 1 > 0)
        - cfg.offroad_penalty * (outcome & 2 > 0)
        - cfg.headway_penalty * close
        - cfg.lane_offset_weight * np.abs(by_id(after, after.proj.d))
        - cfg.jerk_weight * jerk
    )


def test_rewards_match_the_formula_per_agent(both):
    multi, _ = both
    key = jax.random.PRNGKey(4)
    state = multi.reset_at(1)
    step = jax.jit(multi.step)
    for t in range(6):
        action = jax.random.uniform(jax.random.fold_in(key, t), (AGENTS, 2), minval=-0.5, maxval=0.5)
        new = step(state, action)
        want = _reward_numpy(
            state.pipeline_state.sim,
            new.pipeline_state.sim,
            np.arange(AGENTS),
            dse.RewardConfig(),
            multi.config.dt,
        )
        np.testing.assert_allclose(np.asarray(new.reward), want, rtol=2e-4, atol=2e-4)
        state = new


def test_first_crash_ends_the_episode_for_everyone(both):
    multi, _ = both
    full = jnp.tile(jnp.array([0.5, 1.0]), (STEPS, B, AGENTS, 1))  # everyone steers hard left
    _, (_, done, truncation, _) = _scan(multi, full)
    done, truncation = np.asarray(done), np.asarray(truncation)
    assert done.any(), "steering hard left leaves the road or crashes"
    for t, b in zip(*np.nonzero(done.any(axis=2)), strict=True):
        first = t == np.argmax(done[:, b].any(axis=1))
        if first:  # the others are cut, not terminated
            np.testing.assert_array_equal(truncation[t, b], 1.0 - done[t, b])
    wrapped = dse.wrap(multi)
    state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(0), B))
    step = jax.jit(wrapped.step)
    for _ in range(STEPS):
        state = step(state, full[0])
        ended = np.asarray((state.done + state.info["truncation"]).max(axis=1) > 0)
        restarted = np.asarray(state.info["step"]) == 0
        np.testing.assert_array_equal(ended, restarted)


def test_brax_rollout_and_evaluation_run_on_the_flat_streams(both):
    dse.patch_jax()
    from brax.envs.wrappers.training import EvalWrapper
    from brax.training import acting

    multi, _ = both
    env = EvalWrapper(flat_wrap(multi))
    state = jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), B * AGENTS))
    assert state.obs.shape == (B * AGENTS, 55)

    def policy(obs, key):
        return jax.random.uniform(key, obs.shape[:-1] + (2,), minval=-1.0, maxval=1.0), {}

    extra = ("truncation", "episode_metrics", "episode_done")
    unroll = jax.jit(lambda s, k: acting.generate_unroll(env, s, policy, k, STEPS, extra_fields=extra))
    final, data = unroll(state, jax.random.PRNGKey(1))
    assert data.reward.shape == (STEPS, B * AGENTS) and data.observation.shape == (STEPS, B * AGENTS, 55)
    ended = np.asarray(1.0 - data.discount)
    truncation = np.asarray(data.extras["state_extras"]["truncation"])
    assert ended.any() and np.all(truncation <= ended)
    streams = ended.reshape(STEPS, B, AGENTS).any(axis=2)
    np.testing.assert_array_equal(streams, ended.reshape(STEPS, B, AGENTS).all(axis=2))  # per scenario
    evaluated = final.info["eval_metrics"].episode_metrics
    assert set(evaluated) >= {"collided", "offroad", "reward"}
    with pytest.raises(ValueError, match="multiple of 8 agents"):
        env.reset(jax.random.split(jax.random.PRNGKey(0), 12))


def test_bad_learned_sets_are_refused():
    kw = dict(agents=4, episode_steps=4, pool_size=2)
    with pytest.raises(ValueError, match="expected 'ego', 'all'"):
        dse.make("synthetic:highway", learned="some", **kw)
    with pytest.raises(ValueError, match=r"outside the pool's \[0, 4\)"):
        dse.make("synthetic:highway", learned=(0, 9), **kw)
    with pytest.raises(ValueError, match="twice"):
        dse.make("synthetic:highway", learned=(1, 1), **kw)

    class EgoOnly:
        def size(self, config):
            return 3

        def __call__(self, sim, scenario, config):
            return jnp.zeros(3)

    with pytest.raises(ValueError, match="no of_agents"):
        dse.make("synthetic:highway", learned="all", observe=EgoOnly(), **kw)
