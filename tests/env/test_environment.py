"""drivesim.env: the functional environment against the engine and the NumPy geometry,
reproducibility from the key, time limits, auto-reset that draws scenarios, and its errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import drivesim.env as dse
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.types import replace
from drivesim.env.wrappers import VmapWrapper

B = 16
STEPS = 30


@pytest.fixture(scope="module")
def env():
    return dse.make("synthetic:highway,merge", agents=8, episode_steps=STEPS, pool_size=B)


def _run(step, state, actions):
    """Scan ``step`` over actions (T, B, 2); the states' rewards, dones, truncations, metrics."""

    def body(s, a):
        s = step(s, a)
        return s, (s.reward, s.done, s.info["truncation"], s.metrics, s.info["scenario_id"])

    return jax.jit(lambda s, a: jax.lax.scan(body, s, a))(state, actions)


def test_spaces_and_shapes(env):
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    assert env.observation_size == 55 and env.action_size == 2
    assert state.obs.shape == env.observation_space.shape == (55,)
    assert env.action_space.contains(np.zeros(2)) and not env.action_space.contains(np.full(2, 1.5))
    nxt = jax.jit(env.step)(state, jnp.zeros(2))
    assert nxt.obs.shape == (55,) and nxt.reward.shape == () and nxt.done.dtype == jnp.float32
    assert int(nxt.info["step"]) == 1 and set(nxt.metrics) == {
        "collided",
        "offroad",
        "progress",
        "overflow",
        "bad_action",
    }
    bad = jax.jit(env.step)(state, jnp.array([jnp.nan, 0.5]))
    zero = jax.jit(env.step)(state, jnp.zeros(2))
    assert float(bad.metrics["bad_action"]) == 1.0 and float(nxt.metrics["bad_action"]) == 0.0
    np.testing.assert_array_equal(np.asarray(bad.obs), np.asarray(zero.obs))


def test_zero_actions_drive_as_the_idm_ego(env):
    """A zero correction is the engine's IDM ego with the published defaults, bit for bit."""
    state = jax.vmap(env.reset_at)(jnp.arange(B))
    final, (_, done, _, _, _) = _run(jax.vmap(env.step), state, jnp.zeros((STEPS, B, 2)))
    engine = jax.device_get(simulate(env.pool.scenarios, idm_policy(), replace(env.config, policy=None)))
    np.testing.assert_array_equal(np.asarray(final.pipeline_state.progress), engine.progress_m)
    np.testing.assert_array_equal(np.asarray(done).max(axis=0) > 0, engine.ego_collided | engine.offroad)
    # the wrappers' batch clock re-sorts every other step, as a rollout does: the same physics
    batched = VmapWrapper(env)
    clocked = replace(state, info={**state.info, "clock": jnp.zeros(B, jnp.int32)})
    final, _ = _run(batched.step, clocked, jnp.zeros((STEPS, B, 2)))
    np.testing.assert_array_equal(np.asarray(final.pipeline_state.progress), engine.progress_m)


def test_reproducible_from_the_key_alone(env):
    wrapped = dse.wrap(env)
    actions = jax.random.uniform(jax.random.PRNGKey(5), (60, B, 2), minval=-1.0, maxval=1.0)

    def rollout(seed):
        state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(seed), B))
        return jax.device_get(_run(wrapped.step, state, actions)[1])

    first, again, other = rollout(1), rollout(1), rollout(2)
    for a, b in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[4], other[4])  # other keys draw other scenarios


def test_time_limit_and_auto_reset_draw_new_scenarios(env):
    limit = 10
    wrapped = dse.wrap(env, episode_length=limit)
    state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(3), B))
    first_ids = np.asarray(state.info["scenario_id"])
    state, (_, done, truncation, _, ids) = _run(wrapped.step, state, jnp.zeros((4 * limit, B, 2)))
    done, truncation, ids = np.asarray(done), np.asarray(truncation), np.asarray(ids)
    # zero actions never crash here: every episode is cut at the limit, then restarts
    assert not done[: limit - 1].any() and done[limit - 1].all() and truncation[limit - 1].all()
    assert done.sum() == 4 * B and (truncation == done).all()
    assert np.asarray(state.info["steps"]).max() == limit and np.asarray(state.info["step"]).max() == 0
    drawn = np.unique(np.concatenate([first_ids, ids[limit - 1 :: limit].reshape(-1)]))
    assert len(drawn) > B // 2  # restarts draw from the pool, not each environment's first scenario


def test_a_crash_terminates_and_final_obs_is_the_last_observation(env):
    wrapped = dse.wrap(env)
    state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(4), B))
    full_left = jnp.broadcast_to(jnp.array([1.0, 1.0]), (STEPS, B, 2))

    def body(s, a):
        s = wrapped.step(s, a)
        return s, (s.done, s.info["truncation"], s.metrics["offroad"], s.obs, s.info["final_obs"])

    _, (done, trunc, offroad, obs, final) = jax.jit(lambda s: jax.lax.scan(body, s, full_left))(state)
    done, trunc, offroad = np.asarray(done), np.asarray(trunc), np.asarray(offroad)
    ended = (done > 0) & (trunc == 0)
    assert ended.any() and (offroad[ended] > 0).all()
    t, i = np.argwhere(ended)[0]
    assert not np.array_equal(np.asarray(obs)[t, i], np.asarray(final)[t, i])


