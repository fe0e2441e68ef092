"""Exact fallback: scenarios whose window search was not proven exact are simulated again
with the all-pairs search, in a loop over chunks whose trip count is unbatched."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from drivesim.core.types import RolloutMetrics, Scenario, SimConfig


def all_pairs_config(config: SimConfig) -> SimConfig:
    """``config`` with the all-pairs neighbour search."""
    return dataclasses.replace(config, neighbours="all_pairs", block_agents=None)


CHUNK = 64  # scenarios simulated together by the all-pairs fallback


def exact_fallback(fast: RolloutMetrics, scenarios: Scenario, exact_run) -> RolloutMetrics:
    """Replace the metrics of scenarios with ``fast.window_overflow`` by ``exact_run``'s.

    The flagged scenarios are gathered in chunks of CHUNK and simulated by ``exact_run``
    (a function of a batch of scenarios) in a loop whose trip count is the number of
    chunks, an unbatched value: nothing runs when no scenario needs it, and the cost grows
    with the number of flagged scenarios, not with the batch. ``window_overflow`` stays
    True on replaced rows (it records the fallback)."""
    flag = fast.window_overflow
    batch = flag.shape[0]
    cap = min(CHUNK, batch)
    chunks_max = -(-batch // cap)
    order = jnp.nonzero(flag, size=chunks_max * cap, fill_value=batch)[0]  # flagged first, then B
    count = jnp.sum(flag.astype(jnp.int32))

    def body(i, out):
        idx = jax.lax.dynamic_slice(order, (i * cap,), (cap,))
        sub = jax.tree_util.tree_map(lambda leaf: leaf[jnp.minimum(idx, batch - 1)], scenarios)
        exact_m = exact_run(sub)
        return jax.tree_util.tree_map(lambda o, e: o.at[idx].set(e, mode="drop"), out, exact_m)

    out = jax.lax.fori_loop(0, (count + cap - 1) // cap, body, fast)
    return dataclasses.replace(out, window_overflow=flag)
