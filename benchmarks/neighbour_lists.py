"""Cost of building per-agent neighbour lists against the all-pairs box tests they would replace.

    .venv/bin/python benchmarks/neighbour_lists.py                 # 48 scenarios x 128 agents, K = 16
    .venv/bin/python benchmarks/neighbour_lists.py --agents 64 --neighbours 8

Random boxes (cars, 4.6 x 2.0 m) in a 150 m square, per scenario: ``all_pairs`` tests every pair
i < j (core.interactions.boxes_overlap, as core.exact.all_pairs_hits); ``top_k`` takes each
agent's K nearest centres with ``lax.top_k`` and tests those pairs only; ``bisection`` finds
each agent's distance threshold holding at most K others by bisection and takes them with
``nonzero`` (as core.edge_cache takes its candidates). Prints the median milliseconds of one
call (one step of every scenario) for each, over ``--calls`` alternating calls, and their
ratio to ``all_pairs``: what a list built every step costs on this platform.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core import interactions


def _boxes(scenarios: int, agents: int, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    f = lambda v: jnp.asarray(np.asarray(v, np.float32))  # noqa: E731
    heading = rng.uniform(-np.pi, np.pi, (scenarios, agents))
    shape = (scenarios, agents)
    return (
        f(rng.uniform(0.0, 150.0, shape)),
        f(rng.uniform(0.0, 150.0, shape)),
        f(np.cos(heading)),
        f(np.sin(heading)),
        f(np.full(shape, 2.3)),
        f(np.full(shape, 1.0)),
    )


def _all_pairs(x, y, c, s, hl, hw):
    col, row = (lambda v: v[:, None]), (lambda v: v[None, :])  # noqa: E731
    hit = interactions.boxes_overlap(
        row(x) - col(x), row(y) - col(y), col(c), col(s), row(c), row(s), col(hl), col(hw), row(hl), row(hw)
    )
    n = x.shape[0]
    return jnp.sum(hit & (jnp.arange(n)[:, None] < jnp.arange(n)[None, :]))


def _listed(x, y, c, s, hl, hw, *, neighbours: int, how: str):
    n = x.shape[0]
    d2 = jnp.square(x[None, :] - x[:, None]) + jnp.square(y[None, :] - y[:, None])
    d2 = jnp.where(jnp.eye(n, dtype=bool), jnp.inf, d2)
    if how == "top_k":
        index = jax.lax.top_k(-d2, neighbours)[1]
    else:
        lo, hi = jnp.zeros(n), jnp.full(n, 400.0)
        for _ in range(10):
            mid = 0.5 * (lo + hi)
            few = jnp.sum(d2 <= mid[:, None], axis=1) <= neighbours
            lo, hi = jnp.where(few, mid, lo), jnp.where(few, hi, mid)
        index = jax.vmap(lambda r: jnp.nonzero(r, size=neighbours, fill_value=0)[0])(d2 <= lo[:, None])
    g, col = (lambda v: v[index]), (lambda v: v[:, None])  # noqa: E731
    hit = interactions.boxes_overlap(
        g(x) - col(x), g(y) - col(y), col(c), col(s), g(c), g(s), col(hl), col(hw), g(hl), g(hw)
    )
    return jnp.sum(hit & (index > jnp.arange(n)[:, None]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=48)
    parser.add_argument("--agents", type=int, default=128)
    parser.add_argument("--neighbours", type=int, default=16)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    boxes = _boxes(args.scenarios, args.agents)
    k = args.neighbours
    programs = {
        "all_pairs": jax.jit(jax.vmap(_all_pairs)),
        "top_k": jax.jit(jax.vmap(lambda *b: _listed(*b, neighbours=k, how="top_k"))),
        "bisection": jax.jit(jax.vmap(lambda *b: _listed(*b, neighbours=k, how="bisection"))),
    }
    for program in programs.values():
        jax.block_until_ready(program(*boxes))
    times: dict[str, list[float]] = {name: [] for name in programs}
    for r in range(args.calls):
        for name in list(programs)[:: 1 if r % 2 == 0 else -1]:
            start = time.perf_counter()
            jax.block_until_ready(programs[name](*boxes))
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["all_pairs"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:10s} {1e3 * median:8.3f} ms  {median / base:6.2f}x all_pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
