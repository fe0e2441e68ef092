"""The RL view of the engine for the ego, as pure functions (Brax/PureJaxRL style).

One environment = one scenario driven by :func:`drivesim.core.rollout.advance` with an external
ego action; batching is ``vmap``. Scenarios come from a :class:`ScenarioPool` generated once on
the host and kept on the devices; an episode that ends (collision, off-road or its last step)
is reset in place to the next pool scenario: a gather from the pool's precomputed initial
states, once per step for the whole batch, selected only where the episode ended.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core import behavior
from drivesim.core.rollout import SimState, advance, observation_of, reset
from drivesim.core.types import Array, Scenario, pytree_dataclass
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate
from drivesim.train.config import EnvConfig


@pytree_dataclass
class ScenarioPool:
    """Training scenarios on the devices; leading axis M = pool size.

    scenarios: Scenario (M, ...); states: their initial SimState (M, ...);
    obs: (M, obs_size) float32 initial observations.
    """

    scenarios: Scenario
    states: SimState
    obs: Array


@pytree_dataclass
class EnvState:
    """State of one environment; fields () unless noted.

    sim: SimState of the running episode; scenario: its Scenario.
    env_id: global index of this environment (stable across devices and resumes).
    episode: episodes started by this environment (picks the next pool scenario).
    ep_return: reward summed over the running episode.
    progress: ego route progress [m] so far in the running episode.
    """

    sim: SimState
    scenario: Scenario
    env_id: Array
    episode: Array
    ep_return: Array
    progress: Array


@pytree_dataclass
class StepOutput:
    """What one environment step reports; fields () per environment.

    reward, done; collided, offroad: the step ended the episode that way;
    final_return, final_progress: return and route progress [m] of the episode that just
    ended (valid where done).
    """

    reward: Array
    done: Array
    collided: Array
    offroad: Array
    final_return: Array
    final_progress: Array


def scenario_ids(cfg: EnvConfig) -> np.ndarray:
    """Global scenario ids of the training pool."""
    return np.arange(cfg.pool_start, cfg.pool_start + cfg.pool_size, dtype=np.int64)


def host_scenarios(cfg: EnvConfig, ids) -> Scenario:
    """Generate scenarios ``ids`` of ``cfg.family`` (fixed agent count) and stack them (host)."""
    family = FamilyConfig(num_agents=cfg.num_agents, steps=cfg.episode_steps, seed=cfg.family_seed)
    records = [generate(cfg.family, int(i), family) for i in ids]
    return pad_and_stack([r.scenario for r in records], num_agents=cfg.num_agents)


def observe(state: SimState, cfg: EnvConfig) -> Array:
    """Ego observation (obs_size,) of one SimState, as the engine's MLP policy computes it."""
    return observation_of(state, cfg.sim)


def time_fraction(env: EnvState) -> Array:
    """Elapsed fraction of the episode () (critic input: how much of the episode is left)."""
    length = jnp.maximum(env.scenario.episode_length, 1).astype(jnp.float32)
    return env.sim.t.astype(jnp.float32) / length


def build_pool(cfg: EnvConfig, ids=None) -> ScenarioPool:
    """Generate the pool on the host and compute initial states and observations (jitted)."""
    return _init_pool(host_scenarios(cfg, scenario_ids(cfg) if ids is None else ids), cfg)


@partial(jax.jit, static_argnames="cfg")
def _init_pool(scenarios: Scenario, cfg: EnvConfig) -> ScenarioPool:
    states = jax.vmap(lambda s: reset(s, cfg.sim))(scenarios)
    obs = jax.vmap(lambda s: observe(s, cfg))(states)
    return ScenarioPool(scenarios=scenarios, states=states, obs=obs)


def pool_index(env_id: Array, episode: Array | int, num_envs: int, pool_size: int) -> Array:
    """Pool scenario of an environment's episode: (env_id + episode * num_envs) mod M,
    so the environments walk through the pool together and cover it evenly."""
    return (env_id + episode * num_envs) % pool_size


