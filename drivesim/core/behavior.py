"""Driver behaviour: IDM car following, lane keeping, yielding, ego policies."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core import search_plan
from drivesim.core.matmul import matmul
from drivesim.core.types import Array, IDMParams, MLPParams, SimConfig

MIN_GAP = 0.01  # [m] gaps below this are treated as this (keeps the IDM finite)


def idm_acceleration(speed: Array, gap: Array, approach: Array, p: IDMParams) -> Array:
    """IDM acceleration exactly as published (Treiber, Hennecke, Helbing 2000).

    dv/dt = a [1 - (v/v0)^delta - (s*/s)^2],  s* = s0 + max(0, v T + v dv / (2 sqrt(a b)))
    (the dynamic part clamped at 0 as in Treiber & Kesting's book: a faster leader never
    makes the desired gap shorter than s0).

    speed v, gap s (bumper-to-bumper, +inf without leader), approach dv = v - v_leader;
    all broadcastable arrays. Returns the unclipped acceleration.
    """
    free = free_road_term(speed / p.v0, p.delta)
    s_star = p.s0 + jnp.maximum(0.0, speed * p.T + speed * approach / (2.0 * jnp.sqrt(p.a * p.b)))
    interaction = jnp.square(s_star / gap)
    return p.a * (1.0 - free - interaction)


def free_road_term(ratio: Array, delta: Array) -> Array:
    """(v/v0)^delta: squared twice for delta = 4 (the default of every source), else
    exp(delta ln |ratio|) (|v|: a negative input speed gives a finite term, where a float
    power gives NaN for a non-integer delta). XLA:CPU evaluates a float power one element at
    a time through the C library (6.8 ns an element on vm3, 7% of a W32 step); these are
    vector instructions. Relative error against float64 for ratios in [1e-3, 1.3]: 1.7e-7
    at delta = 4, at most 1.9e-6 at 1, 2 and 3.5 (the power's: 6e-8)."""
    if not search_plan.current().vectorised_trig:  # for measuring (SearchPlan)
        return jnp.power(ratio, delta)
    square = ratio * ratio
    return jnp.where(delta == 4.0, square * square, jnp.exp(delta * jnp.log(jnp.abs(ratio))))


def follow_acceleration(speed: Array, gap: Array, leader_speed: Array, p: IDMParams) -> Array:
    """IDM with the gap guarded below by MIN_GAP and free road where gap is +inf; (N,)."""
    safe_gap = jnp.maximum(gap, MIN_GAP)
    approach = jnp.where(jnp.isfinite(gap), speed - leader_speed, 0.0)
    return idm_acceleration(speed, safe_gap, approach, p)


def pure_pursuit_tan(
    x: Array,
    y: Array,
    cos_h: Array,
    sin_h: Array,
    length: Array,
    target_x: Array,
    target_y: Array,
    config: SimConfig,
) -> Array:
    """tan of the pure-pursuit steering angle toward a target point; all arrays (N,).

    steer = atan(2 L sin(alpha) / d); the dynamics only need tan(steer), so the
    arctangent is never evaluated in the time loop.
    """
    dx = target_x - x
    dy = target_y - y
    dist2 = jnp.maximum(dx * dx + dy * dy, 1e-6)
    lateral = -dx * sin_h + dy * cos_h  # = dist * sin(alpha)
    wheelbase = config.wheelbase_ratio * length
    return 2.0 * wheelbase * lateral / dist2


def lookahead_distance(speed: Array, config: SimConfig) -> Array:
    """Pure-pursuit lookahead along the lane [m]: max(min_lookahead, lookahead_time * v)."""
    return jnp.maximum(config.min_lookahead, config.lookahead_time * speed)


def conflict_busy(
    x: Array,
    y: Array,
    cos_h: Array,
    sin_h: Array,
    speed: Array,
    has_priority: Array,
    conflict_xy: Array,
    conflict_radius: Array,
    config: SimConfig,
) -> Array:
    """Whether a priority agent occupies or will reach the conflict zone within
    ``yield_horizon_s``; () bool. Inputs (N,), conflict_xy (2,), conflict_radius ()."""
    cx = conflict_xy[0] - x
    cy = conflict_xy[1] - y
    not_past = (cx * cos_h + cy * sin_h) > -conflict_radius
    reach = conflict_radius + speed * config.yield_horizon_s + 2.0
    near = cx * cx + cy * cy < reach * reach
    return (conflict_radius > 0) & jnp.any(has_priority & not_past & near)


def mlp_forward(params: MLPParams, obs: Array) -> Array:
    """MLP (obs_dim,) -> (2,) raw outputs in (-1, 1): tanh hidden layers, tanh output."""
    return jnp.tanh(mlp_linear_out(params, obs))


def mlp_linear_out(params: MLPParams, x: Array) -> Array:
    """MLP (..., in) -> (..., out): tanh hidden layers, a linear last layer, every product at
    full float32 (core.matmul); the policy's body and the training critic's whole network."""
    h = x
    last = len(params.weights) - 1
    for i, (w, b) in enumerate(zip(params.weights, params.biases, strict=True)):
        h = matmul(h, w) + b
        h = jnp.tanh(h) if i < last else h
    return h


def action_from_unit(unit: Array, config: SimConfig) -> tuple[Array, Array]:
    """Map (..., 2) values in [-1, 1] to (accel, steer) within the configured limits."""
    accel = jnp.where(unit[..., 0] >= 0, unit[..., 0] * config.max_accel, -unit[..., 0] * config.min_accel)
    steer = unit[..., 1] * config.max_steer
    return accel, steer
