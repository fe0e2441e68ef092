"""One scenario over time (``lax.scan``); batches are ``vmap`` of the same function.

``reset`` sorts a scenario's agents along the road axis once; ``advance`` is one step
(controls -> bicycle model -> odd-even re-sort -> metrics). ``rollout`` scans ``advance``
and returns per-scenario metrics only; ``rollout_trajectory`` also returns the states.
The RL environment (drivesim.train) drives the same ``advance`` with an external action.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from drivesim.core import behavior, interactions
from drivesim.core.dynamics import bicycle_step, clip_controls
from drivesim.core.metrics import MetricsState, StepInfo, finalize_metrics, init_metrics, update_metrics
from drivesim.core.observation import ego_observation
from drivesim.core.road import RouteSegments, agent_segments, on_road, point_at, project
from drivesim.core.types import (
    Array,
    IDMParams,
    RolloutMetrics,
    Scenario,
    SimConfig,
    Trajectory,
    pytree_dataclass,
    replace,
)


@pytree_dataclass
class SortedAgents:
    """Per-agent arrays in sorted order; (N,) unless noted, seg fields (N, S).

    cos_h, sin_h cache cos/sin of heading. base_valid: slot holds an agent; valid: the
    agent is present now (replayed agents appear and vanish with their log).
    agent_id: the slot index in the scenario's original order.
    """

    x: Array
    y: Array
    heading: Array
    cos_h: Array
    sin_h: Array
    speed: Array
    accel: Array
    length: Array
    width: Array
    base_valid: Array
    valid: Array
    is_ego: Array
    agent_id: Array
    lane_width: Array
    stop_s: Array
    replay: Array
    idm: IDMParams
    seg: RouteSegments


@pytree_dataclass
class SimState:
    """State of one scenario during a rollout: agents, step t (), ego start arc length ()
    and the running metrics."""

    agents: SortedAgents
    t: Array
    ego_s0: Array
    metrics: MetricsState


def _at_ego(is_ego: Array, values: Array) -> Array:
    return jnp.sum(jnp.where(is_ego, values, jnp.zeros((), values.dtype)))


def reset(scenario: Scenario, config: SimConfig) -> SimState:
    """Initial SimState of one (unbatched) scenario: agents sorted along the road axis."""
    ag = scenario.agents
    n = ag.x.shape[0]
    num_lanes = scenario.road.widths.shape[0]
    onehot = (ag.route[:, None] == jnp.arange(num_lanes)[None, :]).astype(jnp.float32)
    replay = scenario.log.replay if scenario.log is not None else jnp.zeros(n, bool)
    valid = ag.valid
    if scenario.log is not None:
        valid = valid & jnp.where(replay, scenario.log.valid[0], True)
    heading = ag.heading.astype(jnp.float32)
    agents = SortedAgents(
        x=ag.x, y=ag.y, heading=heading, cos_h=jnp.cos(heading), sin_h=jnp.sin(heading),
        speed=ag.speed, accel=ag.accel, length=ag.length, width=ag.width,
        base_valid=ag.valid, valid=valid, is_ego=jnp.arange(n) == scenario.ego_index,
        agent_id=jnp.arange(n, dtype=jnp.int32), lane_width=onehot @ scenario.road.widths,
        stop_s=scenario.stop_s, replay=replay, idm=scenario.idm,
        seg=agent_segments(scenario.road, ag.route),
    )
    key = interactions.sort_key(agents.x, agents.y, agents.valid, scenario.road.sort_axis)
    order = jnp.argsort(key, stable=True)
    agents = jax.tree_util.tree_map(lambda leaf: leaf[order], agents)
    proj = project(agents.x, agents.y, agents.seg)
    return SimState(
        agents=agents,
        t=jnp.zeros((), jnp.int32),
        ego_s0=_at_ego(agents.is_ego, proj.s),
        metrics=init_metrics(),
    )


def _ego_controls(state, scenario, config, policy, proj, gap, lead_v, lane_steer):
    """The ego's (accel, steer) under ``config.policy``; each ()."""
    a = state.agents
    ego_speed = _at_ego(a.is_ego, a.speed)
    if config.policy == "idm":
        ego_gap = _at_ego(a.is_ego, gap)
        ego_lead = _at_ego(a.is_ego, lead_v)
        accel = behavior.follow_acceleration(ego_speed, ego_gap, ego_lead, policy)
        return accel, _at_ego(a.is_ego, lane_steer)
    if config.policy == "constant":
        return jnp.zeros((), jnp.float32), _at_ego(a.is_ego, lane_steer)
    if config.policy == "open_loop":
        index = jnp.minimum(state.t, policy.actions.shape[0] - 1)
        return policy.actions[index, 0], policy.actions[index, 1]
    obs = observation_of(state, proj, config)
    return behavior.action_from_unit(behavior.mlp_forward(policy, obs), config)


