"""The user's path: ``drivesim run`` with its defaults against ``drivesim bench engine``.

    .venv/bin/python benchmarks/user_path.py            # [--agents 32] [--counts 65536 131072] [--pairs 2]

Runs, as a user would, ``drivesim run --source synthetic:highway --agents A --count N`` with no
batch flag (``--batch-size auto``) for a small and a large N, alternating, each a fresh
campaign directory, after one untimed run of each N that fills the compilation cache; and
``drivesim bench engine --agents A --json`` before and after. The campaign's rate is marginal
((N_large - N_small) / (wall_large - wall_small): process start, JAX start-up, cached
compiles and the last batch's drain cancel). Prints one JSON object: the campaign rates, the
engine rates and the ratio of the median campaign rate to the mean engine rate (goal >= 0.8).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DRIVESIM = [str(Path(sys.executable).parent / "drivesim")]


def _engine(agents: int) -> float:
    out = subprocess.run(
        [*DRIVESIM, "bench", "engine", "--agents", str(agents), "--json", "--out", tempfile.mkdtemp()],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.splitlines()[0])["scenarios_per_s"]["median"]


def _campaign(agents: int, count: int, work: Path) -> float:
    out = work / f"run-{count}"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    args = ["run", "--source", "synthetic:highway", "--agents", str(agents), "--count", str(count)]
    subprocess.run([*DRIVESIM, *args, "--out", str(out)], capture_output=True, check=True)
    seconds = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--counts", type=int, nargs=2, default=(65536, 131072))
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    small, large = args.counts
    work = Path(tempfile.mkdtemp(prefix="drivesim-user-path-"))
    engine = [_engine(args.agents)]
    for count in (small, large):
        _campaign(args.agents, count, work)  # fills the compilation cache
    rates, walls = [], []
    for _ in range(args.pairs):
        t_small, t_large = _campaign(args.agents, small, work), _campaign(args.agents, large, work)
        walls.append((t_small, t_large))
        if t_large > t_small:
            rates.append((large - small) / (t_large - t_small))
    engine.append(_engine(args.agents))
    shutil.rmtree(work, ignore_errors=True)
    campaign = statistics.median(rates) if rates else float("nan")
    print(
        json.dumps(
            {
                "agents": args.agents,
                "counts": [small, large],
                "campaign_scenarios_per_s": rates,
                "walls_s": walls,
                "engine_scenarios_per_s": engine,
                "ratio": campaign / statistics.mean(engine),
                "goal_ratio": 0.8,
            }
        )
    )


if __name__ == "__main__":
    main()
