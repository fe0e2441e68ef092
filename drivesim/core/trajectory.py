"""One scenario's states over time (core.rollout's ``advance`` under ``lax.scan``), and its
batched, jitted form ``simulate_trajectory`` for the viewers and the tests: metrics and the
trajectory (B, S, N) in original agent order."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from drivesim.core import neighbours
from drivesim.core.fallback import exact_config
from drivesim.core.materialize import stores_by_branch
from drivesim.core.rollout import advance, finalize, reset
from drivesim.core.search_choice import of_scenarios as platform_searches
from drivesim.core.types import RolloutMetrics, Scenario, SimConfig, Trajectory, replace


def rollout_trajectory(
    scenario: Scenario, policy, config: SimConfig, zone_on=None, full_edges=None
) -> tuple[RolloutMetrics, Trajectory]:
    """Like :func:`rollout`, also returning the trajectory (S, N) in original agent order."""

    def body(state, step_index):
        with stores_by_branch(step_index):
            state, _info = advance(
                state, scenario, config, policy, step_index=step_index, zone_on=zone_on, full_edges=full_edges
            )
        a = state.agents
        return state, (a.x, a.y, a.heading, a.speed, a.valid, a.agent_id)

    steps = jnp.arange(config.num_steps, dtype=jnp.int32)
    state, (x, y, heading, speed, valid, ids) = jax.lax.scan(body, reset(scenario, config, zone_on), steps)
    back = jnp.argsort(ids, axis=-1)
    unsort = partial(jnp.take_along_axis, indices=back, axis=-1)
    trajectory = Trajectory(
        x=unsort(x), y=unsort(y), heading=unsort(heading), speed=unsort(speed), valid=unsort(valid)
    )
    return finalize(state, scenario), trajectory


def trajectory_batch(scenarios: Scenario, policy, config: SimConfig) -> tuple[RolloutMetrics, Trajectory]:
    """vmap of :func:`rollout_trajectory`; the scenarios not proven exact are simulated again
    with the all-pairs search and every lane's edges (the whole batch, when any)."""
    config = platform_searches(config, scenarios)
    zone_on = neighbours.searches_on(scenarios, config)
    traj = jax.vmap(rollout_trajectory, in_axes=(0, None, None, None))
    run = lambda cfg: traj(scenarios, policy, cfg, zone_on)  # noqa: E731
    fast = run(config)
    exact = exact_config(config)
    if exact is None:
        return fast
    flag = fast[0].window_overflow

    def redo(_):
        exact_out = traj(scenarios, policy, replace(exact, edge_search="all_lanes"), None)
        pick = lambda e, f: jnp.where(flag.reshape(flag.shape + (1,) * (e.ndim - 1)), e, f)  # noqa: E731
        return jax.tree_util.tree_map(pick, exact_out, fast)

    metrics, trajectory = jax.lax.cond(jnp.any(flag), redo, lambda _: fast, None)
    return replace(metrics, window_overflow=flag), trajectory


simulate_trajectory = jax.jit(trajectory_batch, static_argnames="config")
