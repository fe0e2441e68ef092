"""Engine benchmark (issue 2): W8 / W32 / W128 = 4096 highway scenarios x N agents x 80 steps.

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

from drivesim.bench.engine import EngineConfig, agent_step_cost_ratio, run_engine  # noqa: E402
from drivesim.bench.harness import HarnessConfig  # noqa: E402
from drivesim.bench.records import append_records  # noqa: E402
from drivesim.bench.workloads import Workload  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512 scenarios, 3 repeats")
    parser.add_argument("--agents", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--scenarios", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="runs/bench")
    args = parser.parse_args(argv)
    scenarios, repeats = (512, 3) if args.quick else (args.scenarios, args.repeats)
    harness = HarnessConfig(repeats=repeats, warmup=1)
    import jax

    device_counts = sorted({1, len(jax.devices())})
    records = []
    for devices in device_counts:
        for n in args.agents:
            print(f"{scenarios} x {n} agents x {args.steps} steps on {devices} device(s) ...",
                  file=sys.stderr, flush=True)
            config = EngineConfig(Workload(scenarios, n, args.steps), harness, devices=devices)
            records.append(run_engine(config))
    append_records(f"{args.out}/bench/engine.jsonl", records)
    r0 = records[0]
    print(f"\nEngine ({r0.device_kind}, {r0.platform}, JAX {r0.jax_version}, {r0.machine}; "
          f"median of {repeats} repeats after 1 warm-up, compile apart)\n")
    print("| workload | devices | agent-steps/s (median) | p5 .. p95 | 95% CI | scenarios/s | compile s |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        a, s = r.agent_steps_per_s, r.scenarios_per_s
        print(f"| {r.workload} | {r.device_count} | {a['median'] / 1e6:.2f} M "
              f"| {a['p5'] / 1e6:.2f} .. {a['p95'] / 1e6:.2f} M "
              f"| {a['ci_low'] / 1e6:.2f} .. {a['ci_high'] / 1e6:.2f} M | {s['median']:,.0f} "
              f"| {r.compile_s:.1f} |")
    for devices in device_counts:
        by = {r.agents: r for r in records if r.device_count == devices}
        if 32 in by and 128 in by:
            ratio = agent_step_cost_ratio(by[128], by[32])
            print(f"\n{devices} device(s): cost per agent-step, 128 vs 32 agents: {ratio:.2f}x "
                  f"({'meets' if ratio <= 1.5 else 'misses'} the <= 1.5 target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
