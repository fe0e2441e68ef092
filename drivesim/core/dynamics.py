"""Kinematic bicycle model, explicit Euler."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import Array, SimConfig


def clip_controls(accel: Array, steer: Array, config: SimConfig) -> tuple[Array, Array]:
    """Clip acceleration to [min_accel, max_accel] and steering to +-max_steer; shapes (N,)."""
    accel = jnp.clip(accel, config.min_accel, config.max_accel)
    steer = jnp.clip(steer, -config.max_steer, config.max_steer)
    return accel, steer


def bicycle_step(
    x: Array, y: Array, heading: Array, speed: Array, length: Array,
    accel: Array, steer: Array, config: SimConfig,
) -> tuple[Array, Array, Array, Array]:
    """One explicit-Euler step of the kinematic bicycle model; all arrays (N,).

    x' = v cos(h), y' = v sin(h), h' = v tan(steer) / wheelbase, v' = accel,
    with wheelbase = wheelbase_ratio * length and speed kept in [0, max_speed].
    Controls are expected already clipped (see :func:`clip_controls`).
    """
    return bicycle_step_tan(
        x, y, heading, jnp.cos(heading), jnp.sin(heading), speed, length, accel, jnp.tan(steer), config
    )


def bicycle_step_tan(
    x: Array, y: Array, heading: Array, cos_h: Array, sin_h: Array, speed: Array, length: Array,
    accel: Array, tan_steer: Array, config: SimConfig,
) -> tuple[Array, Array, Array, Array]:
    """:func:`bicycle_step` given cos/sin of the heading and tan of the steering angle
    (the form the time loop uses: no trigonometry here); all arrays (N,)."""
    dt = config.dt
    wheelbase = config.wheelbase_ratio * length
    new_x = x + speed * cos_h * dt
    new_y = y + speed * sin_h * dt
    new_heading = heading + speed * tan_steer / wheelbase * dt
    new_speed = jnp.clip(speed + accel * dt, 0.0, config.max_speed)
    return new_x, new_y, new_heading, new_speed
