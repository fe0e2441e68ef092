"""Kinematic bicycle model: explicit Euler or ballistic position update."""

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
    top_speed: Array,
    config: SimConfig,
) -> tuple[Array, Array, Array, Array]:
    """One step of the kinematic bicycle model; all arrays (N,).

    x' = v cos(h), y' = v sin(h), h' = v tan(steer) / wheelbase, v' = accel, with
    wheelbase = wheelbase_ratio * length and the new speed kept in [0, max_speed] and below
    ``top_speed`` (the road-user type's). The travelled speed over the step is
    ``config.position_update``'s: "euler" the speed before the step (explicit Euler);
    "ballistic" the mean of the speeds before and after it (constant acceleration over the
    step, SUMO's ballistic update: a step that ends at standstill brakes uniformly to 0 over
    the whole step). Takes cos/sin of the heading and tan of the (already clipped) steering
    angle, so no trigonometry here.
    """
    dt = config.dt
    wheelbase = config.wheelbase_ratio * length
    new_speed = jnp.minimum(jnp.clip(speed + accel * dt, 0.0, config.max_speed), top_speed)
    travel = speed if config.position_update == "euler" else 0.5 * (speed + new_speed)
    new_x = x + travel * cos_h * dt
    new_y = y + travel * sin_h * dt
    new_heading = heading + travel * tan_steer / wheelbase * dt
    return new_x, new_y, new_heading, new_speed
