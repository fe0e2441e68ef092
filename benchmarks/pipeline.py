"""Pipeline overlap benchmark: a source whose preparation time per batch is close to the
compute time. The pipelined campaign should reach >= 90% of min(source rate, compute rate);
a serial loop (load, then compute, no prefetch) is measured for comparison (~ half).

    .venv/bin/python benchmarks/pipeline.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drivesim.core.types import SimConfig  # noqa: E402
from drivesim.pipeline.campaign import run_campaign  # noqa: E402
from drivesim.pipeline.config import CampaignConfig, policy_spec  # noqa: E402
from drivesim.pipeline.devices import DeviceRunner, block  # noqa: E402
from drivesim.pipeline.plan import Planner, PlanSettings, stack_batch  # noqa: E402
from drivesim.pipeline.sources import FallbackSynthetic  # noqa: E402


class SlowSource(FallbackSynthetic):
    """Synthetic scenarios that take ``delay`` seconds each to prepare (like file IO; sleeping
    releases the GIL as reading does)."""

    def __init__(self, count, agents, steps, delay):
        super().__init__(("highway",), count, seed=0, agents=agents, steps=steps)
        self.delay = delay

    def load(self, position):
        time.sleep(self.delay)
        return super().load(position)


def compute_seconds(config: CampaignConfig, repeats: int = 5) -> float:
    """Median seconds of put + run + fetch of one batch (after warm-up)."""
    spec = policy_spec(config)
    runner = DeviceRunner(config, SimConfig(num_steps=config.num_steps, policy=spec.kind), spec)
    source = FallbackSynthetic(("highway",), config.batch_size, 0, config.agents, config.num_steps)
    records = [source.load(i) for i in range(config.batch_size)]
    host = stack_batch(records, 16 if config.agents <= 16 else 32, config.batch_size)
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        result = runner.run(runner.put(host))
        block(result)
        runner.fetch(result, config.batch_size)
        times.append(time.perf_counter() - start)
    return sorted(times[1:])[len(times[1:]) // 2], runner


def serial_rate(config: CampaignConfig, source, runner, out: Path) -> float:
    """Scenarios/s of a loop without prefetch: prepare a batch, then compute it."""
    settings = PlanSettings(config.batch_size, config.window, config.batch_size, config.loader_threads)
    (out / "serial").mkdir(parents=True)
    from drivesim.pipeline.ledger import Ledger

    Ledger(out / "serial").close()
    planner = Planner(source, out / "serial", settings, range(len(source)))
    import threading

    start, done = time.perf_counter(), 0
    for _, work in planner(threading.Event()):
        result = runner.run(runner.put(work.scenario))
        block(result)
        runner.fetch(result, len(work.infos))
        done += len(work.infos)
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Small run (smoke test).")
    parser.add_argument("--json", action="store_true", help="Print one JSON object.")
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--batches", type=int, default=40)
    args = parser.parse_args()
    batches = 6 if args.quick else args.batches
    out = Path(tempfile.mkdtemp(prefix="drivesim-bench-pipeline-"))
    try:
        config = CampaignConfig(
            sources=("synthetic:highway",),
            count=batches * args.batch_size,
            agents=args.agents,
            num_steps=args.steps,
            batch_size=args.batch_size,
            window_batches=1,
            loader_threads=2,
            prefetch=4,
            out=str(out / "pipelined"),
        )
        t_compute, runner = compute_seconds(config)
        compute_rate = args.batch_size / t_compute
        # per-scenario delay so that the source (2 loader threads) delivers at the compute rate
        delay = config.loader_threads * t_compute / args.batch_size
        source = SlowSource(config.count, args.agents, args.steps, delay)
        source_rate = config.loader_threads / delay
        events = []
        run_campaign(config, progress=events.append, source=source)
        batch_events = [e for e in events if e.kind == "batch"]
        first, last = batch_events[0], batch_events[-1]
        # steady state: from the first batch written to the last (compile excluded)
        pipelined = (last.done - first.done) / max(last.elapsed_s - first.elapsed_s, 1e-9)
        serial = serial_rate(config, SlowSource(config.count, args.agents, args.steps, delay), runner, out)
        ceiling = min(source_rate, compute_rate)
        record = dict(
            kind="pipeline",
            batch_size=args.batch_size,
            agents=args.agents,
            steps=args.steps,
            batches=batches,
            compute_rate=compute_rate,
            source_rate=source_rate,
            pipelined_rate=pipelined,
            serial_rate=serial,
            pipelined_fraction=pipelined / ceiling,
            serial_fraction=serial / ceiling,
            device_count=runner.num_devices,
        )
        if args.json:
            print(json.dumps(record))
        else:
            for key, value in record.items():
                print(f"{key:>20}: {value:.3f}" if isinstance(value, float) else f"{key:>20}: {value}")
            print(
                f"pipelined reaches {100 * pipelined / ceiling:.0f}% of min(source, compute) (goal >= 90%); "
                f"serial {100 * serial / ceiling:.0f}%"
            )
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
