"""Exact fallback: scenarios whose step searches were not proven exact are simulated again
with exact ones (:func:`exact_config`), per device, in a loop over chunks that runs while any
device has a scenario waiting."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp

from drivesim.core import edges
from drivesim.core.search_choice import on_cpu
from drivesim.core.types import Array, RolloutMetrics, Scenario, SimConfig


def exact_config(config: SimConfig) -> SimConfig | None:
    """The configuration that simulates again the scenarios a run of ``config`` did not prove
    exact (all-pairs neighbours, every segment slot of a recorded map's road-edge table), or
    None where there is nothing to prove ("window_only" measures the window; "all_pairs"
    with every lane's edges proves everything itself)."""
    if config.search.neighbours == "window_only" or (
        config.search.neighbours == "all_pairs" and edges.all_lanes(config)
    ):
        return None
    return config.with_search(neighbours="all_pairs", block_agents=None, map_segments=None)


def one_round(config: SimConfig) -> bool:
    """Whether the fallback's first runs of a batch run with ``config`` prove everything
    (its neighbours come from all pairs, or every corner meets every lane): then they run
    with every lane's edges at once, with no second round."""
    return config.search.neighbours == "all_pairs" or edges.all_lanes(config)


# Scenarios simulated together by the all-pairs fallback, by platform. On the CPU a chunk
# costs in proportion to its size, and most batches flag a few scenarios (1-2% of highway
# scenarios at 128 agents): chunks of 64 simulated ~30 scenarios for each flagged one and made
# W128 2.8x slower than chunks of 8, which cost 5% more where nearly every scenario is flagged
# (merge). On an accelerator the chunk stays 64 (its kernels
# are latency-bound at these sizes, so fewer, larger chunks; not yet measured against 8).
# Results do not depend on the chunk (per-scenario results are batch-size independent).
CPU_CHUNK = 8
ACCELERATOR_CHUNK = 64


def chunk_size(batch: int, platform: str | None = None) -> int:
    """Scenarios per fallback chunk for a batch of ``batch`` on ``platform`` (None: JAX's
    default backend), at least 2 (XLA compiles a vmap of one differently)."""
    size = CPU_CHUNK if on_cpu(platform) else ACCELERATOR_CHUNK
    return max(2, min(size, batch))


def exact_fallback(fast: RolloutMetrics, scenarios: Scenario, exact_run, config: SimConfig, devices: int = 1):
    """Replace the metrics of scenarios with ``fast.window_overflow`` (a run of ``config``)
    by ``exact_run``'s: ``exact_run(batch, full_edges)`` simulates a batch of scenarios with
    :func:`exact_config`, ``full_edges`` an unbatched () bool (core.edges: every corner
    against every lane). Its runs without full edges may not prove the road edges (their
    ``window_overflow``); those scenarios are simulated once more with them, in the same
    loop. ``window_overflow`` stays True on replaced rows (it records the fallback).

    ``devices``: how many devices the batch (B,) is sharded over; where it divides B, the
    batch is viewed as (devices, B / devices), which follows the sharding, and each device
    simulates its own flagged rows. A fallback over the whole sharded batch is not split by
    XLA's partitioner, so without this view every device would simulate every flagged row."""
    batch = fast.window_overflow.shape[0]
    if one_round(config):
        one_device = partial(_single_round, exact_run=lambda sub: exact_run(sub, True))
    else:
        one_device = partial(_two_rounds, exact_run=exact_run)
    if devices == 1 or batch % devices:
        return one_device(fast, scenarios, axis=None)
    split = lambda leaf: leaf.reshape((devices, batch // devices) + leaf.shape[1:])  # noqa: E731
    per_device = jax.vmap(lambda f, s: one_device(f, s, axis=_DEVICES), axis_name=_DEVICES)
    out = per_device(jax.tree_util.tree_map(split, fast), jax.tree_util.tree_map(split, scenarios))
    return jax.tree_util.tree_map(lambda leaf: leaf.reshape((batch,) + leaf.shape[2:]), out)


_DEVICES = "fallback_devices"  # the per-device vmap's axis name


def _run_chunk(out: RolloutMetrics, scenarios: Scenario, idx: Array, exact_run, *args):
    """Simulate the scenarios at rows ``idx`` (cap,) (B: no row) with ``exact_run(sub, *args)``
    and write their metrics into ``out`` (B,)."""
    batch = scenarios.valid.shape[0]
    sub = jax.tree_util.tree_map(lambda leaf: leaf[jnp.minimum(idx, batch - 1)], scenarios)
    exact_m = exact_run(sub, *args)
    return jax.tree_util.tree_map(lambda o, e: o.at[idx].set(e, mode="drop"), out, exact_m)


def _two_rounds(fast: RolloutMetrics, scenarios: Scenario, exact_run, axis) -> RolloutMetrics:
    """:func:`exact_fallback` of one device's rows (B,) where the first runs may not prove the
    road edges.

    The flagged scenarios are gathered in chunks (:func:`chunk_size`) and simulated by
    ``exact_run`` in a loop that runs while some scenario (on any device: ``axis``) waits:
    nothing runs when no scenario needs it, and the cost grows with the number of flagged
    scenarios, not with the batch. The loop's state says whether its runs measure every
    lane's edges; it switches when every device's first round is done, so the switch stays
    one unbatched value and the edge search a real conditional."""
    flag = fast.window_overflow
    batch = flag.shape[0]
    cap = chunk_size(batch)

    def anywhere(value: Array) -> Array:
        return value if axis is None else jax.lax.psum(value.astype(jnp.int32), axis) > 0

    def waiting(carry) -> Array:
        return anywhere(jnp.any(carry[1]))

    def body(carry):
        out, pending, full = carry
        idx = jnp.nonzero(pending, size=cap, fill_value=batch)[0]
        out = _run_chunk(out, scenarios, idx, exact_run, full)
        pending = pending.at[idx].set(False, mode="drop")
        switch = ~full & ~anywhere(jnp.any(pending))
        # the second round re-runs the rows whose first exact run left the edges unproven:
        # once every flagged row has run, ``out`` holds their own flags (the rest: False)
        return out, jnp.where(switch, out.window_overflow, pending), full | switch

    init = (fast, flag, jnp.zeros((), bool))
    out = jax.lax.while_loop(waiting, body, init)[0]
    return dataclasses.replace(out, window_overflow=flag)


def _single_round(fast: RolloutMetrics, scenarios: Scenario, exact_run, axis=None) -> RolloutMetrics:
    """:func:`exact_fallback` of one device's rows (B,) where the first runs prove everything:
    a loop over the flagged scenarios' chunks, its trip count counted once (no device needs
    to wait for another, so ``axis`` is unused)."""
    flag = fast.window_overflow
    batch = flag.shape[0]
    cap = chunk_size(batch)
    chunks_max = -(-batch // cap)
    order = jnp.nonzero(flag, size=chunks_max * cap, fill_value=batch)[0]  # flagged first, then B
    count = jnp.sum(flag.astype(jnp.int32))

    def body(i, out):
        idx = jax.lax.dynamic_slice(order, (i * cap,), (cap,))
        return _run_chunk(out, scenarios, idx, exact_run)

    out = jax.lax.fori_loop(0, (count + cap - 1) // cap, body, fast)
    return dataclasses.replace(out, window_overflow=flag)
