"""Per-step neighbour trace of a rollout, for checking the engine against brute force.

``neighbour_trace`` runs the same ``advance`` as ``rollout`` and records, after every
step, the agents (original order), the leader each agent's search found there and the
agents the collision search found in an overlap. benchmarks/fidelity.py and the tests
compare it with a float64 all-pairs computation on the same states.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core import exact, interactions
from drivesim.core.collisions import collisions
from drivesim.core.rollout import advance, reset
from drivesim.core.types import Scenario, SimConfig, pytree_dataclass


@pytree_dataclass
class NeighbourTrace:
    """After each step (S, N) in original agent order unless noted.

    x, y, heading, length, width, lane_width: agent state and sizes; tx, ty, d: projection
    onto the agent's route (tangent, signed lateral offset); valid; replay (N,);
    leader: original slot of the leader found (-1: none); hit: in an overlap found;
    pairs (S,): overlapping pairs found; accel0 (N,): acceleration applied at step 0;
    active (S,): the step was simulated; certified (S,): the window search was proven
    exact (always True for all-pairs).
    """

    x: jax.Array
    y: jax.Array
    heading: jax.Array
    length: jax.Array
    width: jax.Array
    lane_width: jax.Array
    tx: jax.Array
    ty: jax.Array
    d: jax.Array
    valid: jax.Array
    replay: jax.Array
    leader: jax.Array
    hit: jax.Array
    pairs: jax.Array
    accel0: jax.Array
    active: jax.Array
    certified: jax.Array


def _leader_slot(a, proj, scenario: Scenario, config: SimConfig):
    """Original slot of each agent's leader (-1: none), as the configured search finds it."""
    ids = a.agent_id
    if config.neighbours == "all_pairs":
        j, has = exact.all_pairs_leader_index(a, proj)
        return jnp.where(has, ids[j], -1)
    axis = scenario.road.sort_axis
    forward = proj.tx * axis[0] + proj.ty * axis[1] >= 0.0
    offset = interactions.leader_offsets(
        a.x, a.y, a.valid, proj.tx, proj.ty, proj.d, a.lane_width, config.window, forward=forward
    )
    n, w = ids.shape[0], config.window
    ids_p = interactions.padded(ids, w, -1)
    out = jnp.full(n, -1, jnp.int32)
    for k in [k for k in range(-w, w + 1) if k != 0]:
        out = jnp.where(offset == k, interactions.view(ids_p, w, k, n), out)
    return out


def neighbour_trace(scenario: Scenario, policy, config: SimConfig) -> NeighbourTrace:
    """Trace of one scenario over ``config.num_steps`` steps (see NeighbourTrace)."""

    def body(state, step_index):
        state, info = advance(state, scenario, config, policy, step_index=step_index)
        a, proj = state.agents, state.proj
        _pairs, hit, _ = collisions(a, config)
        back = jnp.argsort(a.agent_id)
        row = dict(
            x=a.x,
            y=a.y,
            heading=a.heading,
            length=a.length,
            width=a.width,
            lane_width=a.lane_width,
            tx=proj.tx,
            ty=proj.ty,
            d=proj.d,
            valid=a.valid,
            leader=_leader_slot(a, proj, scenario, config),
            hit=hit,
            accel=a.accel,
        )
        row = {k: v[back] for k, v in row.items()}
        row |= dict(pairs=info.collision_pairs, active=info.active, certified=~info.overflow)
        return state, row

    steps = jnp.arange(config.num_steps, dtype=jnp.int32)
    state0 = reset(scenario, config)
    _, rows = jax.lax.scan(body, state0, steps)
    n = scenario.agents.x.shape[0]
    replay = jnp.asarray(scenario.log.replay) if scenario.log is not None else jnp.zeros(n, bool)
    accel0 = rows.pop("accel")[0]
    return NeighbourTrace(**rows, replay=replay, accel0=accel0)


trace_batch = jax.jit(jax.vmap(neighbour_trace, in_axes=(0, None, None)), static_argnames="config")
