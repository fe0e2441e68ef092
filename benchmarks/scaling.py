"""Scaling benchmark: strong (and weak) scaling over pinned processes / devices.

    .venv/bin/python benchmarks/scaling.py                 # W32 strong, up to 2 devices
    .venv/bin/python benchmarks/scaling.py --quick         # 512 x 32 x 80, 3 repeats
    .venv/bin/python benchmarks/scaling.py --mode weak --max-devices 2

On CPU each device count N runs N processes, process i pinned to core i (taskset), joined by
jax.distributed. Prints a Markdown table for BENCHMARKS.md (scenarios/s, speed-up,
efficiency = thr(N) / (N thr(1)), cost per million scenarios) and the Amdahl fit; the target
on the 2-core machine is strong-scaling efficiency >= 0.9 on W32 at N = 2.
Records are appended to OUT/scale/<mode>.jsonl.
"""

from __future__ import annotations

import argparse
import sys

from drivesim.bench.records import append_records
from drivesim.bench.scaling import ScaleConfig, run_scaling
from drivesim.bench.workloads import Workload


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512 scenarios, 3 repeats")
    parser.add_argument("--mode", choices=("strong", "weak", "both"), default="strong")
    parser.add_argument("--max-devices", type=int, default=2)
    parser.add_argument("--scenarios", type=int, default=4096)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--engine", choices=("executor", "simulate"), default="executor")
    parser.add_argument("--price", type=float, default=None, help="USD per device-hour")
    parser.add_argument("--out", default="runs/bench")
    parser.add_argument("--check", action="store_true", help="exit 1 if strong efficiency at N=2 < 0.9")
    args = parser.parse_args(argv)
    scenarios, repeats = (512, 3) if args.quick else (args.scenarios, args.repeats)
    modes = ("strong", "weak") if args.mode == "both" else (args.mode,)
    failed = False
    for mode in modes:
        config = ScaleConfig(
            mode=mode,
            max_devices=args.max_devices,
            repeats=repeats,
            price=args.price,
            workload=Workload(scenarios, args.agents, args.steps),
            engine=args.engine,
        )
        records = run_scaling(config)
        append_records(f"{args.out}/scale/{mode}.jsonl", records)
        failed |= _print(mode, records)
    return 1 if (failed and args.check) else 0


def _print(mode: str, records) -> bool:
    points = [r for r in records if r.kind == "scale"]
    r0 = points[0]
    print(
        f"\n{mode.capitalize()} scaling, {r0.workload}{' per device' if mode == 'weak' else ''} "
        f"({r0.device_kind}, {r0.backend}, JAX {r0.jax_version}, {r0.machine}; median of {r0.repeats})\n"
    )
    print("| devices | scenarios/s | p5 .. p95 | speed-up | efficiency | $ / M scenarios |")
    print("|---|---|---|---|---|---|")
    for r in points:
        s = r.scenarios_per_s
        cost = f"{r.cost_per_million:.4g}" if r.cost_per_million is not None else "n/a"
        print(
            f"| {r.device_count} | {s['median']:,.1f} | {s['p5']:,.1f} .. {s['p95']:,.1f} | "
            f"{r.speedup:.2f} | {r.efficiency:.2f} | {cost} |"
        )
    for fit in (r for r in records if r.kind == "amdahl"):
        print(
            f"\nAmdahl: serial fraction p = {fit.serial_fraction:.4f} +- {fit.serial_fraction_std:.4f}, "
            f"predicted ceiling {fit.ceiling:.1f}x"
        )
    two = next((r for r in points if r.device_count == 2), None)
    if mode == "strong" and two is not None:
        ok = two.efficiency >= 0.9
        print(f"strong efficiency at 2 devices: {two.efficiency:.2f} ({'meets' if ok else 'misses'} >= 0.9)")
        return not ok
    return False


if __name__ == "__main__":
    sys.exit(main())
