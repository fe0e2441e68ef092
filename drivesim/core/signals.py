"""Fixed-time traffic signals: the light each agent sees and the stop line it obeys.

A scenario's ``SignalPlan`` (drivesim.core.types) gives every agent the arc length of its
signal's stop line and the signal's fixed-time plan (cycle, green start, green and amber
durations; red is the rest of the cycle). Scenarios without signals (``signal=None``) trace
none of this.

Stop-line rule (each step, from the state at its start):

* red: the stop line is a standing obstacle (an IDM leader with speed 0) while the agent's
  front bumper has not reached it and it can still stop before it at the engine's braking
  limit (v^2 / (2 |SimConfig.min_accel|) <= gap); an agent already too close to stop (it
  entered on amber) goes on instead of braking in vain;
* amber: the same, if the agent can still stop before the line at its comfortable
  deceleration b, i.e. v^2 / (2 b) <= gap (the critical stopping distance of Gazis, Herman
  and Maradudin 1960, "The problem of the amber signal light in traffic flow", with no
  perception-reaction time, as the IDM has none); otherwise it goes on;
* green: no obstacle.

The ego's front bumper crossing its stop line during a step that began on red is a
``red_light_violation`` (drivesim.core.step_metrics).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from drivesim.core.types import Array, SignalPlan

GREEN, AMBER, RED = 0, 1, 2
ROWS = ("line_s", "cycle", "offset", "green", "amber")  # packed rows, in this order
# the plan of an agent that meets no signal (line at +inf: never an obstacle)
NO_SIGNAL = dict(line_s=np.inf, cycle=1.0, offset=0.0, green=1.0, amber=0.0)


def pack(plan: SignalPlan) -> Array:
    """The plan as one (5, N) float32 array, rows ``ROWS`` (permuted with the agents)."""
    return jnp.stack([jnp.asarray(getattr(plan, r), jnp.float32) for r in ROWS])


def phase(rows: Array, time: Array) -> Array:
    """Light of each agent at ``time`` [s] (): (N,) int32 GREEN / AMBER / RED.
    rows: (5, N) packed plan."""
    _line, cycle, offset, green, amber = rows
    u = jnp.mod(time - offset, cycle)
    return jnp.where(u < green, GREEN, jnp.where(u < green + amber, AMBER, RED)).astype(jnp.int32)


def line_gap(rows: Array, s: Array, length: Array) -> Array:
    """Front bumper to stop line along the route [m] (+inf without a signal); (N,).
    s: centre arc length (N,); length: box length (N,)."""
    return rows[0] - s - 0.5 * length


def must_stop(light: Array, gap: Array, speed: Array, b: Array, b_max: float) -> Array:
    """Whether the stop line is a standing obstacle for each agent; (N,) bool.
    light: phase (N,); gap: line_gap (N,); speed (N,) [m/s]; b: comfortable deceleration
    (N,) [m/s^2] (amber); b_max: the braking limit [m/s^2] (red)."""
    v2 = speed * speed
    red = (light == RED) & (v2 <= 2.0 * b_max * gap)
    return (gap > 0.0) & (red | ((light == AMBER) & (v2 <= 2.0 * b * gap)))


def signal_leader(
    rows: Array, time: Array, s: Array, speed: Array, length: Array, brakes: tuple, leader: tuple
) -> tuple[Array, Array, Array]:
    """Each agent's leader with its signal's stop line taken into account.

    brakes: (b (N,), b_max) as in ``must_stop``; leader: (gap, leader speed, has leader),
    (N,) each; returns the same with the stop line where it must stop and is nearer than
    the leader."""
    gap, lead_v, has_lead = leader
    stop_gap = line_gap(rows, s, length)
    use = must_stop(phase(rows, time), stop_gap, speed, *brakes) & (stop_gap < gap)
    return jnp.where(use, stop_gap, gap), jnp.where(use, 0.0, lead_v), has_lead | use


def crossed_on_red(line_s: Array, light: Array, front_before: Array, front_after: Array) -> Array:
    """Whether a front bumper crossed its stop line ``line_s`` [m] during a step that began
    with ``light`` RED; front_before / front_after: the bumper's arc length before and after
    the step [m]. Broadcasting arrays; bool."""
    return (light == RED) & (front_before < line_s) & (front_after >= line_s)


def step_time(t: Array, dt: float) -> Array:
    """Simulated time [s] at the start of step ``t`` (float32, as the rollout computes it)."""
    return t.astype(jnp.float32) * jnp.float32(dt)
