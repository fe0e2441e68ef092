"""drivesim.env.gym.VectorEnv with the real Gymnasium: spaces, same-step autoreset, seeds."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from drivesim.env.gym import make_vec

N = 6


@pytest.fixture(scope="module")
def envs():
    return make_vec("synthetic:highway", num_envs=N, agents=8, episode_steps=12, pool_size=32)


def _episode(envs, seed: int, steps: int):
    obs, info = envs.reset(seed=seed)
    envs.action_space.seed(seed)
    out = [(obs, info["scenario_id"])]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
        out.append((obs, reward, terminated, truncated, info))
    return out


def test_a_gymnasium_vector_env(envs):
    assert isinstance(envs, gymnasium.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.observation_space.shape == (N, 55) and envs.action_space.shape == (N, 2)
    run = _episode(envs, seed=0, steps=30)
    ended_any = False
    for obs, reward, terminated, truncated, info in run[1:]:
        assert envs.observation_space.contains(obs) and obs.dtype == np.float32
        assert reward.shape == (N,) and terminated.dtype == bool and truncated.dtype == bool
        assert not (terminated & truncated).any()
        ended = terminated | truncated
        np.testing.assert_array_equal(info["_final_obs"], ended)
        for i in np.flatnonzero(ended):  # the next episode's first observation, the last one apart
            ended_any = True
            assert info["final_obs"][i].shape == (55,) and not np.array_equal(info["final_obs"][i], obs[i])
    assert ended_any


def test_same_seed_same_run(envs):
    first, again = _episode(envs, seed=7, steps=15), _episode(envs, seed=7, steps=15)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_bad_actions(envs):
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions of shape \(6, 2\) expected"):
        envs.step(np.zeros((N, 3), np.float32))
    actions = np.zeros((N, 2), np.float32)
    actions[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"non-finite actions for environments \[4\]"):
        envs.step(actions)
