"""Exact fallback: scenarios whose window search was not proven exact are simulated again
with the all-pairs search, under a real branch on an unbatched any()."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from drivesim.core.types import RolloutMetrics, Scenario, SimConfig


def all_pairs_config(config: SimConfig) -> SimConfig:
    """``config`` with the all-pairs neighbour search."""
    return dataclasses.replace(config, neighbours="all_pairs")


def exact_fallback(fast: RolloutMetrics, scenarios: Scenario, exact_run) -> RolloutMetrics:
    """Replace the metrics of scenarios with ``fast.window_overflow`` by ``exact_run``'s
    (a function of the whole batch of scenarios).

    A real branch on an unbatched any(): nothing more runs when no scenario needs it;
    otherwise the whole batch is simulated again and the flagged rows are taken. Whole-batch
    and elementwise, so a sharded batch stays where it is (no gather across devices).
    ``window_overflow`` stays True on replaced rows (it records the fallback)."""
    flag = fast.window_overflow

    def redo(_):
        exact_m = exact_run(scenarios)
        pick = lambda e, f: jnp.where(flag.reshape(flag.shape + (1,) * (e.ndim - 1)), e, f)  # noqa: E731
        return jax.tree_util.tree_map(pick, exact_m, fast)

    out = jax.lax.cond(jnp.any(flag), redo, lambda _: fast, None)
    return dataclasses.replace(out, window_overflow=flag)
