"""One scenario over time (``lax.scan``); batches are ``vmap`` of the same function.

``reset`` sorts a scenario's agents by (route group, position along the road axis) once
(core.exact.route_groups: each lane of a straight multi-lane road is its own group);
``advance`` is one step (controls -> bicycle model -> odd-even re-sort -> metrics).
``rollout`` scans ``advance`` and returns per-scenario metrics only;
core.trajectory's ``rollout_trajectory`` also returns the states.
The RL environment (drivesim.env) drives the same ``advance`` with external actions
(core.actions).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from drivesim.core import (
    behavior,
    certificate,
    edge_cache,
    edges,
    exact,
    interactions,
    junction,
    mobil,
    neighbours,
    signals,
    switches,
)
from drivesim.core.actions import AgentActions
from drivesim.core.agents import PROP_ROWS, SortedAgents, dyn_fields
from drivesim.core.blocking import cache_blocks, map_blocks
from drivesim.core.dynamics import bicycle_step
from drivesim.core.fallback import exact_config, exact_fallback
from drivesim.core.lifecycle import end_of_route, entry_position, replay_log
from drivesim.core.materialize import stores_by_branch
from drivesim.core.matmul import matmul
from drivesim.core.metrics import (
    MetricsState,
    StepInfo,
    finalize_metrics,
    horizon_steps,
    init_metrics,
    update_metrics,
)
from drivesim.core.observation import at_ego, ego_observation
from drivesim.core.policies import EgoInputs, corrected_accel, corrected_tan, policy_of
from drivesim.core.road import Drivable, Projection, agent_segments, drivable, point_at, project, route_rows
from drivesim.core.road_users import kind_limits, kind_metrics
from drivesim.core.search_choice import map_segments
from drivesim.core.search_choice import of_scenarios as platform_searches
from drivesim.core.search_plan import traced_under_config
from drivesim.core.step_metrics import EgoBefore, step_info
from drivesim.core.types import (
    Array,
    IDMParams,
    RolloutMetrics,
    Scenario,
    SimConfig,
    StepControls,
    pytree_dataclass,
    replace,
)


@pytree_dataclass
class SimState:
    """State of one scenario during a rollout: agents; their projection onto their routes
    (fields (N,)) and each agent's gap to its leader (+inf: none) and the leader's speed,
    (N,) each, all computed at the end of the previous step (the step's metrics need them
    there anyway, and the search then has one consumer, so XLA evaluates it once instead of
    once per row it feeds); step t (); ego start arc length (); how far its boxes reach
    (core.certificate.Reach: the window's and the junction zone's bounds); the smallest
    separation between routes of different groups () (core.certificate); the crossings of
    its straight routes (core.junction); its drivable area laid out for the road-edge
    tests (core.road.drivable); the running metrics."""

    agents: SortedAgents
    proj: Projection
    lead_gap: Array
    lead_speed: Array
    t: Array
    ego_s0: Array
    reach: certificate.Reach
    cross_sep: Array
    crossings: junction.Crossings
    drivable: Drivable
    metrics: MetricsState


@traced_under_config
def reset(scenario: Scenario, config: SimConfig) -> SimState:
    """Initial SimState of one (unbatched) scenario: agents sorted along the road axis, the
    first leaders found over all pairs (exact whichever search the steps run, so the start
    has nothing to certify)."""
    ag = scenario.agents
    n = ag.x.shape[0]
    num_lanes = scenario.road.widths.shape[0]
    onehot = (ag.route[:, None] == jnp.arange(num_lanes)[None, :]).astype(jnp.float32)
    replay = scenario.log.replay if scenario.log is not None else jnp.zeros(n, bool)
    valid = ag.valid
    if scenario.log is not None:
        valid = valid & jnp.where(replay, scenario.log.valid[0], True)
    heading = ag.heading.astype(jnp.float32)
    f32 = lambda v: jnp.asarray(v).astype(jnp.float32)  # noqa: E731
    x, y = entry_position(scenario, replay, valid)
    dyn = dyn_fields(x, y, heading, ag.speed, ag.accel, valid)
    seg = agent_segments(scenario.road, ag.route)
    idm = scenario.idm
    lanes = config.lane_changes
    layout = neighbours.route_layout(scenario, config)
    groups, cross_sep, crossings = layout.groups, layout.cross_sep, layout.crossings
    rows = [
        ag.length,
        ag.width,
        matmul(onehot, scenario.road.widths),
        scenario.stop_s,
        idm.v0,
        idm.T,
        idm.s0,
        idm.a,
        idm.b,
        idm.delta,
        ag.valid,
        jnp.arange(n) == scenario.ego_index,
        jnp.arange(n),
        replay,
        ag.route,
        jnp.where(ag.valid, matmul(onehot, groups), num_lanes),
        ag.kind,
        layout.on_bent,
    ]
    props = jnp.concatenate([jnp.stack([f32(r) for r in rows]), route_rows(seg)], axis=0)
    key = interactions.sort_key(x, y, ag.valid, scenario.road.sort_axis)
    order = jnp.lexsort((key, props[PROP_ROWS.index("group")]))
    outcome = jnp.zeros(n, jnp.int32)
    signal = None if scenario.signal is None else signals.pack(scenario.signal)[:, order]
    lane_rows = None
    if lanes:
        enabled = ag.valid & (jnp.arange(n) != scenario.ego_index) & ~replay
        lane_rows = mobil.initial_rows(lanes, enabled, scenario.mobil)
        lane_rows = lane_rows[:, order]
    area = drivable(scenario.road)
    table_fits: Array = jnp.ones((), bool)
    if not edges.all_lanes(config):
        area, table_fits = edge_cache.prepare(area, map_segments(config))
    candidates = edge_cache.start(x, y, area)
    agents = SortedAgents(
        **{k: v[order] for k, v in dyn.items()},
        outcome=outcome,
        props=props[:, order],
        signal=signal,
        lane=lane_rows,
        edges=None if candidates is None else candidates[:, order],
    )
    proj = project(agents.x, agents.y, agents.seg)
    reach = certificate.reach_of(ag.length, ag.width, ag.valid)
    # the first leaders over all pairs: exact by construction, nothing to certify, and a
    # smaller program than the steps' window and direct searches a second time
    _lead, lead_gap, lead_speed = exact.all_pairs_leaders(agents, proj)
    leaders = {"lead_gap": lead_gap, "lead_speed": lead_speed}
    return SimState(
        agents=agents,
        proj=proj,
        **leaders,
        t=jnp.zeros((), jnp.int32),
        ego_s0=at_ego(agents.is_ego, proj.s),
        reach=reach,
        cross_sep=cross_sep,
        crossings=crossings,
        drivable=area,
        metrics=replace(init_metrics(scenario.log is not None), overflow=~table_fits),
    )


def _certified(a, proj, lead_gap, scenario: Scenario, config: SimConfig, *, reach, cross_sep, zone) -> Array:
    """() bool: the window search, with the junction zone, was exact this step (always True
    on the all-pairs path). reach, cross_sep: SimState's; zone: the step's ZoneSearch."""
    if config.search.neighbours == "all_pairs":
        return jnp.ones((), bool)
    lead = None if neighbours.leaders_from_all_pairs(config) else lead_gap  # None: nothing to prove
    axis = scenario.road.sort_axis
    proof = certificate.window_certified(a, proj, lead, reach, cross_sep, axis, config.search.window)
    return proof & zone.fits


def _ego_controls(state, config, policy, ego_pre: EgoBefore):
    """The ego's (accel, tan(steer)) under ``config``'s ego policy; each ().
    ``ego_pre``: the ego's values before the step."""
    ego = EgoInputs(
        speed=ego_pre.speed,
        gap=ego_pre.gap,
        lead_speed=ego_pre.lead_speed,
        lane_tan=ego_pre.lane_tan,
        t=state.t,
        observe=lambda: observation_of(state, config),
    )
    return policy_of(config).act(policy, ego, config)


