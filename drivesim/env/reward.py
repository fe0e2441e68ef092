"""The per-step reward: a function of what the step observed (:class:`StepRecord`), chosen
by the user; :class:`RewardConfig` is the default formula."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp

from drivesim.core.metrics import StepInfo
from drivesim.core.types import Array, pytree_dataclass


@pytree_dataclass
class StepRecord:
    """What a reward function sees of one environment step; arrays () unless noted.

    info: the engine's StepInfo of the step (ego_collided, offroad, ego_ttc, ego_jerk, ...);
    progress_gain: ego route progress gained this step [m]; lane_offset: the ego's lateral
    offset from its lane's centre line after the step [m]; dt: () the step length [s].
    """

    info: StepInfo
    progress_gain: Array
    lane_offset: Array | float
    dt: Array | float


Reward = Callable[[StepRecord], Array]


@dataclass(frozen=True)
class RewardConfig:
    """Per-step reward of the ego (the docs' RL guide explains each term)::

        g = route progress gained this step (m), g_max = speed_limit * dt
        r = progress_weight * min(g, g_max) - overspeed_weight * max(0, g - g_max)
            - collision_penalty * [ego collided]
            - offroad_penalty * [ego left the drivable area]
            - headway_penalty * max(0, 1 - ttc / headway_ttc_s)  (ttc: to the ego's leader, s)
            - lane_offset_weight * |lateral offset from the lane centre| (m)
            - jerk_weight * |da/dt| (m/s^3)

    Collision and off-road also end the episode, so they cost the progress not made.
    Progress beyond ``speed_limit`` [m/s] costs instead of earning, a collision costs more than
    the progress of a whole episode at that limit (``collision_penalty`` > progress_weight *
    speed_limit * episode seconds), so no crash can pay for the progress it bought, and the
    headway and lane-offset terms give the learner a signal before a crash happens.
    """

    progress_weight: float = 0.3
    speed_limit: float = 33.3
    overspeed_weight: float = 0.6
    collision_penalty: float = 300.0
    offroad_penalty: float = 300.0
    headway_penalty: float = 1.0
    headway_ttc_s: float = 3.0
    lane_offset_weight: float = 0.1
    jerk_weight: float = 0.002

    def __call__(self, step: StepRecord) -> Array:
        """The reward () of one step."""
        limit = self.speed_limit * step.dt  # the most progress a step may earn [m]
        gain = step.progress_gain
        over = jnp.maximum(gain - limit, 0.0)
        ttc = step.info.ego_ttc
        close = jnp.where(jnp.isfinite(ttc), jnp.clip(1.0 - ttc / self.headway_ttc_s, 0.0, 1.0), 0.0)
        return (
            self.progress_weight * jnp.minimum(gain, limit)
            - self.overspeed_weight * over
            - self.collision_penalty * step.info.ego_collided.astype(jnp.float32)
            - self.offroad_penalty * step.info.offroad.astype(jnp.float32)
            - self.headway_penalty * close
            - self.lane_offset_weight * jnp.abs(step.lane_offset)
            - self.jerk_weight * step.info.ego_jerk
        )
