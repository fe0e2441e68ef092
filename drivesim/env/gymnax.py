"""The gymnax calling convention over a DrivingEnv, for PureJaxRL-style trainers:
``reset(key, params) -> (obs, state)`` and ``step(key, state, action, params) -> (obs, state,
reward, done, info)`` on one environment (batch with ``jax.vmap``), auto-reset inside
``step`` on a scenario drawn with ``key`` (gymnax's rule: the returned obs and state are the
new episode's where ``done``). ``done`` covers termination and the time limit; ``info`` holds
``terminated``, ``truncation``, ``final_obs`` and the step's metrics. ``params`` is unused
(drivesim's parameters live in the environment): pass ``env.default_params`` (None).
"""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import Array
from drivesim.env.environment import DrivingEnv
from drivesim.env.state import State
from drivesim.env.wrappers import where_done


class GymnaxEnv:
    """``env`` with gymnax's functions, episodes cut at ``episode_length`` steps (default:
    the environment's) or at the scenario's own end."""

    def __init__(self, env: DrivingEnv, episode_length: int | None = None):
        self.env = env
        self.episode_length = env.episode_length if episode_length is None else int(episode_length)

    @property
    def default_params(self) -> None:
        return None

    def observation_space(self, params=None):
        return self.env.observation_space

    def action_space(self, params=None):
        return self.env.action_space

    def reset(self, key: Array, params=None) -> tuple[Array, State]:
        state = self.env.reset(key)
        return state.obs, state

    def step(self, key: Array, state: State, action: Array, params=None):
        stepped = self.env.step(state, action)
        limit = stepped.info["step"] >= self.episode_length
        truncation = jnp.where((limit | (stepped.info["truncation"] > 0)) & (stepped.done == 0), 1.0, 0.0)
        done = (stepped.done > 0) | (truncation > 0)
        fresh = self.env.reset(key)
        following = where_done(done, fresh, stepped)
        info = {
            "terminated": stepped.done,
            "truncation": truncation,
            "final_obs": stepped.obs,
            **stepped.metrics,
        }
        return following.obs, following, stepped.reward, done, info
