"""The road-edge search per own route against every lane: speed-up and bit-identity per family.

    .venv/bin/python benchmarks/edges.py --scenarios 256 --repeats 3 \
        --families highway merge intersection intersection_turns

For each family (``NAME``, ``NAME:AGENTS`` or ``NAME?signals`` / ``NAME?pedestrians``), builds
one batch and compiles ``simulate`` with ``SimConfig(search=SearchPlan(edge_search="all_lanes"))`` (every box
corner against every lane, the search before 2026-11-27) and with the default
``"own_route"`` (drivesim.core.edges). The two programs run alternately, ``--repeats`` rounds,
in this one process; the table gives CPU-seconds medians per call (``time.process_time``, so
other load on the host changes it little), the median of the per-round ratios, the share of
scenarios the exact fallback simulated again, and the metric fields that differ (NaN equals
NaN; ``window_overflow`` is left out, it records the fallback). Run it with
``DRIVESIM_FMA_FREE=1`` for the bit-identity the suite checks.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import SimConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

SEARCHES = ("all_lanes", "own_route")
FAMILIES = ("highway", "merge", "intersection", "intersection_turns")


def family_batch(spec: str, scenarios: int, steps: int):
    """Batch of ``scenarios`` of family ``spec`` (NAME[:AGENTS][?option])."""
    spec, _, option = spec.partition("?")
    name, _, agents = spec.partition(":")
    cfg = FamilyConfig(num_agents=int(agents or 32), steps=steps, **({option: True} if option else {}))
    records = [generate(name, i, cfg).scenario for i in range(scenarios)]
    return pad_and_stack(records, num_agents=cfg.num_agents)


def differing(a, b) -> list[str]:
    """Metric fields of RolloutMetrics ``a`` and ``b`` (host arrays) that are not identical."""
    out = []
    for field in a.__dataclass_fields__:
        x, y = np.asarray(getattr(a, field)), np.asarray(getattr(b, field))
        if field != "window_overflow" and not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            out.append(field)
    return out


def measure(spec: str, args) -> str:
    """One table row for family ``spec``."""
    batch = jax.device_put(family_batch(spec, args.scenarios, args.steps))
    policy = idm_policy()
    configs = {s: SimConfig(num_steps=args.steps, search=SearchPlan(edge_search=s)) for s in SEARCHES}
    results = {s: jax.device_get(simulate(batch, policy, c)) for s, c in configs.items()}  # compiles
    cpu: dict[str, list[float]] = {s: [] for s in SEARCHES}
    for _ in range(args.repeats):
        for s, c in configs.items():
            start = time.process_time()
            jax.block_until_ready(simulate(batch, policy, c))
            cpu[s].append(time.process_time() - start)
    ratio = np.median([a / b for a, b in zip(cpu["all_lanes"], cpu["own_route"], strict=True)])
    fallback = " / ".join(f"{np.mean(results[s].window_overflow):.1%}" for s in SEARCHES)  # all / own
    diff = ", ".join(differing(results["all_lanes"], results["own_route"])) or "none"
    every, own = (float(np.median(cpu[s])) for s in SEARCHES)
    return f"| {spec} | {every:.3f} | {own:.3f} | {ratio:.2f}x | {fallback} | {diff} |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=256)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    args = parser.parse_args(argv)
    header = ["family", "all_lanes CPU s", "own_route CPU s", "speed-up", "fallback (both)", "differing"]
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|---|---|---|")
    for spec in args.families:
        print(measure(spec, args), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
