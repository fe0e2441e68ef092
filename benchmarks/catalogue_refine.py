"""Grid refinement vs a dense grid of the same boundary resolution (markdown on stdout).

    python benchmarks/catalogue_refine.py [--rounds 3] [--repeats 3] [--out /tmp/refine-bench]

The red-light runner over tta=-4:4:9, speed=5:25:5 (constant ego, 80 steps) refined ``rounds``
times (``drivesim.pipeline.refinement``), against the dense grid whose spacing is the refined
one everywhere (tta and speed spacing / 2^rounds). Both run in this process, alternating which
goes first, after one warm-up run that compiles the program; wall time is the campaigns' (grid
and rounds included, no dashboard). Per base speed, the tta bracket of each band edge
(largest collided tta, smallest safe one beyond it) is compared between the two.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import statistics
import time

from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import CampaignConfig
from drivesim.pipeline.refinement import RefineSettings, refine_campaign
from drivesim.pipeline.results import query
from drivesim.scenarios.catalogue import param_sql

FAMILY = "red_light_runner"
TTA, SPEED = (-4.0, 4.0, 9), (5.0, 25.0, 5)  # START, STOP, COUNT of the base grid


def spec(rounds: int) -> str:
    """The grid with spacing / 2^rounds."""
    scale = 2**rounds
    tta, speed = ((lo, hi, (n - 1) * scale + 1) for lo, hi, n in (TTA, SPEED))
    return f"catalogue:{FAMILY}?tta={tta[0]:g}:{tta[1]:g}:{tta[2]},speed={speed[0]:g}:{speed[1]:g}:{speed[2]}"


def config(out: pathlib.Path, source: str) -> CampaignConfig:
    shutil.rmtree(out, ignore_errors=True)
    return CampaignConfig(sources=(source,), policy="constant", num_steps=80, out=str(out))


def brackets(directory: pathlib.Path) -> dict[tuple[float, float], tuple[float, float]]:
    """{(base speed, side): (largest collided |tta|, smallest safe |tta| beyond it)}."""
    rows = query(
        directory,
        f"SELECT {param_sql('tta')} AS tta, {param_sql('speed')} AS speed, ego_collided FROM results",
    ).to_pylist()
    out = {}
    base_speeds = [SPEED[0] + k * (SPEED[1] - SPEED[0]) / (SPEED[2] - 1) for k in range(SPEED[2])]
    for speed in base_speeds:
        for side in (1.0, -1.0):
            line = sorted((side * r["tta"], r["ego_collided"]) for r in rows if r["speed"] == speed)
            line = [(t, hit) for t, hit in line if t >= 0]
            inside = max(t for t, hit in line if hit)
            out[(speed, side)] = (inside, min(t for t, hit in line if not hit and t > inside))
    return out


def run_refined(out: pathlib.Path, rounds: int) -> tuple[float, int]:
    start = time.perf_counter()
    result = run_campaign(config(out, spec(0)))
    total = [result.total]

    def run(cfg):
        done = run_campaign(cfg)
        total.append(done.total)
        return done

    refine_campaign(out, RefineSettings(rounds), run)
    return time.perf_counter() - start, total[-1]


def run_dense(out: pathlib.Path, rounds: int) -> tuple[float, int]:
    start = time.perf_counter()
    result = run_campaign(config(out, spec(rounds)))
    return time.perf_counter() - start, result.total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("/tmp/refine-bench"))
    args = parser.parse_args()
    run_campaign(config(args.out / "warmup", f"catalogue:{FAMILY}?tta=-1:1:3"))  # compiles the program
    times: dict[str, list[float]] = {"refined": [], "dense": []}
    counts = {}
    for k in range(args.repeats):
        order = [("refined", run_refined), ("dense", run_dense)]
        for name, fn in order if k % 2 == 0 else order[::-1]:
            seconds, counts[name] = fn(args.out / name, args.rounds)
            times[name].append(seconds)
    found = {name: brackets(args.out / name) for name in times}
    print(f"rounds {args.rounds}; refined base {spec(0)}; dense {spec(args.rounds)}")
    print("| grid | scenarios | wall s median (min..max) |\n|---|---|---|")
    for name, values in times.items():
        spread = f"{min(values):.2f}..{max(values):.2f}"
        print(f"| {name} | {counts[name]:,} | {statistics.median(values):.2f} ({spread}) |")
    ratio = [d / r for d, r in zip(times["dense"], times["refined"], strict=True)]
    print(
        f"\ndense / refined wall: median {statistics.median(ratio):.2f} ({min(ratio):.2f}..{max(ratio):.2f})"
    )
    print("\n| speed | side | refined bracket | dense bracket |\n|---|---|---|---|")
    for key, (lo, hi) in found["refined"].items():
        dlo, dhi = found["dense"][key]
        print(f"| {key[0]:g} | {'+' if key[1] > 0 else '-'} | {lo:g}..{hi:g} | {dlo:g}..{dhi:g} |")


if __name__ == "__main__":
    main()
