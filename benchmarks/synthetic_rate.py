"""Marginal campaign rate of a synthetic source against the engine, in one run.

Runs ``drivesim bench engine --agents A`` and two ``drivesim run --source synthetic:FAMILY``
campaigns (``--small`` and ``--large`` scenarios, each in a fresh process, so start-up and
compile cancel in the difference) and prints one JSON object per measurement, then the ratio
of the marginal campaign rate (extra scenarios / extra wall seconds) to the engine rate.

    .venv/bin/python benchmarks/synthetic_rate.py --small 4096 --large 20480 --batch 4096

``--tree DIR`` runs the same commands against another checkout of drivesim (its package
directory first on PYTHONPATH), e.g. an exported older commit, so before and after are measured
side by side on the same loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CLI = "from drivesim.cli import main; main()"


def _env(tree: str | None) -> dict:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _drivesim(args: list[str], tree: str | None) -> tuple[float, str]:
    """Wall seconds and stdout of ``drivesim ARGS`` in a fresh process."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args], env=_env(tree), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"drivesim {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return wall, done.stdout


def engine_rate(agents: int, tree: str | None) -> float:
    """Median scenarios/s of ``bench engine`` (4096 scenarios, 80 steps)."""
    _, out = _drivesim(["bench", "engine", "--agents", str(agents), "--repeats", "3", "--json"], tree)
    rates = []
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        value = row.get("scenarios_per_s")
        if isinstance(value, dict):
            rates.append(float(value["median"]))
    if not rates:
        raise RuntimeError(f"no rate in bench engine output:\n{out[-2000:]}")
    return statistics.median(rates)


def campaign_wall(count: int, args, tree: str | None) -> float:
    """Wall seconds of one fresh campaign of ``count`` scenarios."""
    with tempfile.TemporaryDirectory(prefix="drivesim-rate-") as out:
        run = ["run", "--source", f"synthetic:{args.family}", "--count", str(count)]
        run += ["--agents", str(args.agents), "--batch-size", str(args.batch), "--out", out]
        wall, _ = _drivesim(run, tree)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=4096)
    parser.add_argument("--large", type=int, default=20480)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--family", default="highway")
    parser.add_argument("--tree", default=None, help="checkout whose drivesim package to measure")
    args = parser.parse_args()
    label = args.tree or "this tree"
    engine = engine_rate(args.agents, args.tree)
    print(json.dumps({"what": "engine", "tree": label, "scenarios_per_s": round(engine, 1)}), flush=True)
    small = campaign_wall(args.small, args, args.tree)
    large = campaign_wall(args.large, args, args.tree)
    marginal = (args.large - args.small) / (large - small)
    row = {
        "what": "campaign",
        "tree": label,
        "family": args.family,
        "agents": args.agents,
        "batch": args.batch,
        "small": [args.small, round(small, 2)],
        "large": [args.large, round(large, 2)],
        "marginal_scenarios_per_s": round(marginal, 1),
        "ratio_to_engine": round(marginal / engine, 3),
    }
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