def _ego_controls_of(state, config, policy, ego_pre: EgoBefore, action) -> tuple[Array, Array]:
    """The ego's (accel, tan(steer)), each (): its policy's (``action`` None), corrections
    to its car follower and lane keeper (``action`` an (accel, steer) pair), or, with
    :class:`AgentActions`, the corrections where the ego is learned and its policy elsewhere."""
    learned = action if isinstance(action, AgentActions) else None
    if learned is not None:
        action = learned.ego_pair(state.agents.is_ego)
    if action is None:
        return _ego_controls(state, config, policy, ego_pre)
    accel = corrected_accel(ego_pre.speed, ego_pre.gap, ego_pre.lead_speed, action[0])
    tan = corrected_tan(ego_pre.lane_tan, action[1], config)
    if learned is None or learned.has_ego:
        return accel, tan
    on = learned.ego_learned(state.agents.is_ego)
    policy_accel, policy_tan = _ego_controls(state, config, policy, ego_pre)
    return jnp.where(on, accel, policy_accel), jnp.where(on, tan, policy_tan)


def observation_of(state: SimState, config: SimConfig) -> Array:
    """Ego observation of a SimState (see drivesim.core.observation)."""
    a, proj = state.agents, state.proj
    progress = at_ego(a.is_ego, proj.s) - state.ego_s0
    leader = (state.lead_gap, state.lead_speed)
    return ego_observation(a, proj, progress, config.obs_neighbours, config.occlusion, leader)


