"""Per-step neighbour trace of a rollout, for checking the engine against brute force.

``neighbour_trace`` runs the same ``advance`` as ``rollout`` and records, after every
step, the agents (original order), the leader each agent's search found there and the
agents the collision search found in an overlap. benchmarks/fidelity.py and the tests
compare it with a float64 all-pairs computation on the same states.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core import neighbours
from drivesim.core.collisions import collisions
from drivesim.core.materialize import stores_by_branch
from drivesim.core.rollout import advance, reset
from drivesim.core.search_plan import traced_under_config
from drivesim.core.types import Scenario, SimConfig, StepControls, pytree_dataclass


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


def _leader_slot(a, proj, scenario: Scenario, config: SimConfig, zone):
    """Original slot of each agent's leader (-1: none), as the configured search finds it."""
    lead, _gap, _speed = neighbours.leader_search(a, proj, scenario.road.sort_axis, config, zone)
    return jnp.where(lead >= 0, a.agent_id[jnp.maximum(lead, 0)], -1)


@traced_under_config
def neighbour_trace(scenario: Scenario, policy, config: SimConfig) -> NeighbourTrace:
    """Trace of one scenario over ``config.num_steps`` steps (see NeighbourTrace)."""

    def body(state, step_index):
        with stores_by_branch(step_index):
            state, info = advance(state, scenario, config, policy, StepControls(step_index=step_index))
        a, proj = state.agents, state.proj
        zone = neighbours.zone_search(a, proj, state.crossings, state.reach, config)
        _pairs, hit, _ = collisions(a, config, zone)
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
            leader=_leader_slot(a, proj, scenario, config, zone),
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
