"""Engine variants side by side in one process: what the exact engine's parts cost on a device.

    python benchmarks/engine_variants.py --scenarios 4096 --rounds 5 --families highway intersection_turns

For each family (``NAME`` or ``NAME:AGENTS``, 32 agents by default) builds one batch (the
scenarios `drivesim bench engine` times) and compiles ``simulate`` as:

- ``default``: the engine as shipped: ``SimConfig``'s defaults, whose searches are the
  platform's (core.search_choice: the window search on the CPU, all pairs on accelerators up
  to 128 agents), the batch's search switches fixed in the program;
- ``window``: ``neighbours="window", edge_search="own_route"`` (the CPU's choice, and the
  engine's default everywhere before the searches became the platform's);
- ``window_only``: the window search without the exact fallback (the difference to
  ``window`` is what the fallback costs; on an accelerator a fallback chunk is a whole serial
  rollout, so its cost there is not proportional to the flagged share);
- ``no_store``: ``window`` with ``SearchPlan(store=False)`` (values read by
  several fusions are left to XLA's fusion instead of stored once; written for XLA:CPU);
- ``reduce_store``: the default with ``SearchPlan(branch_stores=False)`` (every
  stored value through the identity reduction, none through a conditional: the engine
  before 2026-11-28; on XLA:CPU the reduction runs its fused producer an element at a time);
- ``all_pairs``: ``neighbours="all_pairs", edge_search="all_lanes"`` (exact by itself, no
  proof, no fallback: the accelerators' choice);
- ``all_pairs_own_route``: all pairs with each corner against its own route (the road edges
  still proven, a scenario with too many agents near an edge simulated again);
- ``chunk_16`` / ``chunk_256``: ``window`` with the exact fallback in chunks of 16 / 256
  scenarios;
- ``libm``: the default with ``SearchPlan(vectorised_trig=False)`` (sine, cosine and the
  IDM's free-road power from ``jnp.sin``, ``jnp.cos`` and ``jnp.power``: one element at a time
  through the C library on XLA:CPU);
- ``near_2`` / ``near_8``: the default with 2 / 8 agents near their corridor's edge measured
  against every lane per step (``drivesim.core.edges`` capacity; 2 on the CPU and 4 on
  accelerators by default; matters where the own-route search runs);
- ``per_step_switches``: ``window`` with the junction-zone and bent-route searches switched in
  every step under a real conditional (on a GPU each reads its predicate back to the host), as
  before the engine fixed the batch's switches when it builds the program (core.switches).

``--variants`` picks some of them (``default`` always runs: the ratios are to it).

Programs are lowered one by one and compiled in parallel threads (XLA compiles outside
Python's lock; on a fresh GPU machine compiling is most of the run). They run in turn,
``--rounds`` rounds of one call each after a warm-up; the table gives the median wall-clock
ms per call, the median of the per-round ratios to ``default`` (host drift cancels), and
whether the metrics equal the default's bit for bit (``window_overflow`` left out: it records
the fallback).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from drivesim.bench.workloads import Workload, make_batch
from drivesim.core import edges, fallback, switches
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import rollout_batch
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import SimConfig

# Module constants a variant may set while its program is traced: option -> (module, names).
_CONSTANTS = {
    "chunk": (fallback, ("CPU_CHUNK", "ACCELERATOR_CHUNK")),
    "near": (edges, ("CPU_CAPACITY", "ACCELERATOR_CAPACITY")),
}


def _lower(batch, config: SimConfig, options: dict):
    """``rollout_batch`` of ``config`` lowered for ``batch`` with the module constants of
    ``options`` (:data:`_CONSTANTS`) set while tracing, and the batch's search switches fixed
    as ``simulate`` does (``per_step``: decided in each step). The switches are read while
    tracing, so lowering is serial; compiling is not."""
    saved = {(module, name): getattr(module, name) for module, names in _CONSTANTS.values() for name in names}
    for option, value in options.items():
        if option in _CONSTANTS:  # "per_step" is not a constant: it picks the switches below
            module, names = _CONSTANTS[option]
            for name in names:
                setattr(module, name, value)
    searches = None if options.get("per_step") else switches.of_batch(batch, config)
    try:
        return jax.jit(lambda sc, pol: rollout_batch(sc, pol, config, searches=searches)).lower(
            batch, idm_policy()
        )
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)


VARIANTS = (
    "default",
    "window",
    "window_only",
    "no_store",
    "reduce_store",
    "all_pairs",
    "all_pairs_own_route",
    "chunk_16",
    "chunk_256",
    "per_step_switches",
    "libm",
    "near_2",
    "near_8",
)


def variants(batch, steps: int, names=VARIANTS) -> dict[str, Callable]:
    """The compiled variants of ``names`` (see the module), ``default`` first."""
    window = SimConfig(num_steps=steps, search=SearchPlan(neighbours="window", edge_search="own_route"))
    default = SimConfig(num_steps=steps)
    config = {
        "default": default,
        "window_only": window.with_search(neighbours="window_only"),
        "all_pairs": SimConfig(
            num_steps=steps, search=SearchPlan(neighbours="all_pairs", edge_search="all_lanes")
        ),
        "all_pairs_own_route": SimConfig(
            num_steps=steps, search=SearchPlan(neighbours="all_pairs", edge_search="own_route")
        ),
        "no_store": window.with_search(store=False),
        "libm": default.with_search(vectorised_trig=False),
        "reduce_store": default.with_search(branch_stores=False),
        "near_2": default,
        "near_8": default,
    }
    options = {
        "chunk_16": {"chunk": 16},
        "chunk_256": {"chunk": 256},
        "per_step_switches": {"per_step": True},
        "near_2": {"near": 2},
        "near_8": {"near": 8},
    }
    chosen = ["default"] + [n for n in names if n != "default"]
    lowered = {n: _lower(batch, config.get(n, window), options.get(n, {})) for n in chosen}
    with ThreadPoolExecutor(max_workers=len(lowered)) as pool:
        compiled = dict(zip(lowered, pool.map(lambda low: low.compile(), lowered.values()), strict=True))
    policy = idm_policy()
    return {n: (lambda program=program: program(batch, policy)) for n, program in compiled.items()}


def same_metrics(a, b) -> str:
    """ "yes" where RolloutMetrics ``a`` and ``b`` agree bit for bit (NaN equals NaN), else how
    far apart: the scenarios that differ, each differing field with its count of scenarios,
    and the largest relative difference of a float field."""
    fields = [f for f in a.__dataclass_fields__ if f != "window_overflow"]
    differ, worst, counts = None, 0.0, []
    for f in fields:
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        same = x == y
        if x.dtype.kind == "f":
            same |= np.isnan(x) & np.isnan(y)
            with np.errstate(invalid="ignore", divide="ignore"):
                gap = np.abs(x - y) / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1e-30)
            worst = max(worst, float(np.where(same, 0.0, np.nan_to_num(gap, nan=np.inf)).max(initial=0.0)))
        rows = ~same.reshape(same.shape[0], -1).all(axis=1)
        if rows.any():
            counts.append(f"{f} {int(rows.sum())}")
        differ = rows if differ is None else differ | rows
    if differ is None or not differ.any():
        return "yes"
    return f"no: {int(differ.sum())} scenarios ({', '.join(counts)}), max rel float {worst:.1e}"


def measure(spec: str, args) -> None:
    """Print the table rows of family ``spec``."""
    name, _, agents = spec.partition(":")
    batch = jax.device_put(make_batch(Workload(args.scenarios, int(agents or 32), args.steps, name)))
    runs = variants(batch, args.steps, args.variants)
    outputs = {k: jax.device_get(run()) for k, run in runs.items()}  # warm-up
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for k, run in runs.items():
            t0 = time.perf_counter()
            jax.block_until_ready(run())
            times[k].append(time.perf_counter() - t0)
    base = np.array(times["default"])
    for k, ts in times.items():
        ratio = np.array(ts) / base
        same = same_metrics(outputs[k], outputs["default"])
        print(
            f"| {spec} | {k} | {np.median(ts) * 1e3:.2f} | {np.median(ratio):.3f} "
            f"[{ratio.min():.3f}..{ratio.max():.3f}] | {same} | {int(np.sum(outputs[k].window_overflow))} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--families", nargs="+", default=["highway"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--quick", action="store_true", help="16 scenarios, 10 steps, 1 round: runs at all")
    args = parser.parse_args()
    if args.quick:
        args.scenarios, args.steps, args.rounds = 16, 10, 1
    print(f"device: {jax.devices()[0].device_kind}, {args.scenarios} scenarios x {args.steps} steps")
    t0 = time.perf_counter()
    print("| family | variant | ms per call | ratio to default [range] | same metrics | flagged |")
    print("|---|---|---|---|---|---|")
    for spec in args.families:
        measure(spec, args)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