def _leader_state(a: SortedAgents, proj, scenario: Scenario, config: SimConfig, zone) -> dict:
    """Gap to and speed of each agent's vehicle leader in the current state (N,) each;
    zone: the step's junction ZoneSearch (None on the all-pairs path)."""
    _lead, gap, speed = neighbours.leader_search(a, proj, scenario.road.sort_axis, config, zone)
    if config.search.neighbours != "all_pairs":
        # the state and the window certificate both read it. On XLA:CPU the barrier does not
        # keep the search from being fused into each reader (core.materialize does; here the
        # leader offsets are stored inside the search, and storing these results as well
        # measured no faster)
        gap, speed = jax.lax.optimization_barrier((gap, speed))
    return {"lead_gap": gap, "lead_speed": speed}


def _leaders(state: SimState, scenario: Scenario, config: SimConfig, policy):
    """Gap to, and speed of, each agent's leader (vehicle, yield line or signal stop line);
    (N,) each. The IDM ego decides on amber with its policy's comfortable deceleration."""
    a, proj = state.agents, state.proj
    gap, lead_v = state.lead_gap, state.lead_speed
    has_lead = jnp.isfinite(gap)
    busy = behavior.conflict_busy(
        a.x,
        a.y,
        a.cos_h,
        a.sin_h,
        a.speed,
        a.valid & ~jnp.isfinite(a.stop_s),
        scenario.road.conflict_xy,
        scenario.road.conflict_radius,
        config,
    )
    stop_gap = a.stop_s - proj.s - 0.5 * a.length
    use_stop = busy & (stop_gap > -1.0) & (stop_gap < gap)
    leader = (jnp.where(use_stop, stop_gap, gap), jnp.where(use_stop, 0.0, lead_v), has_lead | use_stop)
    if a.signal is None:
        return leader
    b = jnp.where(a.is_ego, policy.b, a.b) if isinstance(policy, IDMParams) else a.b
    time = signals.step_time(state.t, config.dt)
    brakes = (b, -config.min_accel)
    return signals.signal_leader(a.signal, time, proj.s, a.speed, a.length, brakes, leader)


