"""drivesim as a Gymnasium vector environment (NumPy in, NumPy out) for SB3, CleanRL or
PufferLib users: ``num_envs`` environments stepped by one jitted program on the device.

Autoreset is Gymnasium's same-step mode (``metadata["autoreset_mode"]``): where an episode
ends, ``step`` returns the next episode's first observation, the ended episode's last one is
in ``info["final_obs"]`` (an object array, set where ``info["_final_obs"]``). Terminations
are collisions and leaving the road; truncations the time limit (see drivesim.env.wrappers).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from drivesim.env.environment import DrivingEnv, make
from drivesim.env.wrappers import wrap


class VectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` copies of ``env`` (a DrivingEnv), time-limited to ``episode_length``
    steps (default: the environment's), each drawing its scenarios from the pool."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, env: DrivingEnv, num_envs: int, episode_length: int | None = None):
        if num_envs < 1:
            raise ValueError(f"drivesim.env.gym.VectorEnv: num_envs must be >= 1, got {num_envs}")
        self.env = env
        self.num_envs = int(num_envs)
        obs = env.observation_space
        act = env.action_space
        self.single_observation_space = gymnasium.spaces.Box(obs.low, obs.high, obs.shape, np.float32)
        self.single_action_space = gymnasium.spaces.Box(act.low, act.high, act.shape, np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        wrapped = wrap(env, episode_length)
        self._reset = jax.jit(wrapped.reset)
        self._step = jax.jit(lambda state, action: _outputs(wrapped.step(state, action)))
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """First observations (num_envs, observation_size) and info (``scenario_id``)."""
        super().reset(seed=seed)
        first = int(self.np_random.integers(2**31)) if seed is None else int(seed)
        state = self._reset(jax.random.split(jax.random.PRNGKey(first), self.num_envs))
        self._state = state
        obs, scenario = jax.device_get((state.obs, state.info["scenario_id"]))
        return np.asarray(obs), {"scenario_id": np.asarray(scenario)}

    def step(self, actions):
        """(obs, rewards, terminations, truncations, infos) of one step of every environment;
        ``actions``: (num_envs, 2) in [-1, 1] (see drivesim.env.environment)."""
        if self._state is None:
            raise RuntimeError("drivesim.env.gym.VectorEnv: call reset() before step()")
        actions = np.asarray(actions, np.float32)
        if actions.shape != self.action_space.shape:
            expected = self.action_space.shape
            raise ValueError(
                f"drivesim.env.gym.VectorEnv: actions of shape {expected} expected, got {actions.shape}"
            )
        if not np.isfinite(actions).all():
            rows = np.flatnonzero(~np.isfinite(actions).all(axis=-1)).tolist()
            raise ValueError(f"drivesim.env.gym.VectorEnv: non-finite actions for environments {rows}")
        self._state, out = self._step(self._state, jnp.asarray(actions))
        out = jax.device_get(out)
        ended = out["done"] > 0
        truncated = out["truncation"] > 0
        final = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(ended):
            final[i] = out["final_obs"][i]
        info = {
            "final_obs": final,
            "_final_obs": ended,
            "scenario_id": out["scenario_id"],
            **{name: out["metrics"][name] for name in ("collided", "offroad", "progress")},
        }
        return out["obs"], out["reward"], ended & ~truncated, truncated, info


def _outputs(state):
    """The state and the arrays a Gymnasium step returns, fetched in one transfer."""
    picked = {
        "obs": state.obs,
        "reward": state.reward,
        "done": state.done,
        "truncation": state.info["truncation"],
        "final_obs": state.info["final_obs"],
        "scenario_id": state.info["scenario_id"],
        "metrics": {name: state.metrics[name] for name in ("collided", "offroad", "progress")},
    }
    return state, picked


def make_vec(source: str = "synthetic:highway", num_envs: int = 16, **make_args) -> VectorEnv:
    """A :class:`VectorEnv` of ``num_envs`` environments over ``drivesim.env.make(source,
    **make_args)``."""
    return VectorEnv(make(source, **make_args), num_envs)
