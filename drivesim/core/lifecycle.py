"""Logged scenarios: the sort position of an agent that enters late, the end of an
IDM-driven agent's mapped route, log replay and the distance to the log."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.padded_sum import padded_sum
from drivesim.core.road import Projection
from drivesim.core.types import Array, Scenario, replace


def entry_position(scenario: Scenario, replay: Array, valid: Array) -> tuple[Array, Array]:
    """Agents' (x, y) (N,) for the sort: a logged agent absent at step 0 takes the position
    where it enters the log, so it starts at its place in the order, not at the end."""
    ag = scenario.agents
    if scenario.log is None:
        return ag.x, ag.y
    log = scenario.log
    first = jnp.argmax(log.valid, axis=0)  # (N,) first logged step
    later = replay & ~valid & jnp.any(log.valid, axis=0)
    at = lambda c: jnp.take_along_axis(log.xy[..., c], first[None], axis=0)[0]  # noqa: E731
    return jnp.where(later, at(0), ag.x), jnp.where(later, at(1), ag.y)


def end_of_route(agents, proj: Projection):
    """Simulated (not replayed, not ego) agents of a logged scenario leave the scenario
    (valid=False) once their front bumper reaches the end of their mapped route."""
    seg = agents.seg
    route_end = jnp.sum(seg.length * seg.ok, axis=0)
    ended = ~agents.replay & ~agents.is_ego & (proj.s + 0.5 * agents.length >= route_end)
    return replace(agents, valid=agents.valid & ~ended)


def replay_log(a, t: Array, log, kinematics):
    """Overwrite replayed agents' (x, y, heading, speed, valid) with their log at t + 1."""
    x, y, heading, speed, valid = kinematics
    lt = jnp.minimum(t + 1, log.valid.shape[0] - 1)
    ids = a.agent_id
    rep = a.replay
    x = jnp.where(rep, log.xy[lt, :, 0][ids], x)
    y = jnp.where(rep, log.xy[lt, :, 1][ids], y)
    heading = jnp.where(rep, log.heading[lt][ids], heading)
    speed = jnp.where(rep, log.speed[lt][ids], speed)
    valid = jnp.where(rep, a.base_valid & log.valid[lt][ids], valid)
    return x, y, heading, speed, valid


def log_divergence(state, agents, log) -> tuple[Array, Array]:
    """Summed distance to the log of non-replayed logged agents after the step, and count."""
    lt = jnp.minimum(state.t + 1, log.valid.shape[0] - 1)
    ids = agents.agent_id
    logged = log.valid[lt][ids] & agents.base_valid & ~agents.replay
    logged = logged & (state.t + 1 < log.valid.shape[0])
    dx = agents.x - log.xy[lt, :, 0][ids]
    dy = agents.y - log.xy[lt, :, 1][ids]
    dist = jnp.sqrt(dx * dx + dy * dy)
    # padded_sum: the same sum in every agent padding class (jnp.sum's order depends on N)
    return padded_sum(jnp.where(logged, dist, 0.0)), jnp.sum(logged.astype(jnp.float32))
