"""Wrappers over a :class:`drivesim.env.environment.DrivingEnv` (or any environment of
Brax's interface): the batch axis, the time limit and auto-reset, with Brax's names, so
``wrap`` can be passed to ``brax.training.agents.ppo.train(wrap_env_fn=...)``.

After ``wrap(env)``, ``reset(keys)`` takes keys (B, 2) and ``step(state, actions)`` actions
(B, 2); ``done`` = terminated or truncated; ``info["truncation"]``: the episode was cut by its
time limit (the learner bootstraps from ``info["final_obs"]``); an environment whose episode
ended restarts at once on a scenario drawn from the pool with its own key
(``info["reset_key"]``), so ``obs`` is already the new episode's first observation and a run
is reproducible from the first key alone.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.types import Array
from drivesim.env.environment import DrivingEnv
from drivesim.env.state import State


class Wrapper:
    """Delegates everything it does not define to the wrapped environment."""

    def __init__(self, env):
        self.env = env

    def reset(self, rng: Array) -> State:
        return self.env.reset(rng)

    def step(self, state: State, action: Array) -> State:
        return self.env.step(state, action)

    def __getattr__(self, name):
        if name == "env":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)


class VmapWrapper(Wrapper):
    """``reset(keys (B, 2))`` and ``step(states, actions (B, 2))`` over B environments, with
    a batch clock ``info["clock"]`` (steps since the batch's reset, the same in every
    environment) passed unbatched to a DrivingEnv's step (its re-sort schedule)."""

    def reset(self, rng: Array) -> State:
        state = jax.vmap(self.env.reset)(rng)
        state.info["clock"] = jnp.zeros(rng.shape[:-1], jnp.int32)
        return state

    def step(self, state: State, action: Array) -> State:
        clock = state.info["clock"]
        now = clock.reshape(-1)[0]  # unbatched: every environment holds the same value
        state = jax.vmap(lambda s, a: self._step_one(s, a, now))(state, action)
        state.info["clock"] = clock + 1
        return state

    def _step_one(self, state: State, action: Array, now: Array) -> State:
        if isinstance(self.env, DrivingEnv):  # the clock drives its re-sort schedule
            return self.env.step(state, action, now)
        return self.env.step(state, action)


class EpisodeWrapper(Wrapper):
    """A time limit of ``episode_length`` steps (and each scenario's own end, where the
    environment reports ``info["truncation"]``), ``action_repeat`` steps per action, and
    Brax's episode bookkeeping: ``info["steps"]``, ``info["truncation"]``,
    ``info["episode_done"]``, ``info["episode_metrics"]`` (sums over the running episode)."""

    def __init__(self, env, episode_length: int, action_repeat: int = 1):
        super().__init__(env)
        self.episode_length = int(episode_length)
        self.action_repeat = int(action_repeat)

    def reset(self, rng: Array) -> State:
        state = self.env.reset(rng)
        zeros = jnp.zeros(rng.shape[:-1], jnp.float32)
        state.info["steps"] = zeros
        state.info["truncation"] = zeros
        state.info["episode_done"] = zeros
        state.info["episode_metrics"] = {
            "sum_reward": zeros,
            "length": zeros,
            **{k: zeros for k in state.metrics},
        }
        return state

    def step(self, state: State, action: Array) -> State:
        def one(carry, _):
            nxt = self.env.step(carry, action)
            return nxt, nxt.reward

        state, rewards = jax.lax.scan(one, state, (), self.action_repeat)
        reward = jnp.sum(rewards, axis=0)
        steps = state.info["steps"] + self.action_repeat
        over = (steps >= self.episode_length) | (state.info["truncation"] > 0)
        done = jnp.where(over, 1.0, state.done)
        info = dict(state.info)
        info["truncation"] = jnp.where(over, 1.0 - state.done, 0.0)
        info["steps"] = steps
        kept = 1.0 - info["episode_done"]
        sums = {k: v * kept for k, v in info["episode_metrics"].items()}
        sums["sum_reward"] = sums["sum_reward"] + reward
        sums["length"] = sums["length"] + self.action_repeat
        for name, value in state.metrics.items():
            if name in sums and name not in ("sum_reward", "length"):  # Brax's EvalWrapper adds "reward"
                sums[name] = sums[name] + value
        info["episode_metrics"] = sums
        info["episode_done"] = done
        return state.replace(reward=reward, done=done, info=info)


