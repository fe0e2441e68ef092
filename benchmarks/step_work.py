"""Work per step of the synthetic families, counted in the compiled program.

    python benchmarks/step_work.py --families highway merge intersection intersection_turns
    XLA_FLAGS=--xla_force_host_platform_device_count=8 \
        python benchmarks/step_work.py --rounds 5 --scenarios 2048

For each family (``NAME`` or ``NAME:AGENTS``, 32 agents by default) builds the batch `drivesim
bench engine` times (``--scenarios`` of them), compiles ``rollout_batch`` with the batch's
search switches fixed as ``simulate`` fixes them (drivesim.bench.step_work.family_program) and
counts the elements its time loop produces per step: per scenario-step, as a ratio to the first
family, and the ``--top`` functions (``--by file``: files) that produce most of them. The
count is the same on every run; it measures work, not time. ``--rounds N`` also times the
programs with the batch sharded over every device JAX sees (compiled again for that), N
alternating rounds of 3 calls (the best of 3 counts), and gives each family's time per counted
element as a ratio to the first family's: near 1, the count predicts the time (BENCHMARKS.md
"Work per step").
"""

from __future__ import annotations

import argparse
import statistics

import jax

from drivesim.bench.harness import HarnessConfig, time_calls
from drivesim.bench.step_work import FamilyProgram, family_program


def _timed(programs: list[FamilyProgram], rounds: int) -> list[list[float]]:
    """Wall seconds per call of each program (best of 3), ``rounds`` rounds in alternating order."""
    for program in programs:
        jax.block_until_ready(program.run())  # warm-up
    three = HarnessConfig(repeats=3, warmup=0)
    times: list[list[float]] = [[] for _ in programs]
    for r in range(rounds):
        for i in range(len(programs)) if r % 2 == 0 else reversed(range(len(programs))):
            times[i].append(min(time_calls(programs[i].run, three)))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    families = ["highway", "merge", "intersection", "intersection_turns"]
    parser.add_argument("--families", nargs="+", default=families)
    parser.add_argument("--scenarios", type=int, default=256)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--top", type=int, default=6)
    parser.add_argument(
        "--by", choices=("function", "file"), default="function", help="attribution of the top"
    )
    parser.add_argument("--rounds", type=int, default=0, help="time the programs too (0: count only)")
    args = parser.parse_args()
    print(f"device: {jax.devices()[0].device_kind} x {len(jax.devices())}, JAX {jax.__version__}")
    programs = [family_program(spec, args.scenarios, args.steps) for spec in args.families]
    works = [p.work() for p in programs]
    per = [w.total() / p.share for p, w in zip(programs, works, strict=True)]
    print("| family | agents | elements per scenario-step | arithmetic | moved | ratio to the first |")
    print("|---|---|---|---|---|---|")
    for program, work, counted in zip(programs, works, per, strict=True):
        arith, moved = sum(work.arith.values()) / program.share, sum(work.moved.values()) / program.share
        print(
            f"| {program.workload.family} | {program.workload.agents} | {counted:,.0f} | "
            f"{arith:,.0f} | {moved:,.0f} | {counted / per[0]:.2f} |"
        )
    print(f"\n| family | agents | {args.by} | elements per scenario-step | share |")
    print("|---|---|---|---|---|")
    for program, work in zip(programs, works, strict=True):
        top = work.by_file() if args.by == "file" else work
        label = f"{program.workload.family} | {program.workload.agents}"
        for name, arith, moved in top.top(args.top):
            elements = (arith + moved) / program.share
            print(f"| {label} | `{name}` | {elements:,.0f} | {(arith + moved) / work.total():.0%} |")
    if args.rounds:
        devices = len(jax.devices())
        timed = [family_program(spec, args.scenarios, args.steps, devices) for spec in args.families]
        times = _timed(timed, args.rounds)
        print("\n| family | agents | ms per call (median) | time ratio to the first [range] | per element |")
        print("|---|---|---|---|---|")
        for program, counted, own in zip(timed, per, times, strict=True):
            ratios = [t / f for t, f in zip(own, times[0], strict=True)]
            ratio, ms = statistics.median(ratios), statistics.median(own) * 1e3
            print(
                f"| {program.workload.family} | {program.workload.agents} | {ms:.0f} | "
                f"{ratio:.2f} [{min(ratios):.2f}..{max(ratios):.2f}] | {ratio / (counted / per[0]):.2f} |"
            )


if __name__ == "__main__":
    main()
