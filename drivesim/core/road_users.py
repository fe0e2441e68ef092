"""Road-user types (AgentState.kind): per-type kinematic limits, default sizes and speeds,
and the per-type collision metrics.

A vehicle keeps the SimConfig limits; a pedestrian or cyclist is further held to its own
acceleration range and top speed (a walker does not reach 30 m/s whatever its IDM says).
Every other part of the engine treats all types alike: leaders are searched spatially, so a
vehicle brakes for a pedestrian or cyclist whose centre is inside its lane, and collisions
are box overlaps whatever the types.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from drivesim.core.types import CYCLIST, PEDESTRIAN, Array, SimConfig


@dataclass(frozen=True)
class KindLimits:
    """Kinematic limits of one road-user type: max_speed [m/s], max_accel and min_accel
    [m/s^2] (min_accel < 0: the strongest braking)."""

    max_speed: float
    max_accel: float
    min_accel: float


# Round figures inside published ranges (the docs' model page): a pedestrian walks at
# 1.2-1.5 m/s and runs at up to ~3 m/s; an urban cyclist rides at 4-7 m/s, rarely above 12.
PEDESTRIAN_LIMITS = KindLimits(max_speed=3.0, max_accel=1.5, min_accel=-3.0)
CYCLIST_LIMITS = KindLimits(max_speed=12.0, max_accel=1.5, min_accel=-4.0)

# Default body boxes (length along the heading, width) [m] and cruising speeds [m/s].
PEDESTRIAN_SIZE = (0.5, 0.6)
CYCLIST_SIZE = (1.8, 0.6)
PEDESTRIAN_SPEED = 1.3
CYCLIST_SPEED = 5.5


def kind_limits(kind: Array, config: SimConfig) -> tuple[Array, Array, Array]:
    """Per-agent (min_accel, max_accel, max_speed), each shaped like ``kind`` (N,): the
    SimConfig limits for vehicles, tightened to PEDESTRIAN_LIMITS / CYCLIST_LIMITS."""

    def pick(vehicle: float, ped: float, cyc: float) -> Array:
        return jnp.where(kind == PEDESTRIAN, ped, jnp.where(kind == CYCLIST, cyc, vehicle))

    ped, cyc = PEDESTRIAN_LIMITS, CYCLIST_LIMITS
    lo = pick(config.min_accel, max(ped.min_accel, config.min_accel), max(cyc.min_accel, config.min_accel))
    hi = pick(config.max_accel, min(ped.max_accel, config.max_accel), min(cyc.max_accel, config.max_accel))
    top = pick(config.max_speed, min(ped.max_speed, config.max_speed), min(cyc.max_speed, config.max_speed))
    return lo, hi, top


def kind_metrics(collided_with: Array, kinds: Array, collided: Array, sorted_kind: Array) -> dict:
    """The per-type collision metrics of one scenario (RolloutMetrics fields).

    collided_with: () int32 the ego's first partner (-1: none); kinds: (N,) int32 types in
    scenario order; collided: (N,) bool, agents (sorted order) that overlapped another at
    some step; sorted_kind: (N,) int32 their types.
    """
    partner = jnp.clip(collided_with, 0, kinds.shape[0] - 1)
    count = lambda k: jnp.sum(collided & (sorted_kind == k)).astype(jnp.int32)  # noqa: E731
    return dict(
        collided_with_kind=jnp.where(collided_with >= 0, kinds[partner], -1).astype(jnp.int32),
        pedestrians_collided=count(PEDESTRIAN),
        cyclists_collided=count(CYCLIST),
    )
