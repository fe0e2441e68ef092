"""Exact fallback: scenarios whose window search was not proven exact are simulated again
with the all-pairs search, under a real branch on an unbatched count."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp

from drivesim.core.types import Array, RolloutMetrics, Scenario, SimConfig


def all_pairs_config(config: SimConfig) -> SimConfig:
    """``config`` with the all-pairs neighbour search."""
    return dataclasses.replace(config, neighbours="all_pairs", block_agents=None)


def exact_fallback(fast: RolloutMetrics, scenarios: Scenario, exact_run) -> RolloutMetrics:
    """Replace the metrics of scenarios with ``fast.window_overflow`` by ``exact_run``'s.

    A real branch on an unbatched count: nothing runs when no scenario needs it; up to
    B/64 (then B/8) of them are gathered and simulated alone; beyond that the whole batch
    is. ``window_overflow`` stays True on replaced rows (it records the fallback)."""
    flag = fast.window_overflow
    batch = flag.shape[0]
    count = jnp.sum(flag.astype(jnp.int32))

    def whole(_):
        exact_m = exact_run(scenarios)
        return jax.tree_util.tree_map(lambda f, e: _select(flag, e, f), fast, exact_m)

    def subset(cap):
        def run(_):
            idx = jnp.nonzero(flag, size=cap, fill_value=0)[0]
            sub = jax.tree_util.tree_map(lambda leaf: leaf[idx], scenarios)
            exact_m = exact_run(sub)
            take = flag[idx]
            return jax.tree_util.tree_map(
                lambda f, e: f.at[idx].set(_select(take, e, f[idx]), unique_indices=False), fast, exact_m
            )

        return run

    caps = sorted({c for c in (max(2, batch // 64), max(2, batch // 8)) if c < batch})
    branch = whole
    for cap in reversed(caps):
        branch = partial(lambda c, b, x: jax.lax.cond(count <= c, subset(c), b, x), cap, branch)
    out = jax.lax.cond(count == 0, lambda _: fast, branch, None)
    return dataclasses.replace(out, window_overflow=flag)


def _select(flag: Array, a: Array, b: Array) -> Array:
    """Per scenario ``a`` where ``flag`` else ``b`` (flag (B,), leaves (B, ...))."""
    return jnp.where(flag.reshape(flag.shape + (1,) * (a.ndim - 1)), a, b)