def observation_of(state: SimState, proj, config: SimConfig) -> Array:
    """Ego observation of a SimState (see drivesim.core.observation)."""
    a = state.agents
    progress = _at_ego(a.is_ego, proj.s) - state.ego_s0
    return ego_observation(
        a.x, a.y, a.cos_h, a.sin_h, a.speed, a.valid, a.is_ego, proj.d, proj.tx, proj.ty,
        progress, config.obs_neighbours,
    )


def advance(
    state: SimState, scenario: Scenario, config: SimConfig, policy, ego_action=None
) -> tuple[SimState, StepInfo]:
    """One simulation step of one scenario.

    policy: the ego policy parameters for ``config.policy``; ego_action: optional
    (accel, steer) pair of () arrays that overrides the policy (used by the RL env).
    Finished or padding scenarios (t >= episode_length or valid=False) do not change.
    """
    a = state.agents
    t = state.t
    active = scenario.valid & (t < scenario.episode_length)
    road = scenario.road
    with jax.named_scope("leaders"):
        proj = project(a.x, a.y, a.seg)
        gap, lead_v, has_lead = interactions.find_leaders(
            a.x, a.y, a.speed, a.length, a.valid, proj.tx, proj.ty, proj.d, a.lane_width,
            config.window,
        )
        busy = behavior.conflict_busy(
            a.x, a.y, a.cos_h, a.sin_h, a.speed, a.valid & ~jnp.isfinite(a.stop_s),
            road.conflict_xy, road.conflict_radius, config,
        )
        stop_gap = a.stop_s - proj.s - 0.5 * a.length
        use_stop = busy & (stop_gap > -1.0) & (stop_gap < gap)
        gap = jnp.where(use_stop, stop_gap, gap)
        lead_v = jnp.where(use_stop, 0.0, lead_v)
        has_lead = has_lead | use_stop
    with jax.named_scope("controls"):
        accel = behavior.follow_acceleration(a.speed, gap, lead_v, a.idm)
        target_x, target_y = point_at(proj.s + behavior.lookahead_distance(a.speed, config), a.seg)
        steer = behavior.pure_pursuit_steer(a.x, a.y, a.cos_h, a.sin_h, a.length, target_x, target_y, config)
        if ego_action is None:
            ego_accel, ego_steer = _ego_controls(state, scenario, config, policy, proj, gap, lead_v, steer)
        else:
            ego_accel, ego_steer = ego_action
        accel = jnp.where(a.is_ego, ego_accel, accel)
        steer = jnp.where(a.is_ego, ego_steer, steer)
        accel, steer = clip_controls(accel, steer, config)
    with jax.named_scope("dynamics"):
        x, y, heading, speed = bicycle_step(a.x, a.y, a.heading, a.speed, a.length, accel, steer, config)
        valid = a.valid
        log = scenario.log
        if log is not None:
            lt = jnp.minimum(t + 1, log.valid.shape[0] - 1)
            log_x = log.xy[lt, :, 0][a.agent_id]
            log_y = log.xy[lt, :, 1][a.agent_id]
            log_valid = log.valid[lt][a.agent_id]
            rep = a.replay
            x = jnp.where(rep, log_x, x)
            y = jnp.where(rep, log_y, y)
            heading = jnp.where(rep, log.heading[lt][a.agent_id], heading)
            speed = jnp.where(rep, log.speed[lt][a.agent_id], speed)
            valid = jnp.where(rep, a.base_valid & log_valid, valid)
        moving = active & (a.valid | valid)
        new_accel = (speed - a.speed) / config.dt
        keep = lambda new, old: jnp.where(moving, new, old)  # noqa: E731
        agents = replace(
            a, x=keep(x, a.x), y=keep(y, a.y), heading=keep(heading, a.heading),
            cos_h=keep(jnp.cos(heading), a.cos_h), sin_h=keep(jnp.sin(heading), a.sin_h),
            speed=keep(speed, a.speed), accel=keep(new_accel, a.accel),
            valid=jnp.where(active, valid, a.valid),
        )
    with jax.named_scope("resort"):
        key = interactions.sort_key(agents.x, agents.y, agents.valid, road.sort_axis)
        agents = interactions.odd_even_pass(agents, key, t % 2)
    with jax.named_scope("metrics"):
        info = _step_info(state, agents, scenario, config, active, (gap, lead_v, has_lead))
        metrics = update_metrics(state.metrics, info, t)
    return SimState(agents=agents, t=t + 1, ego_s0=state.ego_s0, metrics=metrics), info


