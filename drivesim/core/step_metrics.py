"""What one step observed, for the metrics: the ego's values and the StepInfo."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from drivesim.core import edges, signals
from drivesim.core.collisions import collisions
from drivesim.core.lifecycle import log_divergence
from drivesim.core.metrics import StepInfo
from drivesim.core.observation import ego_values
from drivesim.core.types import Array


class EgoBefore(NamedTuple):
    """The ego's values before a step, each () float32 (a pytree: a NamedTuple).

    speed (m/s); gap (m) to its leader (vehicle or yield line, +inf: none); lead_speed (m/s);
    lane_tan: the lane keeper's tan(steer); has_lead: 1.0 when it has a leader, else 0.0;
    accel (m/s^2) of the previous step; vehicle_gap (m) and vehicle_lead_speed (m/s): the
    vehicle leader only, as found at the end of the previous step.
    """

    speed: Array
    gap: Array
    lead_speed: Array
    lane_tan: Array
    has_lead: Array
    accel: Array
    vehicle_gap: Array
    vehicle_lead_speed: Array

    @classmethod
    def of(cls, is_ego: Array, **rows: Array) -> EgoBefore:
        """The ego's entries of the (N,) ``rows`` named by the fields, read at its slot together."""
        return cls(*ego_values(is_ego, [rows[name] for name in cls._fields]))


def step_info(
    state, agents, proj, scenario, config, active, ego_pre: EgoBefore, zone=None, full_edges=None
) -> tuple[StepInfo, Array, Array | None]:
    """Observations of the new state (after a step) for the metrics, each agent's
    outcome bits this step (N,) int32 (1: in a collision, 2: a box corner off-road), and
    the agents' road-edge candidate rows after the step (core.edge_cache; None on small maps).
    ``overflow`` is set when the road-edge search was not exact (core.edges).
    zone: the step's junction ZoneSearch (core.junction), or None; full_edges: see
    core.edges.search."""
    ego_speed, ego_accel_old = ego_pre.speed, ego_pre.accel
    veh_gap, veh_lead = ego_pre.vehicle_gap, ego_pre.vehicle_lead_speed
    pairs, hit_any, partner = collisions(agents, config, zone)
    road_edges = edges.search(agents, state.drivable, config, full_edges)
    road_edges, hit_any = jax.lax.optimization_barrier((road_edges, hit_any))
    off = road_edges.off
    finite = jnp.isfinite(agents.x) & jnp.isfinite(agents.y) & jnp.isfinite(agents.heading)
    finite = finite & jnp.isfinite(agents.speed)
    ego_s, ego_accel, ego_hit = ego_values(agents.is_ego, [proj.s, agents.accel, hit_any])
    ego_edge = road_edges.ego_edge
    closing = ego_speed - veh_lead
    ttc_ok = jnp.isfinite(veh_gap) & (closing > 0)
    ttc = jnp.where(ttc_ok, jnp.maximum(veh_gap, 0.0) / jnp.where(ttc_ok, closing, 1.0), jnp.inf)
    div_sum: Array
    div_count: Array
    div_sum = div_count = jnp.zeros((), jnp.float32)
    if scenario.log is not None:
        div_sum, div_count = log_divergence(state, agents, scenario.log)
    info = StepInfo(
        active=active,
        ego_collided=ego_hit > 0.5,
        offroad=ego_edge < 0.0,
        collision_pairs=pairs,
        ego_progress=ego_s - state.ego_s0,
        ego_ttc=ttc,
        ego_jerk=jnp.abs(ego_accel - ego_accel_old) / config.dt,
        has_nan=jnp.any(agents.valid & ~finite),
        div_sum=div_sum,
        div_count=div_count,
        overflow=~road_edges.fits,
        ego_edge=ego_edge,
        collided_with=partner,
        agents_collided=jnp.sum((agents.outcome & 1 > 0) | (agents.valid & hit_any)),
        agents_offroad=jnp.sum((agents.outcome & 2 > 0) | off),
        red_light=_ego_ran_red(state, agents, proj, config),
    )
    outcome = jnp.where(agents.valid & hit_any, 1, 0) | jnp.where(off, 2, 0)
    return info, outcome, road_edges.candidates


def _ego_ran_red(state, agents, proj, config) -> Array:
    """() bool: the ego's front bumper crossed its signal stop line during this step, which
    began on red (False in a scenario without signals). ``state``: before the step
    (its own sorted order); ``agents``, ``proj``: after it."""
    if agents.signal is None:
        return jnp.zeros((), bool)
    old = state.agents
    light = signals.phase(old.signal, signals.step_time(state.t, config.dt))
    line, light, front_before = ego_values(
        old.is_ego, [old.signal[0], light, state.proj.s + 0.5 * old.length]
    )
    (front_after,) = ego_values(agents.is_ego, [proj.s + 0.5 * agents.length])
    return signals.crossed_on_red(line, jnp.round(light).astype(jnp.int32), front_before, front_after)