def _from_pool(pool: ScenarioPool, index: Array):
    take = lambda leaf: leaf[index]  # noqa: E731
    return (
        jax.tree_util.tree_map(take, pool.states),
        jax.tree_util.tree_map(take, pool.scenarios),
        pool.obs[index],
    )


def env_reset(pool: ScenarioPool, env_id: Array, num_envs: int) -> tuple[EnvState, Array]:
    """Initial EnvState and observation of environments ``env_id`` (any shape (...,))."""
    sim, scenario, obs = _from_pool(pool, pool_index(env_id, 0, num_envs, pool.obs.shape[0]))
    zeros = jnp.zeros(env_id.shape, jnp.float32)
    env = EnvState(
        sim=sim,
        scenario=scenario,
        env_id=env_id,
        episode=jnp.zeros(env_id.shape, jnp.int32),
        ep_return=zeros,
        progress=zeros,
    )
    return env, obs


def reward_of(info, progress_gain: Array, cfg: EnvConfig) -> Array:
    """The documented per-step reward (see :class:`RewardConfig`); ()."""
    r = cfg.reward
    return (
        r.progress_weight * progress_gain
        - r.collision_penalty * info.ego_collided.astype(jnp.float32)
        - r.offroad_penalty * info.offroad.astype(jnp.float32)
        - r.jerk_weight * info.ego_jerk
    )


def physics_step(env: EnvState, unit_action: Array, cfg: EnvConfig, step_index: Array | None = None):
    """Advance one environment without reset: unit action (2,) in the actor's [-1, 1] space
    -> (new SimState, observation (obs_size,), StepOutput).

    step_index: unbatched () step counter shared by the whole batch, driving the engine's
    re-sort when ``cfg.sort_schedule == "global"`` (see :class:`EnvConfig`); without it, or
    with ``"episode"``, the episode's own step drives it (same schedule as evaluation)."""
    sim_cfg = cfg.sim
    accel, steer = behavior.action_from_unit(unit_action, sim_cfg)
    if cfg.sort_schedule == "episode" or step_index is None:
        step_index = env.sim.t
    sim, info = advance(
        env.sim, env.scenario, sim_cfg, None, ego_action=(accel, steer), step_index=step_index
    )
    reward = reward_of(info, info.ego_progress - env.progress, cfg)
    ended = sim.t >= jnp.minimum(env.scenario.episode_length, sim_cfg.num_steps)
    done = info.ego_collided | info.offroad | ended
    ep_return = env.ep_return + reward
    out = StepOutput(
        reward=reward,
        done=done,
        collided=info.ego_collided,
        offroad=info.offroad,
        final_return=ep_return,
        final_progress=info.ego_progress,
    )
    return sim, observe(sim, cfg), out


def env_step(
    pool: ScenarioPool,
    env: EnvState,
    unit_action: Array,
    cfg: EnvConfig,
    num_envs: int,
    step_index: Array | None = None,
) -> tuple[EnvState, Array, StepOutput]:
    """Step a batch of environments (B,) with unit actions (B, 2); environments whose episode
    ended restart on their next pool scenario. step_index: unbatched () counter shared by the
    batch (see :func:`physics_step`). Returns (EnvState, obs (B, obs_size), StepOutput)."""
    sim, obs, out = jax.vmap(lambda e, a: physics_step(e, a, cfg, step_index))(env, unit_action)
    episode = env.episode + out.done.astype(jnp.int32)
    fresh_sim, fresh_scenario, fresh_obs = _from_pool(
        pool, pool_index(env.env_id, episode, num_envs, pool.obs.shape[0])
    )

    def pick(new, old):
        mask = out.done.reshape(out.done.shape + (1,) * (new.ndim - 1))
        return jnp.where(mask, new, old)

    env = EnvState(
        sim=jax.tree_util.tree_map(pick, fresh_sim, sim),
        scenario=jax.tree_util.tree_map(pick, fresh_scenario, env.scenario),
        env_id=env.env_id,
        episode=episode,
        ep_return=jnp.where(out.done, 0.0, out.final_return),
        progress=jnp.where(out.done, 0.0, out.final_progress),
    )
    return env, pick(fresh_obs, obs), out
