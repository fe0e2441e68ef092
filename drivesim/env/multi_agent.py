"""Several learned agents in one scenario (self-play when all of them learn).

``drivesim.env.make(SOURCE, learned="all")`` (or ``learned=(0, 3, 5)``, slots in the
scenario's original agent order) gives a :class:`MultiAgentEnv`: ``reset(key)`` and
``step(state, actions)`` as the single-agent environment's, with a leading agent axis K on
the per-agent values: ``actions`` (K, 2) (each row the single-agent action convention,
drivesim.env.environment), ``obs`` (K, observation_size) (each agent's own, as the ego's),
``reward`` (K,) (the reward function applied to each agent's own StepRecord,
drivesim.env.learned.agent_infos), ``done`` (K,) (that agent collided or left the road),
``info["truncation"]`` (K,). The agents that do not learn are driven by the engine (IDM, the
ego by the published IDM defaults, replayed logs where a scenario has them; a learned agent
that replays a log follows its log).

The episode ends when any learned agent terminates or the scenario's last step is reached:
for every learned agent that did not terminate, that is a truncation (its future exists).
``drivesim.env.wrap(env)`` batches and auto-resets it (an episode per environment, the
time limit its ``episode_length`` argument); ``flat_wrap`` presents B environments of K agents
as B * K single-agent streams of Brax's shapes, so Brax's PPO trains one policy shared by
every agent (``brax.training.agents.ppo.train(..., wrap_env_fn=flat_wrap)``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.actions import AgentActions
from drivesim.core.policies import IDM, idm_policy, policy_of
from drivesim.core.rollout import advance
from drivesim.core.types import Array, SimConfig, StepControls
from drivesim.env.environment import DrivingEnv, fresh_state
from drivesim.env.learned import agent_infos, agent_step, at, learned_ids, lookup_table, view
from drivesim.env.pool import PoolSpec, ScenarioPool, build_pool, pick
from drivesim.env.reward import Reward, StepRecord
from drivesim.env.spaces import Box
from drivesim.env.state import AgentsEpisode, State
from drivesim.env.wrappers import Wrapper, wrap


class MultiAgentEnv(DrivingEnv):
    """A driving environment whose learned agents are ``ids`` (see the module docstring);
    pool, config, observe, reward as :class:`DrivingEnv`'s (``observe`` needs
    ``of_agents``); ``time_limit``: steps per episode at most (default: the scenario's)."""

    def __init__(
        self,
        pool: ScenarioPool,
        config: SimConfig,
        ids: tuple[int, ...],
        observe=None,
        reward: Reward | None = None,
        time_limit: int | None = None,
    ):
        super().__init__(pool, config, observe, reward)
        if policy_of(config) != IDM:
            raise ValueError(
                f"drivesim.env: the agents that do not learn follow IDM; got {policy_of(config).name!r}"
            )
        slots = int(pool.scenarios.agents.x.shape[-1])
        self.ids = ids
        self.has_ego = len(ids) == slots  # every slot learns: the ego always does
        self.lookup = lookup_table(ids, slots)
        self.time_limit = config.num_steps if time_limit is None else int(time_limit)

    @property
    def num_learned(self) -> int:
        return len(self.ids)

    @property
    def observation_space(self) -> Box:
        return Box(low=-float("inf"), high=float("inf"), shape=(self.num_learned, self.observation_size))

    @property
    def action_space(self) -> Box:
        return Box(low=-1.0, high=1.0, shape=(self.num_learned, self.action_size))

    @property
    def episode_length(self) -> int:
        return min(self.time_limit, self.config.num_steps)

    def with_time_limit(self, steps: int) -> MultiAgentEnv:
        """The same environment (the same pool) with episodes of at most ``steps`` steps."""
        return MultiAgentEnv(self.pool, self.config, self.ids, self.observe, self.reward_fn, steps)

    def reset_at(self, index: Array) -> State:
        index = jnp.asarray(index, jnp.int32)
        sim, scenario, obs = pick(self.pool, index)
        k = self.num_learned
        zeros = jnp.zeros((k,), jnp.float32)
        arc = at(sim.proj.s, view(sim, jnp.asarray(self.ids, jnp.int32)))
        episode = AgentsEpisode(sim=sim, index=index, start_arc=arc, last_arc=arc)
        return fresh_state(episode, obs, zeros, scenario.scenario_id)

    def step(self, state: State, action: Array, clock: Array | None = None) -> State:
        """Advance one step with ``action`` (K, 2); see the module docstring. ``clock``: as
        :meth:`DrivingEnv.step`'s."""
        episode = state.pipeline_state
        config = self.config
        scenario = self.scenario(episode.index)
        ids = jnp.asarray(self.ids, jnp.int32)
        finite, accel, steer = self.controls(action)
        sim0 = episode.sim
        controls = AgentActions.by_agent(
            sim0.agents.agent_id, jnp.asarray(self.lookup), accel, steer, self.has_ego
        )
        policy = None if self.has_ego else idm_policy()
        step_controls = StepControls(ego_action=controls, step_index=clock, zone_on=self.searches)
        sim, info = advance(sim0, scenario, config, policy, step_controls)
        step, where = agent_step(sim0, sim, ids, config)
        gain = step.arc - episode.last_arc  # absent agents read zeros (learned.at), so gain 0
        infos = agent_infos(info, step, episode.start_arc)
        one = lambda i, g, off: self.reward_fn(
            StepRecord(info=i, progress_gain=g, lane_offset=off, dt=config.dt)
        )  # noqa: E731
        reward = jnp.where(where.present, jax.vmap(one)(infos, gain, step.lane_offset), 0.0).astype(
            jnp.float32
        )
        terminated = step.collided | step.offroad
        count = state.info["step"] + 1
        ended = (sim.t >= jnp.minimum(scenario.episode_length, config.num_steps)) | (count >= self.time_limit)
        over = jnp.any(terminated) | ended
        as_float = lambda v: v.astype(jnp.float32)  # noqa: E731
        metrics = dict(state.metrics)
        metrics.update(
            collided=as_float(step.collided),
            offroad=as_float(step.offroad),
            progress=as_float(gain),
            overflow=as_float(info.overflow),
            bad_action=as_float(~jnp.all(finite)),
        )
        new_info = dict(state.info)
        new_info.update(terminated=as_float(terminated), truncation=as_float(over & ~terminated), step=count)
        obs = self.observe.of_agents(sim, scenario, config, where, step.arc - episode.start_arc)
        return state.replace(
            pipeline_state=AgentsEpisode(
                sim=sim, index=episode.index, start_arc=episode.start_arc, last_arc=step.arc
            ),
            obs=obs,
            reward=reward,
            done=as_float(terminated),
            metrics=metrics,
            info=new_info,
        )


def make_agents(spec: PoolSpec, config: SimConfig, learned, observe, reward: Reward | None) -> MultiAgentEnv:
    """The MultiAgentEnv of ``make(..., learned=...)`` (drivesim.env.environment.make)."""
    if not hasattr(observe, "of_agents"):
        raise ValueError(
            f"drivesim.env: observe={type(observe).__name__} has no of_agents(): "
            "it cannot observe several agents"
        )

    def first(sim, scenario, cfg):  # the pool's initial observations: every learned agent's
        ids = jnp.asarray(learned_ids(learned, sim.agents.x.shape[0]), jnp.int32)
        return observe.of_agents(sim, scenario, cfg, view(sim, ids), jnp.zeros(ids.shape, jnp.float32))

    pool, config = build_pool(spec, config, first)
    ids = learned_ids(learned, int(pool.scenarios.agents.x.shape[-1]))
    return MultiAgentEnv(pool, config, ids, observe, reward)


class FlatAgents(Wrapper):
    """B batched environments of K learned agents as B * K streams of Brax's single-agent
    shapes: ``reset(keys (B * K, 2))`` (every K-th key starts an environment),
    ``step(state, actions (B * K, 2))``; obs (B * K, observation_size), reward, done
    (terminated or truncated) and ``info["truncation"]`` (B * K,); scenario-wide metrics are
    repeated per agent; ``info["steps"]`` counts each stream's episode steps, and
    ``info["episode_metrics"]`` / ``info["episode_done"]`` keep Brax's episode sums."""

    def __init__(self, env: Wrapper, agents: int):
        super().__init__(env)
        self.agents = int(agents)

    def reset(self, rng: Array) -> State:
        if rng.shape[0] % self.agents:
            raise ValueError(
                f"drivesim.env.multi_agent: {rng.shape[0]} streams is not a multiple of {self.agents} agents"
            )
        inner = self.env.reset(rng[:: self.agents])
        steps = jnp.zeros(rng.shape[:1], jnp.float32)
        return self._flat(inner, {}, steps)

    def step(self, state: State, action: Array) -> State:
        inner = state.pipeline_state
        batch = inner.reward.shape[0]
        inner = self.env.step(inner, action.reshape(batch, self.agents, -1))
        steps = jnp.where(state.done > 0, 0.0, state.info["steps"]) + 1.0
        return self._flat(inner, state.info, steps)

    def _flat(self, inner: State, info: dict, steps: Array) -> State:
        batch, k = inner.reward.shape
        streams = lambda v: jnp.broadcast_to(v if v.ndim == 2 else v[:, None], (batch, k)).reshape(-1)  # noqa: E731
        truncation = inner.info["truncation"].reshape(-1)
        done = jnp.maximum(inner.done.reshape(-1), truncation)
        new_info = dict(info)
        new_info.update(truncation=truncation, steps=steps)
        new_info["final_obs"] = inner.info["final_obs"].reshape(batch * k, -1)
        metrics = {name: streams(value) for name, value in inner.metrics.items()}
        new_info["episode_metrics"] = _episode_sums(info, metrics, inner.reward.reshape(-1))
        new_info["episode_done"] = done
        return State(
            pipeline_state=inner,
            obs=inner.obs.reshape(batch * k, -1),
            reward=inner.reward.reshape(-1),
            done=done,
            metrics=metrics,
            info=new_info,
        )


def _episode_sums(info: dict, metrics: dict, reward: Array) -> dict:
    """Each stream's sums over its running episode (Brax's EpisodeWrapper bookkeeping):
    ``sum_reward``, ``length`` and every metric; they restart after an episode_done."""
    if "episode_metrics" not in info:
        zeros = jnp.zeros_like(reward)
        return {"sum_reward": zeros, "length": zeros, **{k: jnp.zeros_like(v) for k, v in metrics.items()}}
    kept = 1.0 - info["episode_done"]
    sums = {k: v * kept for k, v in info["episode_metrics"].items()}
    sums["sum_reward"] = sums["sum_reward"] + reward
    sums["length"] = sums["length"] + 1.0
    for name, value in metrics.items():
        if name in sums:
            sums[name] = sums[name] + value
    return sums


def flat_wrap(
    env: MultiAgentEnv, episode_length: int | None = None, action_repeat: int = 1, randomization_fn=None
):
    """:class:`FlatAgents` over ``wrap(env, episode_length)``: a ``wrap_env_fn`` for Brax's
    trainers (one policy for every learned agent). ``action_repeat`` must be 1 and
    ``randomization_fn`` None."""
    if action_repeat != 1 or randomization_fn is not None:
        raise ValueError("drivesim.env.multi_agent.flat_wrap: action_repeat=1 and no randomization_fn only")
    return FlatAgents(wrap(env, episode_length), env.num_learned)
