"""Kinematic bicycle model, explicit Euler."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import Array, SimConfig


def bicycle_step(
    x: Array,
    y: Array,
    heading: Array,
    cos_h: Array,
    sin_h: Array,
    speed: Array,
    length: Array,
    accel: Array,
    tan_steer: Array,
    config: SimConfig,
) -> tuple[Array, Array, Array, Array]:
    """One explicit-Euler step of the kinematic bicycle model; all arrays (N,).

    x' = v cos(h), y' = v sin(h), h' = v tan(steer) / wheelbase, v' = accel, with
    wheelbase = wheelbase_ratio * length and speed kept in [0, max_speed]. Takes cos/sin of
    the heading and tan of the (already clipped) steering angle, so no trigonometry here.
    """
    dt = config.dt
    wheelbase = config.wheelbase_ratio * length
    new_x = x + speed * cos_h * dt
    new_y = y + speed * sin_h * dt
    new_heading = heading + speed * tan_steer / wheelbase * dt
    new_speed = jnp.clip(speed + accel * dt, 0.0, config.max_speed)
    return new_x, new_y, new_heading, new_speed
