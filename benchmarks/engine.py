"""Engine benchmark: W8 / W32 / W128 = 4096 highway scenarios x N agents x 80 steps.

    .venv/bin/python benchmarks/engine.py            # full: 4096 scenarios, 5 repeats
    .venv/bin/python benchmarks/engine.py --quick    # 512 scenarios, 3 repeats (smoke test)

Each workload runs on one CPU device and on all of the process's CPU devices (the batch
sharded over them), in the same process: the process asks XLA for
drivesim.parallel.cpu_devices.DEVICES_PER_CORE devices per usable core, as the CLI does.

Prints a Markdown table for BENCHMARKS.md (median agent-steps/s with p5..p95 and the 95% CI,
scenarios/s, compile time) and the cost per agent-step at 128 vs 32 agents (target <= 1.5).
Records are appended to OUT/bench/engine.jsonl (BenchRecord schema).
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args(argv)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