def _step_info(state, agents, scenario, config, active, leader) -> StepInfo:
    """Observations of the new state (after a step) for the metrics."""
    old = state.agents
    gap, lead_v, has_lead = leader
    collided, pairs = interactions.window_collisions(
        agents.x, agents.y, agents.cos_h, agents.sin_h, agents.length, agents.width,
        agents.valid, config.window,
    )
    ego_x = _at_ego(agents.is_ego, agents.x)
    ego_y = _at_ego(agents.is_ego, agents.y)
    proj = project(agents.x, agents.y, agents.seg)
    closing = _at_ego(old.is_ego, old.speed - lead_v)
    ego_gap = jnp.maximum(_at_ego(old.is_ego, jnp.where(has_lead, gap, 0.0)), 0.0)
    ego_has_lead = jnp.any(old.is_ego & has_lead)
    ttc = jnp.where(ego_has_lead & (closing > 0), ego_gap / jnp.where(closing > 0, closing, 1.0), jnp.inf)
    jerk = jnp.abs(_at_ego(agents.is_ego, agents.accel) - _at_ego(old.is_ego, old.accel)) / config.dt
    finite = jnp.isfinite(agents.x) & jnp.isfinite(agents.y) & jnp.isfinite(agents.heading)
    finite = finite & jnp.isfinite(agents.speed)
    div_sum = jnp.zeros((), jnp.float32)
    div_count = jnp.zeros((), jnp.float32)
    log = scenario.log
    if log is not None:
        lt = jnp.minimum(state.t + 1, log.valid.shape[0] - 1)
        logged = log.valid[lt][agents.agent_id] & agents.base_valid & ~agents.replay
        logged = logged & (state.t + 1 < log.valid.shape[0])
        dx = agents.x - log.xy[lt, :, 0][agents.agent_id]
        dy = agents.y - log.xy[lt, :, 1][agents.agent_id]
        dist = jnp.sqrt(dx * dx + dy * dy)
        div_sum = jnp.sum(jnp.where(logged, dist, 0.0))
        div_count = jnp.sum(logged.astype(jnp.float32))
    key = interactions.sort_key(agents.x, agents.y, agents.valid, scenario.road.sort_axis)
    return StepInfo(
        active=active,
        ego_collided=jnp.any(collided & agents.is_ego),
        offroad=~on_road(ego_x, ego_y, scenario.road),
        collision_pairs=pairs,
        ego_progress=_at_ego(agents.is_ego, proj.s) - state.ego_s0,
        ego_ttc=ttc,
        ego_jerk=jerk,
        has_nan=jnp.any(agents.valid & ~finite),
        div_sum=div_sum,
        div_count=div_count,
        overflow=interactions.window_overflow(key, agents.length, agents.width, agents.valid, config.window),
    )


def rollout(scenario: Scenario, policy, config: SimConfig) -> RolloutMetrics:
    """Simulate one scenario for config.num_steps steps; per-scenario metrics only."""

    def body(state, _):
        state, _info = advance(state, scenario, config, policy)
        return state, None

    state, _ = jax.lax.scan(body, reset(scenario, config), None, length=config.num_steps)
    return finalize_metrics(state.metrics, scenario.log is not None)


def rollout_trajectory(scenario: Scenario, policy, config: SimConfig) -> tuple[RolloutMetrics, Trajectory]:
    """Like :func:`rollout`, also returning the trajectory (S, N) in original agent order."""

    def body(state, _):
        state, _info = advance(state, scenario, config, policy)
        a = state.agents
        return state, (a.x, a.y, a.heading, a.speed, a.valid, a.agent_id)

    state, (x, y, heading, speed, valid, ids) = jax.lax.scan(
        body, reset(scenario, config), None, length=config.num_steps
    )
    back = jnp.argsort(ids, axis=-1)
    unsort = partial(jnp.take_along_axis, indices=back, axis=-1)
    trajectory = Trajectory(x=unsort(x), y=unsort(y), heading=unsort(heading), speed=unsort(speed), valid=unsort(valid))
    return finalize_metrics(state.metrics, scenario.log is not None), trajectory


def rollout_batch(scenarios: Scenario, policy, config: SimConfig) -> RolloutMetrics:
    """vmap of :func:`rollout` over the leading scenario axis; metrics (B,)."""
    return jax.vmap(rollout, in_axes=(0, None, None))(scenarios, policy, config)


simulate = jax.jit(rollout_batch, static_argnames="config")
simulate_trajectory = jax.jit(
    jax.vmap(rollout_trajectory, in_axes=(0, None, None)), static_argnames="config"
)