@traced_under_config
def advance(
    state: SimState, scenario: Scenario, config: SimConfig, policy, controls: StepControls | None = None
) -> tuple[SimState, StepInfo]:
    """One simulation step of one scenario.

    policy: the ego policy parameters for ``config.policy``; controls: the step's optional
    overrides and switches (:class:`~drivesim.core.types.StepControls`: an ego action, the
    shared step counter, the fixed searches, every lane's edges; None: none of them).
    Finished or padding scenarios (t >= episode_length or valid=False) do not change.
    """
    controls = controls or StepControls()
    ego_action, step_index = controls.ego_action, controls.step_index
    zone_on, full_edges = controls.zone_on, controls.full_edges
    a = state.agents
    t = state.t
    active = scenario.valid & (t < scenario.episode_length)
    with jax.named_scope("leaders"):
        proj = state.proj
        gap, lead_v, has_lead = _leaders(state, scenario, config, policy)
    with jax.named_scope("controls"):
        accel = behavior.follow_acceleration(a.speed, gap, lead_v, a.idm)
        look = behavior.lookahead_distance(a.speed, config)
        target_x, target_y = point_at(proj.s + look, a.seg)
        if config.lane_changes:  # the lane-change path: offset from the (new) lane's centre
            target_x, target_y = mobil.on_path(a, proj, look, t, (target_x, target_y), config.dt)
        tan_max = math.tan(config.max_steer)
        lane_tan = jnp.clip(
            behavior.pure_pursuit_tan(a.x, a.y, a.cos_h, a.sin_h, a.length, target_x, target_y, config),
            -tan_max,
            tan_max,
        )
        ego_pre = EgoBefore.of(
            a.is_ego,
            speed=a.speed,
            gap=gap,
            lead_speed=lead_v,
            lane_tan=lane_tan,
            has_lead=has_lead,
            accel=a.accel,
            vehicle_gap=state.lead_gap,
            vehicle_lead_speed=state.lead_speed,
        )
        learned = ego_action if isinstance(ego_action, AgentActions) else None
        ego_accel, ego_tan = _ego_controls_of(state, config, policy, ego_pre, ego_action)
        tan_steer = lane_tan
        if learned is not None:  # the other learned agents: corrections to their own IDM and lane keeper
            others = learned.learned & ~a.is_ego
            accel = jnp.where(others, accel + learned.accel, accel)
            tan_steer = jnp.where(others, corrected_tan(lane_tan, learned.steer, config), lane_tan)
        accel = jnp.where(a.is_ego, ego_accel, accel)
        lo_accel, hi_accel, top_speed = kind_limits(a.kind, config)
        accel = jnp.clip(accel, lo_accel, hi_accel)
        tan_steer = jnp.where(a.is_ego, ego_tan, tan_steer)
    with jax.named_scope("dynamics"):
        x, y, heading, speed = bicycle_step(
            a.x, a.y, a.heading, a.cos_h, a.sin_h, a.speed, a.length, accel, tan_steer, top_speed, config
        )
        valid = a.valid
        if scenario.log is not None:
            x, y, heading, speed, valid = replay_log(a, t, scenario.log, (x, y, heading, speed, valid))
        moving = active & (a.valid | valid)
        new_accel = (speed - a.speed) / config.dt
        new = dyn_fields(x, y, heading, speed, new_accel, valid)
        agents = SortedAgents(
            **{k: jnp.where(moving, v, getattr(a, k)) for k, v in new.items()},
            outcome=a.outcome,
            props=a.props,
            signal=a.signal,
            lane=a.lane,
            edges=a.edges,
        )
    with jax.named_scope("resort"):
        agents = interactions.resort(
            agents, scenario.road.sort_axis, config.search.resort_every, t, step_index
        )
    if config.lane_changes:
        with jax.named_scope("lane_changes"):
            agents = mobil.decide_every(agents, scenario.road, config, t, step_index, active)
    with jax.named_scope("metrics"):
        proj = project(agents.x, agents.y, agents.seg)
        if scenario.log is not None:
            agents = end_of_route(agents, proj)
    with jax.named_scope("leaders"):
        zone = neighbours.zone_search(agents, proj, state.crossings, state.reach, config, zone_on)
        leaders = _leader_state(agents, proj, scenario, config, neighbours.leader_zone(zone, zone_on))
        bounds = dict(reach=state.reach, cross_sep=state.cross_sep, zone=zone)
        certified = _certified(agents, proj, leaders["lead_gap"], scenario, config, **bounds)
    with jax.named_scope("metrics"):
        observed = step_info(state, agents, proj, scenario, config, active, ego_pre, zone, full_edges)
        info, outcome, candidates = observed
        info = replace(info, overflow=info.overflow | ~certified)
        metrics = update_metrics(state.metrics, info, t, horizon_steps(config.dt))
        agents = replace(agents, outcome=agents.outcome | jnp.where(active, outcome, 0), edges=candidates)
    new_state = SimState(
        agents=agents,
        proj=proj,
        **leaders,
        t=t + 1,
        ego_s0=state.ego_s0,
        reach=state.reach,
        cross_sep=state.cross_sep,
        crossings=state.crossings,
        drivable=state.drivable,
        metrics=metrics,
    )
    return new_state, info


@traced_under_config
def rollout(scenario: Scenario, policy, config: SimConfig, zone_on=None, full_edges=None) -> RolloutMetrics:
    """Simulate one scenario for config.num_steps steps; per-scenario metrics only.
    zone_on, full_edges: see :func:`advance`; a scenario that needs a search fixed switches
    leave out is flagged for the exact fallback (core.switches.unsearched)."""

    def body(state, step_index):
        with stores_by_branch(step_index):
            controls = StepControls(step_index=step_index, zone_on=zone_on, full_edges=full_edges)
            state, _info = advance(state, scenario, config, policy, controls)
        return state, None

    steps = jnp.arange(config.num_steps, dtype=jnp.int32)
    state, _ = jax.lax.scan(body, start_state(scenario, config, zone_on), steps)
    return finalize(state, scenario)


@traced_under_config
def rollouts(scenarios: Scenario, policy, config: SimConfig, zone_on=None) -> RolloutMetrics:
    """:func:`rollout` of each scenario of ``scenarios`` (leading axis b), the same values,
    written as one scan over the batch's state whose step is a vmap: JAX traces the step once
    under vmap, where a vmap of the scan traces it and then batches the traced body again,
    twice when some carry becomes batched after the first step."""

    def body(state, step_index):
        def one(st, scenario):
            with stores_by_branch(step_index):
                controls = StepControls(step_index=step_index, zone_on=zone_on)
                return advance(st, scenario, config, policy, controls)[0]

        return jax.vmap(one)(state, scenarios), None

    start = jax.vmap(lambda one: start_state(one, config, zone_on))(scenarios)
    steps = jnp.arange(config.num_steps, dtype=jnp.int32)
    state, _ = jax.lax.scan(body, start, steps)
    return jax.vmap(finalize)(state, scenarios)


