"""Exact fallback: scenarios whose window search was not proven exact are simulated again
with the all-pairs search, per device, in a loop over chunks whose trip count is unbatched
(under the per-device vmap, the largest count of any device)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from drivesim.core.types import RolloutMetrics, Scenario, SimConfig


def all_pairs_config(config: SimConfig) -> SimConfig:
    """``config`` with the all-pairs neighbour search."""
    return dataclasses.replace(config, neighbours="all_pairs", block_agents=None)


# Scenarios simulated together by the all-pairs fallback, by platform. On the CPU a chunk
# costs in proportion to its size, and most batches flag a few scenarios (1-2% of highway
# scenarios at 128 agents): chunks of 64 simulated ~30 scenarios for each flagged one and made
# W128 2.8x slower than chunks of 8, which cost 5% more where nearly every scenario is flagged
# (merge); BENCHMARKS.md "Fallback chunks". On an accelerator the chunk stays 64 (its kernels
# are latency-bound at these sizes, so fewer, larger chunks; not yet measured against 8).
# Results do not depend on the chunk (per-scenario results are batch-size independent).
CPU_CHUNK = 8
ACCELERATOR_CHUNK = 64


def chunk_size(batch: int, platform: str | None = None) -> int:
    """Scenarios per fallback chunk for a batch of ``batch`` on ``platform`` (None: JAX's
    default backend), at least 2 (XLA compiles a vmap of one differently)."""
    size = CPU_CHUNK if (platform or jax.default_backend()) == "cpu" else ACCELERATOR_CHUNK
    return max(2, min(size, batch))


def exact_fallback(fast: RolloutMetrics, scenarios: Scenario, exact_run, devices: int = 1) -> RolloutMetrics:
    """Replace the metrics of scenarios with ``fast.window_overflow`` by ``exact_run``'s
    (a function of a batch of scenarios). ``devices``: how many devices the batch (B,) is
    sharded over; where it divides B, the batch is viewed as (devices, B / devices), which
    follows the sharding, and each device simulates its own flagged rows. A fallback over
    the whole sharded batch is not split by XLA's partitioner: W128 on 8 CPU devices ran at
    0.48x its window-only rate with 3% of scenarios flagged, 0.85x split by device
    (BENCHMARKS.md "Fallback chunks")."""
    batch = fast.window_overflow.shape[0]
    if devices == 1 or batch % devices:
        return _fallback(fast, scenarios, exact_run)
    split = lambda leaf: leaf.reshape((devices, batch // devices) + leaf.shape[1:])  # noqa: E731
    per_device = jax.vmap(lambda f, s: _fallback(f, s, exact_run))
    out = per_device(jax.tree_util.tree_map(split, fast), jax.tree_util.tree_map(split, scenarios))
    return jax.tree_util.tree_map(lambda leaf: leaf.reshape((batch,) + leaf.shape[2:]), out)


def _fallback(fast: RolloutMetrics, scenarios: Scenario, exact_run) -> RolloutMetrics:
    """:func:`exact_fallback` of one device's rows (B,).

    The flagged scenarios are gathered in chunks (:func:`chunk_size`) and simulated by
    ``exact_run`` in a loop whose trip count is the number of chunks, an unbatched value:
    nothing runs when no scenario needs it, and the cost grows with the number of flagged
    scenarios, not with the batch. ``window_overflow`` stays True on replaced rows (it
    records the fallback)."""
    flag = fast.window_overflow
    batch = flag.shape[0]
    cap = chunk_size(batch)
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
