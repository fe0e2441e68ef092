"""One scenario's states over time (core.rollout's ``advance`` under ``lax.scan``), and its
batched form ``simulate_trajectory`` for the viewers and the tests: metrics and the trajectory
(B, S, N) in original agent order, the exact searches compiled apart and run only where a
batch needs them."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from drivesim.core import switches
from drivesim.core.fallback import exact_config
from drivesim.core.materialize import stores_by_branch
from drivesim.core.rollout import advance, finalize, reset, start_state
from drivesim.core.search_choice import of_scenarios as platform_searches
from drivesim.core.search_plan import traced_under_config
from drivesim.core.types import RolloutMetrics, Scenario, SimConfig, StepControls, Trajectory, replace


@traced_under_config
def rollout_trajectory(
    scenario: Scenario, policy, config: SimConfig, zone_on=None, full_edges=None
) -> tuple[RolloutMetrics, Trajectory]:
    """Like :func:`rollout`, also returning the trajectory (S, N) in original agent order."""

    def body(state, step_index):
        with stores_by_branch(step_index):
            controls = StepControls(step_index=step_index, zone_on=zone_on, full_edges=full_edges)
            state, _info = advance(state, scenario, config, policy, controls)
        return state, _positions(state)

    steps = jnp.arange(config.num_steps, dtype=jnp.int32)
    state, rows = jax.lax.scan(body, reset(scenario, config), steps)
    return finalize(state, scenario), _original_order(rows)


@traced_under_config
def trajectories(
    scenarios: Scenario, policy, config: SimConfig, zone_on=None
) -> tuple[RolloutMetrics, Trajectory]:
    """:func:`rollout_trajectory` of each scenario of ``scenarios`` (leading axis B): metrics
    (B,) and trajectories (B, S, N), the same values, written as one scan over the batch's
    state whose step is a vmap, as core.rollout.rollouts (JAX traces the step once)."""

    def body(state, step_index):
        def one(st, scenario):
            with stores_by_branch(step_index):
                controls = StepControls(step_index=step_index, zone_on=zone_on)
                st = advance(st, scenario, config, policy, controls)[0]
            return st, _positions(st)

        return jax.vmap(one)(state, scenarios)

    start = jax.vmap(lambda one: start_state(one, config, zone_on))(scenarios)
    steps = jnp.arange(config.num_steps, dtype=jnp.int32)
    state, rows = jax.lax.scan(body, start, steps)
    rows = tuple(jnp.swapaxes(r, 0, 1) for r in rows)  # (S, B, N) -> (B, S, N)
    return jax.vmap(finalize)(state, scenarios), _original_order(rows)


def _positions(state) -> tuple:
    """(x, y, heading, speed, valid, agent_id) of the sorted agents after a step, each (N,)."""
    a = state.agents
    return a.x, a.y, a.heading, a.speed, a.valid, a.agent_id


def _original_order(rows: tuple) -> Trajectory:
    """The Trajectory of stacked :func:`_positions` rows (..., S, N), in original agent order."""
    *values, ids = rows
    unsort = partial(jnp.take_along_axis, indices=jnp.argsort(ids, axis=-1), axis=-1)
    return Trajectory(*(unsort(v) for v in values))


_trajectory_program = jax.jit(trajectories, static_argnames=("config", "zone_on"))


def simulate_trajectory(scenarios: Scenario, policy, config: SimConfig) -> tuple[RolloutMetrics, Trajectory]:
    """Metrics (B,) and trajectories (B, S, N) of a batch (leading axis B) under ``policy``:
    the fast searches first; when some scenario is not proven exact (``window_overflow``),
    the whole batch again with the all-pairs search and every lane's edges, whose rows
    replace the flagged ones. The two are compiled apart, the exact one only when a batch
    needs it (one program where most batches need one); the fast searches the batch needs are
    fixed in its program as ``simulate`` fixes them (core.switches). Device arrays, as from a jit; it
    decides on the host whether the exact pass runs, so it takes concrete arrays (not inside
    ``jax.jit`` or ``vmap``: there, vmap :func:`rollout_trajectory` with the exact searches)."""
    config = platform_searches(config, scenarios)
    scenarios = jax.device_put(scenarios)  # one copy for the switches' program and this one
    fast = _trajectory_program(scenarios, policy, config, zone_on=switches.of_batch(scenarios, config))
    flag = fast[0].window_overflow
    exact = exact_config(config)
    if exact is None or not bool(jnp.any(flag)):
        return fast
    exact_out = _trajectory_program(scenarios, policy, exact.with_search(edge_search="all_lanes"))
    pick = lambda e, f: jnp.where(flag.reshape(flag.shape + (1,) * (e.ndim - 1)), e, f)  # noqa: E731
    metrics, trajectory = jax.tree_util.tree_map(pick, exact_out, fast)
    return replace(metrics, window_overflow=flag), trajectory