def test_reward_is_a_user_function(env):
    gain = dse.DrivingEnv(env.pool, env.config, reward=lambda step: 2.0 * step.progress_gain)
    state = jax.vmap(gain.reset_at)(jnp.arange(B))
    _, (reward, _, _, metrics, _) = _run(jax.vmap(gain.step), state, jnp.zeros((5, B, 2)))
    np.testing.assert_array_equal(np.asarray(reward), 2.0 * np.asarray(metrics["progress"]))


def test_road_ahead_matches_numpy_geometry():
    observe = dse.NeighboursAndRoad(points=4, spacing=6.0)
    env = dse.make("synthetic:highway", agents=8, episode_steps=5, pool_size=4, observe=observe)
    assert env.observation_size == 55 + 24
    state = jax.jit(env.reset_at)(2)
    road = np.asarray(state.obs[55:]).reshape(4, 3, 2) * 50.0
    sc = jax.device_get(jax.tree_util.tree_map(lambda leaf: leaf[2], env.pool.scenarios))
    ego = int(sc.ego_index)
    x, y, h = (float(v[ego]) for v in (sc.agents.x, sc.agents.y, sc.agents.heading))
    line = np.asarray(sc.road.centers[sc.agents.route[ego]], np.float64)
    line = line[np.r_[True, np.any(np.diff(line, axis=0) != 0, axis=1)]]  # drop the padding repeats
    seg = np.diff(line, axis=0)
    lengths = np.hypot(seg[:, 0], seg[:, 1])
    along = np.concatenate([[0.0], np.cumsum(lengths)])
    k = int(np.argmin([_distance((x, y), line[j], line[j + 1]) for j in range(len(seg))]))
    u = seg[k] / lengths[k]
    s0 = along[k] + float(np.dot([x - line[k][0], y - line[k][1]], u))
    half = 0.5 * float(sc.road.widths[sc.agents.route[ego]])
    for j in range(4):
        s = s0 + 6.0 * (j + 1)
        m = min(int(np.searchsorted(along, s, side="right")) - 1, len(seg) - 1)
        cu = seg[m] / lengths[m]
        centre = line[m] + (s - along[m]) * cu
        normal = np.array([-cu[1], cu[0]])
        for which, point in enumerate((centre, centre + half * normal, centre - half * normal)):
            dx, dy = point[0] - x, point[1] - y
            want = (dx * np.cos(h) + dy * np.sin(h), -dx * np.sin(h) + dy * np.cos(h))
            np.testing.assert_allclose(road[j, which], want, atol=2e-3)


def _distance(p, a, b) -> float:
    ab, ap = np.subtract(b, a), np.subtract(p, a)
    t = np.clip(np.dot(ap, ab) / np.dot(ab, ab), 0.0, 1.0)
    return float(np.hypot(*(ap - t * ab)))


def test_recorded_source(commonroad_dir):
    path = sorted(commonroad_dir.glob("*.xml"))[0]
    env = dse.make(f"commonroad:{path}", agents=8, episode_steps=20)
    assert env.pool_size == 1
    state = jax.jit(dse.wrap(env).reset)(jax.random.split(jax.random.PRNGKey(0), 2))
    assert state.obs.shape == (2, env.observation_size) and np.isfinite(np.asarray(state.obs)).all()


@pytest.mark.parametrize(
    "source,args,message",
    [
        ("synthetic:nosuch", {}, "unknown synthetic family"),
        ("synthetic:highway", {"pool_size": 0}, "pool size must be >= 1"),
    ],
)
def test_bad_input_is_one_clear_error(source, args, message):
    with pytest.raises(ValueError, match=message):
        dse.make(source, **args)


def test_gymnax_convention(env):
    """gymnax's reset(key, params) / step(key, state, action, params), vmapped: episodes cut at
    the limit restart on drawn scenarios inside step."""
    gx = dse.GymnaxEnv(env, episode_length=8)
    keys = jax.random.split(jax.random.PRNGKey(9), B)
    obs, state = jax.vmap(gx.reset, in_axes=(0, None))(keys, gx.default_params)
    assert obs.shape == (B, env.observation_size)

    def body(carry, key):
        state = carry
        obs, state, reward, done, info = jax.vmap(gx.step, in_axes=(0, 0, 0, None))(
            jax.random.split(key, B), state, jnp.zeros((B, 2)), gx.default_params
        )
        return state, (obs, done, info["truncation"], info["final_obs"], state.info["step"])

    _, (obs, done, trunc, final, step) = jax.jit(
        lambda s: jax.lax.scan(body, s, jax.random.split(keys[0], 16))
    )(state)
    done, trunc, step = np.asarray(done), np.asarray(trunc), np.asarray(step)
    assert done[7].all() and trunc[7].all() and not done[:7].any() and (step[7] == 0).all()
    assert not np.array_equal(np.asarray(obs)[7], np.asarray(final)[7])
