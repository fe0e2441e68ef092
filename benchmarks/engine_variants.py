"""Engine variants side by side in one process: what the exact engine's parts cost on a device.

    python benchmarks/engine_variants.py --scenarios 4096 --rounds 5 --families highway intersection_turns

For each family (``NAME`` or ``NAME:AGENTS``, 32 agents by default) builds one batch (the
scenarios `drivesim bench engine` times) and compiles ``simulate`` as:

- ``default``: the engine as shipped (the batch's search switches fixed in the program);
- ``window_only``: ``neighbours="window_only"``, the same search without the exact fallback
  (the difference is what the fallback costs; on an accelerator a fallback chunk is a whole
  serial rollout, so its cost there is not proportional to the flagged share);
- ``no_store``: ``drivesim.core.materialize.STORE = False`` (values read by several fusions are
  left to XLA's fusion instead of stored once; written for XLA:CPU, unmeasured elsewhere);
- ``all_pairs``: ``neighbours="all_pairs", edge_search="all_lanes"`` (exact by itself, no
  proof, no fallback);
- ``chunk_16`` / ``chunk_256``: the exact fallback in chunks of 16 / 256 scenarios;
- ``per_step_switches``: the junction-zone and bent-route searches switched in every step under
  a real conditional (on a GPU each reads its predicate back to the host), as before the
  engine fixed the batch's switches when it builds the program (core.switches).

``--variants`` picks some of them (``default`` always runs: the ratios are to it).

The programs run in turn, ``--rounds`` rounds of one call each after a warm-up; the table gives
the median wall-clock ms per call, the median of the per-round ratios to ``default`` (host
drift cancels), and whether the metrics equal the default's bit for bit (``window_overflow``
left out: it records the fallback).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import jax
import numpy as np

from drivesim.bench.workloads import Workload, make_batch
from drivesim.core import fallback, materialize, switches
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import rollout_batch
from drivesim.core.types import SimConfig


def _compile(
    batch, config: SimConfig, store: bool = True, chunk: int | None = None, per_step=False
) -> Callable:
    """``rollout_batch`` of ``config`` compiled for ``batch`` under the given switches, with the
    batch's search switches fixed as ``simulate`` does (per_step: decided in each step)."""
    saved = materialize.STORE, fallback.CPU_CHUNK, fallback.ACCELERATOR_CHUNK
    materialize.STORE = store
    if chunk is not None:
        fallback.CPU_CHUNK = fallback.ACCELERATOR_CHUNK = chunk
    searches = None if per_step else switches.of_batch(batch, config)
    try:
        policy = idm_policy()
        program = jax.jit(lambda sc, pol: rollout_batch(sc, pol, config, searches=searches))
        compiled = program.lower(batch, policy).compile()
    finally:
        materialize.STORE, fallback.CPU_CHUNK, fallback.ACCELERATOR_CHUNK = saved
    return lambda: compiled(batch, policy)


VARIANTS = ("default", "window_only", "no_store", "all_pairs", "chunk_16", "chunk_256", "per_step_switches")


def variants(batch, steps: int, names=VARIANTS) -> dict[str, Callable]:
    """The compiled variants of ``names`` (see the module), ``default`` first."""
    base = SimConfig(num_steps=steps)
    build = {
        "default": lambda: _compile(batch, base),
        "window_only": lambda: _compile(batch, SimConfig(num_steps=steps, neighbours="window_only")),
        "no_store": lambda: _compile(batch, base, store=False),
        "all_pairs": lambda: _compile(
            batch, SimConfig(num_steps=steps, neighbours="all_pairs", edge_search="all_lanes")
        ),
        "chunk_16": lambda: _compile(batch, base, chunk=16),
        "chunk_256": lambda: _compile(batch, base, chunk=256),
        "per_step_switches": lambda: _compile(batch, base, per_step=True),
    }
    return {name: build[name]() for name in ["default"] + [n for n in names if n != "default"]}


def same_metrics(a, b) -> bool:
    """Whether RolloutMetrics ``a`` and ``b`` agree bit for bit (NaN equals NaN)."""
    fields = [f for f in a.__dataclass_fields__ if f != "window_overflow"]
    pairs = [(np.asarray(getattr(a, f)), np.asarray(getattr(b, f))) for f in fields]
    return all(np.array_equal(x, y, equal_nan=x.dtype.kind == "f") for x, y in pairs)


def measure(spec: str, args) -> None:
    """Print the table rows of family ``spec``."""
    name, _, agents = spec.partition(":")
    batch = jax.device_put(make_batch(Workload(args.scenarios, int(agents or 32), args.steps, name)))
    runs = variants(batch, args.steps, args.variants)
    outputs = {k: jax.device_get(run()) for k, run in runs.items()}  # warm-up
    flagged = int(np.sum(outputs["default"].window_overflow))
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for k, run in runs.items():
            t0 = time.perf_counter()
            jax.block_until_ready(run())
            times[k].append(time.perf_counter() - t0)
    base = np.array(times["default"])
    for k, ts in times.items():
        ratio = np.array(ts) / base
        same = "yes" if same_metrics(outputs[k], outputs["default"]) else "no"
        print(
            f"| {spec} | {k} | {np.median(ts) * 1e3:.2f} | {np.median(ratio):.3f} "
            f"[{ratio.min():.3f}..{ratio.max():.3f}] | {same} | {flagged} |",
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
    print("| family | variant | ms per call | ratio to default [range] | same metrics | flagged (default) |")
    print("|---|---|---|---|---|---|")
    for spec in args.families:
        measure(spec, args)


if __name__ == "__main__":
    main()
