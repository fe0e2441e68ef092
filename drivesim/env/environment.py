"""One driving environment as pure functions (Brax's ``Env`` interface, gymnax style):
``reset(key) -> State`` and ``step(state, action) -> State``, batched with ``jax.vmap``.

The learned agent is the ego (``Scenario.ego_index``, the slot in the scenario's original
agent order); every other agent is driven by the engine (IDM, lane keeping, or its log
where the scenario replays one). An action is (2,) in [-1, 1], clipped:
``[0]`` a correction to the ego's car-follower acceleration (positive: times
``SimConfig.max_accel``, negative: times ``min_accel``), ``[1]`` a correction to its lane
keeper's steering angle (times ``SimConfig.max_steer``); zeros drive as the IDM ego does.
An action with a NaN or infinite entry drives as zeros and sets ``metrics["bad_action"]``.

``done`` is termination only (a collision or leaving the road); reaching the scenario's
last step sets ``info["truncation"]`` (Brax's name). A raw environment does not reset
itself: :func:`drivesim.env.wrappers.wrap` adds the time limit, auto-reset (a scenario
drawn from the pool with the state's key) and the batch axis, and Brax's own
``envs.training.wrap`` works too (each environment then restarts on its first scenario).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from drivesim.core import behavior
from drivesim.core.observation import at_ego
from drivesim.core.rollout import advance
from drivesim.core.types import Array, SimConfig, StepControls
from drivesim.env.observations import Neighbours
from drivesim.env.pool import PoolSpec, ScenarioPool, build_pool, pick
from drivesim.env.reward import Reward, RewardConfig, StepRecord
from drivesim.env.spaces import Box
from drivesim.env.state import Episode, State

ACTION_SIZE = 2


class DrivingEnv:
    """A driving environment over a pool of scenarios (see the module docstring).

    pool: ScenarioPool on the devices, with its fixed search switches (``pool.searches``,
    core.switches; None: every search every step); config: the engine's SimConfig (dt,
    steps, limits), resolved for the pool (drivesim.env.pool.build_pool); observe: an observation function
    (drivesim.env.observations); reward: a function of a StepRecord (drivesim.env.reward;
    default RewardConfig()); clip_actions: clip actions to [-1, 1] (default); False passes
    larger corrections on to the engine, which still clips the acceleration to its limits
    and the steering to ``max_steer`` (the built-in trainer's Gaussian exploration).
    """

    def __init__(
        self,
        pool: ScenarioPool,
        config: SimConfig,
        observe=None,
        reward: Reward | None = None,
        *,
        clip_actions: bool = True,
    ):
        self.clip_actions = clip_actions
        self.pool = pool
        self.config = config
        self.observe = observe or Neighbours()
        self.reward_fn = reward or RewardConfig()

    @property
    def searches(self):
        """The pool's fixed search switches (core.switches), passed to every step."""
        return self.pool.searches

    @property
    def observation_size(self) -> int:
        return self.observe.size(self.config)

    @property
    def action_size(self) -> int:
        return ACTION_SIZE

    @property
    def observation_space(self) -> Box:
        return Box(low=-float("inf"), high=float("inf"), shape=(self.observation_size,))

    @property
    def action_space(self) -> Box:
        return Box(low=-1.0, high=1.0, shape=(ACTION_SIZE,))

    @property
    def episode_length(self) -> int:
        """Steps of the longest episode (``SimConfig.num_steps``); a scenario may end sooner."""
        return self.config.num_steps

    @property
    def pool_size(self) -> int:
        return int(self.pool.obs.shape[0])

    @property
    def backend(self) -> str:
        return "drivesim"

    @property
    def unwrapped(self) -> DrivingEnv:
        return self

    def scenario(self, index: Array):
        """The Scenario of pool entry ``index`` (an int32 array of any shape)."""
        return jax.tree_util.tree_map(lambda leaf: leaf[index], self.pool.scenarios)

    def reset(self, rng: Array) -> State:
        """A fresh episode on a pool scenario drawn uniformly with ``rng`` (a PRNG key)."""
        return self.reset_at(jax.random.randint(rng, (), 0, self.pool_size))

    def reset_at(self, index: Array) -> State:
        """A fresh episode on pool entry ``index`` (() int32; evaluation on fixed scenarios)."""
        index = jnp.asarray(index, jnp.int32)
        sim, scenario, obs = pick(self.pool, index)
        zero = jnp.zeros((), jnp.float32)
        episode = Episode(sim=sim, index=index, progress=zero)
        return fresh_state(episode, obs, zero, scenario.scenario_id)

    def controls(self, action: Array) -> tuple[Array, Array, Array]:
        """Actions (..., 2) in the unit convention -> (finite (...) bool, accel (...) [m/s^2],
        steer (...) [rad]) corrections: clipped to [-1, 1] (``clip_actions``), a row with a
        NaN or infinite entry driven as zeros (and flagged by ``finite``)."""
        finite = jnp.all(jnp.isfinite(action), axis=-1)
        bounded = jnp.clip(action, -1.0, 1.0) if self.clip_actions else action
        accel, steer = behavior.action_from_unit(jnp.where(finite[..., None], bounded, 0.0), self.config)
        return finite, accel, steer

    def step(self, state: State, action: Array, clock: Array | None = None) -> State:
        """Advance one step with ``action`` (2,); see the module docstring for its meaning.

        clock: an unbatched () int32 step counter shared by a whole batch (the wrappers of
        drivesim.env.wrappers pass one): the engine's re-sort of the agents then runs every
        ``SearchPlan.resort_every`` steps under a real conditional, as in a rollout; without
        it one pass runs every step (a per-environment counter under ``vmap`` would run both
        branches). The order only changes which neighbours the observation lists first and
        the window-overflow flag, never the physics."""
        episode = state.pipeline_state
        config = self.config
        scenario = self.scenario(episode.index)
        finite, accel, steer = self.controls(action)
        controls = (accel, steer)
        step_controls = StepControls(ego_action=controls, step_index=clock, zone_on=self.searches)
        sim, info = advance(episode.sim, scenario, config, None, step_controls)
        offset = at_ego(sim.agents.is_ego, sim.proj.d)
        gain = info.ego_progress - episode.progress
        record = StepRecord(info=info, progress_gain=gain, lane_offset=offset, dt=config.dt)
        reward = jnp.asarray(self.reward_fn(record), jnp.float32)
        terminated = (info.ego_collided | info.offroad).astype(jnp.float32)
        ended = sim.t >= jnp.minimum(scenario.episode_length, config.num_steps)
        truncation = (ended & (terminated == 0)).astype(jnp.float32)
        as_float = lambda v: v.astype(jnp.float32)  # noqa: E731
        metrics = dict(state.metrics)  # keys a wrapper added stay (Brax's envs update in place)
        metrics.update(
            collided=as_float(info.ego_collided),
            offroad=as_float(info.offroad),
            progress=as_float(gain),
            overflow=as_float(info.overflow),
            bad_action=as_float(~finite),
        )
        new_info = dict(state.info)
        new_info.update(terminated=terminated, truncation=truncation, step=state.info["step"] + 1)
        return state.replace(
            pipeline_state=Episode(sim=sim, index=episode.index, progress=info.ego_progress),
            obs=self.observe(sim, scenario, config),
            reward=reward,
            done=terminated,
            metrics=metrics,
            info=new_info,
        )


def fresh_state(episode, obs: Array, per_agent: Array, scenario_id: Array) -> State:
    """The State of a reset: reward, done, the agents' metrics and ``info["terminated"]`` /
    ``info["truncation"]`` as zeros shaped like ``per_agent`` (() or (K,)), the scenario's
    metrics (overflow, bad_action) as () zeros, ``info["step"]`` 0."""
    zero = jnp.zeros((), jnp.float32)
    metrics: dict[str, Array] = {
        "collided": per_agent,
        "offroad": per_agent,
        "progress": per_agent,
        "overflow": zero,
        "bad_action": zero,
    }
    info = {
        "terminated": per_agent,
        "truncation": per_agent,
        "scenario_id": scenario_id,
        "step": jnp.zeros((), jnp.int32),
    }
    return State(
        pipeline_state=episode, obs=obs, reward=per_agent, done=per_agent, metrics=metrics, info=info
    )


def make(
    source: str | Sequence[str] = "synthetic:highway",
    *,
    agents: int = 16,
    episode_steps: int = 80,
    pool_size: int = 1024,
    seed: int = 0,
    first_id: int = 0,
    config: SimConfig | None = None,
    observe=None,
    reward: Reward | None = None,
    learned: str | Sequence[int] = "ego",
) -> DrivingEnv:
    """A :class:`DrivingEnv` over the scenarios of ``source`` (any campaign ``--source`` spec,
    or several): synthetic families get ``pool_size`` scenarios with ``agents`` agents and ids
    from ``first_id`` (hold out ids outside the range to evaluate); recorded kinds give their
    scenarios (at most ``pool_size``). ``config``: the engine's SimConfig (default: dt 0.1 s,
    ``episode_steps`` steps, 6 neighbours observed); ``observe``, ``reward``: see DrivingEnv.
    ``learned``: "ego" (this environment), or "all" / agent slots (original order) for a
    multi-agent environment (drivesim.env.multi_agent.MultiAgentEnv)."""
    specs = (source,) if isinstance(source, str) else tuple(source)
    if config is None:
        config = SimConfig(dt=0.1, num_steps=episode_steps, obs_neighbours=6)
    observe = observe or Neighbours()
    spec = PoolSpec(specs=specs, size=pool_size, agents=agents, seed=seed, first_id=first_id)
    if not (isinstance(learned, str) and learned == "ego"):
        from drivesim.env.multi_agent import make_agents

        return make_agents(spec, config, learned, observe, reward)
    pool, config = build_pool(spec, config, observe)
    return DrivingEnv(pool, config, observe, reward)
