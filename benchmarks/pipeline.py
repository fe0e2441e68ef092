"""Pipeline overlap benchmark.

A source whose preparation time per batch is close to the compute time of a batch: loading
sleeps ``delay`` seconds per scenario (like reading a file: it releases the GIL), then hands
out a pre-generated synthetic record. Three rates, all in batches/s and measured the same way
(after compilation, over the same batches):

- source rate: the loader stage alone (``Planner``: load, bucket, pad, stack with the same
  loader threads), no device work;
- compute rate: ``put`` + ``run`` + ``fetch`` of a stacked batch alone;
- pipelined rate: the real campaign (prefetch, device prefetch, writer thread, ledger);
- serial rate: the same batches without prefetch or read-ahead (load, compute, write).

The per-scenario sleep is calibrated (secant steps, within 3%) so that the source alone takes
as long per batch as the compute. The machine is noisy, so the four rates are measured in
``--repeats`` cycles, one after another, and the fraction is reported per cycle and as the
median.

Goal: pipelined >= 90% of min(source, compute); serial about half when both are equal.

    .venv/bin/python benchmarks/pipeline.py [--quick] [--json] [--loader-threads N] [--repeats N]

Prints the ratio and one JSON line (``--json``: the JSON line only).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drivesim.core.types import SimConfig  # noqa: E402
from drivesim.pipeline import results as res  # noqa: E402
from drivesim.pipeline.campaign import run_campaign  # noqa: E402
from drivesim.pipeline.config import CampaignConfig, policy_spec  # noqa: E402
from drivesim.pipeline.devices import DeviceRunner, block  # noqa: E402
from drivesim.pipeline.ledger import Ledger  # noqa: E402
from drivesim.pipeline.plan import Planner, PlanSettings, stack_batch  # noqa: E402
from drivesim.scenarios.sources import SyntheticSource  # noqa: E402
from drivesim.scenarios.synthetic import FamilyConfig  # noqa: E402


class SlowSource(SyntheticSource):
    """Highway scenarios that take ``delay`` s each to load: a sleep (IO-like, releases the
    GIL), then one of ``pool`` pre-generated (and validated) records."""

    def __init__(self, count: int, agents: int, steps: int, delay: float, pool: int | list = 256):
        super().__init__(["highway"], count, 0, config=FamilyConfig(num_agents=agents, steps=steps))
        self.delay, self.agents, self.steps = delay, agents, steps
        if isinstance(pool, int):
            pool = [super(SlowSource, self).load(i) for i in range(min(pool, count))]
        self.pool = pool

    def variant(self, count: int, delay: float) -> SlowSource:
        """The same records, ``count`` scenarios, ``delay`` s each."""
        return SlowSource(count, self.agents, self.steps, delay, self.pool)

    def load(self, position: int):
        time.sleep(self.delay)
        return self.pool[position % len(self.pool)]


def compute_seconds(config: CampaignConfig, source, repeats: int = 8) -> tuple[float, DeviceRunner]:
    """Seconds per batch of back-to-back put + run + fetch of full batches (after one
    compiling call), measured like the other rates: total time / batches."""
    spec = policy_spec(config)
    runner = DeviceRunner(config, SimConfig(num_steps=config.num_steps, policy=spec.kind), spec)
    records = source.pool[: config.batch_size]
    host = stack_batch(records, config.agents, config.batch_size)
    for k in range(repeats + 1):
        if k == 1:
            start = time.perf_counter()
        result = runner.run(runner.put(host))
        block(result)
        runner.fetch(result, config.batch_size)
    return (time.perf_counter() - start) / repeats, runner


def _planner(config: CampaignConfig, source, directory: Path, read_ahead: bool = True) -> Planner:
    directory.mkdir(parents=True, exist_ok=True)
    Ledger(directory).close()
    settings = PlanSettings(config.batch_size, config.window, config.batch_size, config.loader_threads)
    planner = Planner(source, directory, settings, range(len(source)))
    if not read_ahead:
        planner.READ_AHEAD = 0
    return planner


def source_seconds(config: CampaignConfig, source, directory: Path, cpu: list | None = None) -> float:
    """Seconds per batch of the loader stage alone (same threads, same planning); appends
    the process CPU seconds per batch to ``cpu`` when given."""
    start, cpu_start, batches = time.perf_counter(), time.process_time(), 0
    for _ in _planner(config, source, directory)(threading.Event()):
        batches += 1
    if cpu is not None:
        cpu.append((time.process_time() - cpu_start) / batches)
    return (time.perf_counter() - start) / batches


def serial_seconds(config: CampaignConfig, source, runner: DeviceRunner, directory: Path) -> float:
    """Seconds per batch without prefetch: prepare a batch (no read-ahead), compute it, write it."""
    policies = policy_spec(config).names
    start, batches = time.perf_counter(), 0
    for _, work in _planner(config, source, directory, read_ahead=False)(threading.Event()):
        result = runner.run(runner.put(work.scenario))
        block(result)
        metrics = runner.fetch(result, len(work.infos))
        table = res.batch_table(work.infos, metrics, policies, work.batch_id)
        res.write_shard(table, directory, work.batch_id)
        batches += 1
    return (time.perf_counter() - start) / batches


def pipelined_seconds(config: CampaignConfig, source) -> float:
    """Seconds per batch of the campaign, from its first batch written to its last."""
    events = []
    run_campaign(config, progress=events.append, source=source)
    batches = [e for e in events if e.kind == "batch"]
    return (batches[-1].elapsed_s - batches[0].elapsed_s) / (len(batches) - 1)


def measure(args, out: Path) -> dict:
    count = args.batches * args.batch_size
    config = CampaignConfig(
        sources=("synthetic:highway",),
        count=count,
        agents=args.agents,
        num_steps=args.steps,
        batch_size=args.batch_size,
        window_batches=1,
        loader_threads=args.loader_threads,
        prefetch=4,
        out=str(out / "pipelined"),
    )
    probe = SlowSource(count, args.agents, args.steps, 0.0)
    t_compute, runner = compute_seconds(config, probe)
    loader_cpu: list[float] = []
    no_sleep = source_seconds(config, probe.variant(8 * args.batch_size, 0.0), out / "probe", loader_cpu)
    delay = calibrate_delay(config, probe, t_compute, out / "calibrate")
    cycles = []
    for r in range(args.repeats):
        if r:
            t_compute = compute_seconds(config, probe)[0]
        t_source = source_seconds(config, probe.variant(count, delay), out / f"source{r}")
        t_pipe = pipelined_seconds(
            replace(config, out=str(out / f"pipelined{r}")), probe.variant(count, delay)
        )
        t_serial = serial_seconds(config, probe.variant(count, delay), runner, out / f"serial{r}")
        ceiling = min(1 / t_source, 1 / t_compute)
        cycles.append(
            dict(
                compute=t_compute,
                source=t_source,
                pipe=t_pipe,
                serial=t_serial,
                pipelined=(1 / t_pipe) / ceiling,
                serial_fraction=(1 / t_serial) / ceiling,
            )
        )
    med = {k: statistics.median(c[k] for c in cycles) for k in cycles[0]}
    return dict(
        kind="pipeline",
        batch_size=args.batch_size,
        agents=args.agents,
        steps=args.steps,
        batches=args.batches,
        loader_threads=args.loader_threads,
        repeats=args.repeats,
        delay_per_scenario_s=delay,
        source_s_per_batch_no_sleep=no_sleep,
        loader_process_cpu_s_per_batch=loader_cpu[0],
        compute_s_per_batch=med["compute"],
        source_s_per_batch=med["source"],
        compute_rate=1 / med["compute"],
        source_rate=1 / med["source"],
        pipelined_rate=1 / med["pipe"],
        serial_rate=1 / med["serial"],
        pipelined_fraction=med["pipelined"],
        pipelined_fraction_min=min(c["pipelined"] for c in cycles),
        pipelined_fraction_max=max(c["pipelined"] for c in cycles),
        pipelined_fractions=[round(c["pipelined"], 3) for c in cycles],
        serial_fraction=med["serial_fraction"],
        scenarios_per_s=args.batch_size / med["pipe"],
        device_count=runner.num_devices,
    )


def calibrate_delay(
    config: CampaignConfig, probe: SlowSource, t_compute: float, out: Path, rounds: int = 6
) -> float:
    """The per-scenario sleep that makes the source alone take ``t_compute`` per batch
    (within 3%): steps on the measured source time over 10 batches."""
    count, size = 10 * config.batch_size, config.batch_size

    def source_time(delay: float) -> float:
        return source_seconds(config, probe.variant(count, delay), out / f"{delay:.3e}")

    delay = config.loader_threads * t_compute / size
    for _ in range(rounds):
        t_source = source_time(delay)
        if abs(t_source / t_compute - 1) < 0.03:
            break
        # time per batch is about a + delay * batch / threads: correct the sleep part only
        delay = max(delay + (t_compute - t_source) * config.loader_threads / size, 0.0)
    return delay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer batches (smoke test).")
    parser.add_argument("--json", action="store_true", help="Print the JSON line only.")
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--loader-threads", type=int, default=2)
    parser.add_argument(
        "--repeats", type=int, default=3, help="Cycles of compute, source, pipelined, serial."
    )
    args = parser.parse_args()
    if args.quick:
        args.batches, args.repeats = min(args.batches, 12), 1
    out = Path(tempfile.mkdtemp(prefix="drivesim-bench-pipeline-"))
    try:
        record = measure(args, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if not args.json:
        for key, value in record.items():
            print(f"{key:>22}: {value:.4g}" if isinstance(value, float) else f"{key:>22}: {value}")
        print(
            f"pipelined reaches {100 * record['pipelined_fraction']:.0f}% of min(source, compute) "
            f"(median of {record['repeats']}: {record['pipelined_fractions']}; goal >= 90%); "
            f"serial {100 * record['serial_fraction']:.0f}% (expected ~50%)"
        )
    print(json.dumps(record))


if __name__ == "__main__":
    main()
