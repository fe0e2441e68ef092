"""Engine benchmark: W8 / W32 / W128 = 4096 highway scenarios x N agents x 80 steps.

    .venv/bin/python benchmarks/engine.py            # full: 4096 scenarios, 5 repeats
    .venv/bin/python benchmarks/engine.py --quick    # 512 scenarios, 3 repeats (smoke test)

Each workload runs on one CPU device and on all of the process's CPU devices (the batch
sharded over them), in the same process: the process asks XLA for
drivesim.parallel.cpu_devices.DEVICES_PER_CORE devices per usable core, as the CLI does.

Prints a Markdown table for BENCHMARKS.md (median agent-steps/s with p5..p95 and the 95% CI,
scenarios/s, compile time) and the cost per agent-step at 128 vs 32 agents (target <= 1.5).
Records are appended to OUT/bench/engine.jsonl (BenchRecord schema). ``--record MACHINE``
also replaces the current figures of W32 on all devices and of the 128-vs-32 cost in
benchmarks/figures.json (MACHINE: a name of BENCHMARKS.md's Machine table) and renders the
table of BENCHMARKS.md again.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from drivesim.parallel import cpu_devices

cpu_devices.enable()  # before JAX starts: DEVICES_PER_CORE CPU devices per usable core

from drivesim.bench.engine import (  # noqa: E402
    COST_RATIO_TARGET,
    DEFAULT_AGENTS,
    EngineSweep,
    markdown_table,
    run_engine_sweep,
)
from drivesim.bench.harness import HarnessConfig  # noqa: E402
from drivesim.bench.records import append_records  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512 scenarios, 3 repeats")
    parser.add_argument("--agents", type=int, nargs="+", default=list(DEFAULT_AGENTS))
    parser.add_argument("--scenarios", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="runs/bench")
    parser.add_argument(
        "--record",
        metavar="MACHINE",
        help="replace the engine's current figures in benchmarks/figures.json, measured on MACHINE",
    )
    parser.add_argument(
        "--conditions",
        choices=("auto", "idle", "quiet", "loaded"),
        default="auto",
        help="with --record: what else ran (auto: from the load average before the run)",
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    scenarios, repeats = (512, 3) if args.quick else (args.scenarios, args.repeats)
    import jax

    device_counts = sorted({1, len(jax.devices())})
    harness = HarnessConfig(repeats=repeats, warmup=1)
    sweep = EngineSweep(tuple(args.agents), scenarios, args.steps, harness, tuple(device_counts))
    records, ratios = run_engine_sweep(sweep)
    append_records(f"{args.out}/bench/engine.jsonl", records)
    r0 = records[0]
    print(
        f"\nEngine ({r0.device_kind}, {r0.platform}, JAX {r0.jax_version}, {r0.machine}; "
        f"median of {repeats} repeats after 1 warm-up, compile apart)\n"
    )
    print(markdown_table(records))
    for devices, ratio in ratios.items():
        verdict = "meets" if ratio <= COST_RATIO_TARGET else "misses"
        print(
            f"\n{devices} device(s): cost per agent-step, 128 vs 32 agents: {ratio:.2f}x "
            f"({verdict} the <= {COST_RATIO_TARGET} target)"
        )
    if args.record and not args.quick:
        conditions = args.conditions
        if conditions == "auto":
            conditions = "idle" if load_before < 0.3 else "quiet" if load_before < 1.0 else "loaded"
        given = list(argv if argv is not None else sys.argv[1:])
        kept = [a for i, a in enumerate(given) if not _record_option(given, i)]
        command = shlex.join([".venv/bin/python", "benchmarks/engine.py", *kept])
        record_figures(records, ratios, args.record, conditions, command)
    return 0


def _record_option(argv: list[str], i: int) -> bool:
    """Whether argv[i] is --record/--conditions or its value (left out of the recorded command)."""
    options = ("--record", "--conditions")
    return (
        argv[i] in options
        or argv[i].startswith(tuple(o + "=" for o in options))
        or (i > 0 and argv[i - 1] in options)
    )


def record_figures(records, ratios, machine: str, conditions: str, command: str) -> None:
    """W32 on the most devices, and its 128-vs-32 cost, as the current figures of BENCHMARKS.md."""
    import figures  # benchmarks/figures.py, beside this script

    most = max(r.device_count for r in records)
    by_workload = {r.workload: r for r in records if r.device_count == most}
    w32 = by_workload.get("W32")
    if w32 is None or w32.scenarios_per_s is None or w32.agent_steps_per_s is None:
        return
    rate, steps = w32.scenarios_per_s, w32.agent_steps_per_s
    figures.record(
        "engine-w32",
        value=round(rate["median"]),
        spread=(
            f"{rate['p5']:,.0f} – {rate['p95']:,.0f} (p5–p95 of {rate['n']}); "
            f"{steps['median'] / 1e6:.2f} M agent-steps/s"
        ),
        command=command,
        machine=machine,
        conditions=conditions,
        goal_met=steps["median"] >= 40e6,
    )
    w128, ratio = by_workload.get("W128"), ratios.get(most)
    if w128 is not None and w128.scenarios_per_s is not None and ratio is not None:
        w128_steps = w128.rate("agent_steps_per_s") / 1e6
        figures.record(
            "engine-cost-128-vs-32",
            value=round(ratio, 2),
            spread=f"one run; W128 {w128.rate():,.0f} scenarios/s ({w128_steps:.2f} M agent-steps/s)",
            command=command,
            machine=machine,
            conditions=conditions,
            goal_met=ratio <= COST_RATIO_TARGET,
        )


if __name__ == "__main__":
    sys.exit(main())
