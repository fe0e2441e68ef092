"""What one step observed, for the metrics: the ego's values and the StepInfo."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.collisions import collisions
from drivesim.core.lifecycle import log_divergence
from drivesim.core.metrics import StepInfo
from drivesim.core.road import box_edge_distance
from drivesim.core.types import Array


def ego_values(is_ego: Array, rows: list[Array]) -> list[Array]:
    """The ego's entry of each (N,) row, in one masked reduction; list of ()."""
    stacked = jnp.stack([r.astype(jnp.float32) for r in rows])
    return list(jnp.sum(jnp.where(is_ego[None], stacked, 0.0), axis=1))


def step_info(state, agents, proj, scenario, config, active, ego_pre) -> tuple[StepInfo, Array]:
    """Observations of the new state (after a step) for the metrics, and each agent's
    outcome bits this step (N,) int32 (1: in a collision, 2: a box corner off-road)."""
    ego_speed, _gap, _lead, _lane, _has, ego_accel_old, veh_gap, veh_lead = ego_pre
    pairs, hit_any, partner = collisions(agents, config)
    edge = box_edge_distance(
        agents.x, agents.y, agents.cos_h, agents.sin_h, agents.length, agents.width, scenario.road
    )
    edge, hit_any = jax.lax.optimization_barrier((edge, hit_any))
    off = agents.valid & (edge < 0.0)
    finite = jnp.isfinite(agents.x) & jnp.isfinite(agents.y) & jnp.isfinite(agents.heading)
    finite = finite & jnp.isfinite(agents.speed)
    ego_s, ego_accel, ego_edge, ego_hit = ego_values(agents.is_ego, [proj.s, agents.accel, edge, hit_any])
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
        overflow=jnp.zeros((), bool),
        ego_edge=ego_edge,
        collided_with=partner,
        agents_collided=jnp.sum((agents.outcome & 1 > 0) | (agents.valid & hit_any)),
        agents_offroad=jnp.sum((agents.outcome & 2 > 0) | off),
    )
    outcome = jnp.where(agents.valid & hit_any, 1, 0) | jnp.where(off, 2, 0)
    return info, outcome