def start_state(scenario: Scenario, config: SimConfig, zone_on=None) -> SimState:
    """:func:`reset`, with the scenario flagged for the exact fallback where it needs a
    search the fixed switches ``zone_on`` leave out (core.switches.unsearched)."""
    start = reset(scenario, config)
    missing = switches.unsearched(start.crossings, start.agents.bent, zone_on)
    if missing is None:
        return start
    return replace(start, metrics=replace(start.metrics, overflow=start.metrics.overflow | missing))


def finalize(state: SimState, scenario: Scenario) -> RolloutMetrics:
    """RolloutMetrics of a finished rollout, the per-type collision counts included."""
    a = state.agents
    by_kind = kind_metrics(state.metrics.collided_with, scenario.agents.kind, a.outcome & 1 > 0, a.kind)
    return finalize_metrics(state.metrics, scenario.log is not None, by_kind)


def fast_pass(
    scenarios: Scenario, policy, config: SimConfig, devices: int = 1, searches=None
) -> RolloutMetrics:
    """The fast pass of :func:`rollout_batch`: vmap of :func:`rollout` over the scenario axis
    (B >= 2), in cache blocks, with the window search; metrics (B,), ``window_overflow`` set
    where the pass was not proven exact. ``config``: resolved for the platform
    (core.search_choice); ``searches``: the switches fixed as Python bools, None: each step
    decides under a conditional."""
    batch = scenarios.valid.shape[0]
    blocks = cache_blocks(batch, scenarios.num_agents, devices, config.search.block_agents)
    fixed = searches is not None and config.search.neighbours != "all_pairs"
    zone_on = searches if fixed else neighbours.searches_on(scenarios, config)
    return map_blocks(lambda block: rollouts(block, policy, config, zone_on), scenarios, blocks)


def exact_rollouts(scenarios: Scenario, policy, config: SimConfig, full_edges) -> RolloutMetrics:
    """The exact fallback's run: vmap of :func:`rollout` over scenarios (c,) with ``config``
    from core.fallback.exact_config; ``full_edges`` () bool: every lane's edges (core.edges)."""
    return jax.vmap(lambda one: rollout(one, policy, config, full_edges=full_edges))(scenarios)


def rollout_batch(
    scenarios: Scenario, policy, config: SimConfig, devices: int = 1, searches=None, exact: bool = True
) -> RolloutMetrics:
    """vmap of :func:`rollout` over the leading scenario axis; metrics (B,). ``devices``: how
    many devices the batch is sharded over (sizes the cache blocks, see core.blocking);
    ``searches``: the search switches fixed as Python bools (core.switches), None: each step
    decides under a conditional; ``exact`` False: the fast pass alone, its flagged rows left
    to the caller (core.exact_rows.complete, the fallback compiled apart).

    The scenarios whose window search or road-edge search (core.edges) was not proven exact
    (``window_overflow``) are simulated again with the all-pairs search, every lane's edges
    where needed, each device's rows by that device (core.fallback.exact_fallback). A batch
    of one is run as a batch of two (the scenario and a copy), so its result is
    bit-identical to the same scenario in a larger batch (XLA compiles a vmap of size 1
    differently). The configuration's "auto" searches are the platform's for the batch's
    shapes and fixed ``searches`` (core.search_choice)."""
    config = platform_searches(config, scenarios, searches)
    batch = scenarios.valid.shape[0]
    if batch == 1:
        twice = jax.tree_util.tree_map(lambda leaf: jnp.concatenate([leaf, leaf]), scenarios)
        out = rollout_batch(twice, policy, config, devices, searches, exact)
        return jax.tree_util.tree_map(lambda leaf: leaf[:1], out)
    fast = fast_pass(scenarios, policy, config, devices, searches)
    proving = exact_config(config)
    if proving is None or not exact:
        return fast
    exact_run = lambda sub, full: exact_rollouts(sub, policy, proving, full)  # noqa: E731
    return exact_fallback(fast, scenarios, exact_run, config, devices)


# the fast pass's program, the batch's switches fixed; the exact fallback compiled apart
simulate = switches.FixedSimulate(rollout_batch, exact_rollouts)