def where_done(done: Array, new, old):
    """The PyTree ``new`` where ``done`` ((B,) or () bool, leading axes of every leaf) is set,
    ``old`` elsewhere."""

    def pick(a, b):
        return jnp.where(done.reshape(done.shape + (1,) * (a.ndim - done.ndim)), a, b)

    return jax.tree_util.tree_map(pick, new, old)


def episode_ended(state: State) -> Array:
    """(B,) bool: the batch's episodes that ended: ``done`` or ``info["truncation"]`` set (for
    any agent, where those have an agent axis: drivesim.env.multi_agent)."""
    ended = state.done > 0
    if "truncation" in state.info:
        ended = ended | (state.info["truncation"] > 0)
    return jnp.any(ended.reshape(ended.shape[0], -1), axis=1)


class AutoResetWrapper(Wrapper):
    """Where an episode ended (:func:`episode_ended`), the environment restarts on a freshly
    drawn scenario (a reset with the environment's next key); ``info["final_obs"]``: the
    observation the step reached before any restart."""

    def reset(self, rng: Array) -> State:
        keys = jax.vmap(jax.random.split)(rng)  # (B, 2, 2): the restart stream, the first episode
        state = self.env.reset(keys[:, 1])
        state.info["reset_key"] = keys[:, 0]
        state.info["final_obs"] = state.obs
        return state

    def step(self, state: State, action: Array) -> State:
        if "steps" in state.info:
            state.info["steps"] = jnp.where(state.done > 0, 0.0, state.info["steps"])
        state = state.replace(done=jnp.zeros_like(state.done))
        keys = jax.vmap(jax.random.split)(state.info["reset_key"])
        state = self.env.step(state, action)
        fresh = self.env.reset(keys[:, 1])
        done = episode_ended(state)
        info = dict(state.info)
        info["final_obs"] = state.obs
        info["reset_key"] = keys[:, 0]
        for name in ("scenario_id", "step"):
            if name in info:
                info[name] = where_done(done, fresh.info[name], info[name])
        return state.replace(
            pipeline_state=where_done(done, fresh.pipeline_state, state.pipeline_state),
            obs=where_done(done, fresh.obs, state.obs),
            info=info,
        )


def wrap(env, episode_length: int | None = None, action_repeat: int = 1, randomization_fn=None) -> Wrapper:
    """``env`` batched, time-limited (default: its ``episode_length``) and auto-reset on drawn
    scenarios (see the module docstring; a multi-agent environment, drivesim.env.multi_agent,
    gets its time limit and the auto-reset, with actions (B, K, 2)); the signature of
    ``brax.envs.training.wrap``, so it is a ``wrap_env_fn`` for Brax's trainers.
    ``randomization_fn``: not supported (None)."""
    if randomization_fn is not None:
        raise ValueError(
            "drivesim.env.wrappers.wrap: randomization_fn is not supported (draw scenarios instead)"
        )
    length = env.episode_length if episode_length is None else episode_length
    if hasattr(env, "with_time_limit"):  # a multi-agent environment keeps its own time limit
        if action_repeat != 1:
            raise ValueError(
                "drivesim.env.wrappers.wrap: a multi-agent environment takes action_repeat=1 only"
            )
        return AutoResetWrapper(VmapWrapper(env.with_time_limit(length)))
    return AutoResetWrapper(EpisodeWrapper(VmapWrapper(env), length, action_repeat))
