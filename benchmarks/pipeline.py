"""Pipeline overlap benchmark.

A source whose preparation time per batch is close to the compute time of a batch: it reads
its scenarios in files of ``--scenarios-per-read`` K (default 16): loading the first scenario
of a file sleeps ``K * delay`` seconds (IO: it releases the GIL), then every scenario is one of
a pool of pre-generated synthetic records. ``K = 1`` sleeps once per scenario; on a small VM
each sleep costs ~20-25 us of CPU and a timer interrupt, so at thousands of sleeps per second
the emulated IO itself takes CPU from the compute (see BENCHMARKS.md). Four rates, all in
batches/s and measured the same way (after compilation, over the same batches):

- source rate: the loader stage alone (``Planner``: load, bucket, pad, stack with the same
  loader threads), no device work;
- compute rate: ``run`` + ``fetch`` of batches already on the devices, back to back;
- pipelined rate: the real campaign (prefetch, device prefetch, writer thread, ledger);
- serial rate: the same batches without prefetch or read-ahead (load, compute, write).

The per-scenario sleep is calibrated (secant steps, within 3%) so that the source alone takes
as long per batch as the compute. The machine is noisy, so the rates are measured in
``--repeats`` cycles, one after another; in each cycle the compute is measured just before and
just after the pipelined run (their mean is the cycle's compute time), and the fraction is
reported per cycle and as the median.

Goal: pipelined >= 90% of min(source, compute); serial about half when both are equal.

    .venv/bin/python benchmarks/pipeline.py [--quick] [--json] [--loader-threads N] [--repeats N]
                                            [--scenarios-per-read K]

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
from drivesim.pipeline.plan import Planner, plan_settings, stack_batch  # noqa: E402
from drivesim.scenarios.sources import SyntheticSource  # noqa: E402
from drivesim.scenarios.synthetic import FamilyConfig  # noqa: E402


class SlowSource(SyntheticSource):
    """Highway scenarios that take ``delay`` s each to load, read in files of ``per_read``:
    the first scenario of a file sleeps ``per_read * delay`` (IO-like, releases the GIL); every
    scenario is then one of ``pool`` pre-generated (and validated) records."""

    def __init__(
        self, count: int, agents: int, steps: int, delay: float, pool: int | list = 256, per_read: int = 1
    ):
        super().__init__(["highway"], count, 0, config=FamilyConfig(num_agents=agents, steps=steps))
        self.delay, self.agents, self.steps, self.per_read = delay, agents, steps, per_read
        if isinstance(pool, int):
            pool = [super(SlowSource, self).load(i) for i in range(min(pool, count))]
        self.pool = pool

    def variant(self, count: int, delay: float) -> SlowSource:
        """The same records and files, ``count`` scenarios, ``delay`` s each."""
        return SlowSource(count, self.agents, self.steps, delay, self.pool, self.per_read)

    def load(self, position: int):
        if position % self.per_read == 0:
            time.sleep(self.per_read * self.delay)
        return self.pool[position % len(self.pool)]


def device_runner(config: CampaignConfig) -> DeviceRunner:
    """The campaign's device side (executor, policy) for the compute and serial rates."""
    spec = policy_spec(config)
    return DeviceRunner(config, SimConfig(num_steps=config.num_steps, policy=spec.policy), spec)


def compute_seconds(runner: DeviceRunner, host, rows: int, repeats: int = 8) -> float:
    """Seconds per batch of the devices alone: ``repeats`` copies of the stacked ``host``
    batch already on the devices (put before the clock starts), dispatched back to back, each
    waited for and fetched (after one compiling call). The ceiling the pipeline can reach: no
    host work in its way."""
    warm = runner.run(runner.put(host))
    block(warm)
    runner.fetch(warm, rows)
    batches = [runner.put(host) for _ in range(repeats)]
    for dbatch in batches:
        block(dbatch)
    start = time.perf_counter()
    results = [runner.run(dbatch) for dbatch in batches]
    for result in results:
        block(result)
        runner.fetch(result, rows)
    return (time.perf_counter() - start) / repeats


def _planner(config: CampaignConfig, source, directory: Path, read_ahead: bool = True) -> Planner:
    directory.mkdir(parents=True, exist_ok=True)
    Ledger(directory).close()
    settings = plan_settings(int(config.batch_size), config.window_batches, 1, config.loader_threads)
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
    probe = SlowSource(count, args.agents, args.steps, 0.0, per_read=args.scenarios_per_read)
    runner = device_runner(config)
    host = stack_batch(probe.pool[: args.batch_size], args.agents, args.batch_size)
    t_compute = compute_seconds(runner, host, args.batch_size)
    loader_cpu: list[float] = []
    no_sleep = source_seconds(config, probe.variant(8 * args.batch_size, 0.0), out / "probe", loader_cpu)
    delay = calibrate_delay(config, probe, t_compute, out / "calibrate")
    cycles = []
    for r in range(args.repeats):
        t_source = source_seconds(config, probe.variant(count, delay), out / f"source{r}")
        before = compute_seconds(runner, host, args.batch_size)
        t_pipe = pipelined_seconds(
            replace(config, out=str(out / f"pipelined{r}")), probe.variant(count, delay)
        )
        t_compute = (before + compute_seconds(runner, host, args.batch_size)) / 2
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
                balance=t_source / t_compute,
            )
        )
        # the machine drifts: keep the source matched to the compute for the next cycle
        # (half a secant step: one cycle's rates are noisy)
        delay = (delay + corrected_delay(config, delay, t_source, t_compute)) / 2
    med = {k: statistics.median(c[k] for c in cycles) for k in cycles[0]}
    return dict(
        kind="pipeline",
        batch_size=args.batch_size,
        agents=args.agents,
        steps=args.steps,
        batches=args.batches,
        loader_threads=args.loader_threads,
        scenarios_per_read=args.scenarios_per_read,
        repeats=args.repeats,
        delay_per_scenario_s=delay,  # after the last cycle's correction
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
        source_over_compute=[round(c["balance"], 3) for c in cycles],
        serial_fraction=med["serial_fraction"],
        scenarios_per_s=args.batch_size / med["pipe"],
        device_count=runner.num_devices,
    )


def calibrate_delay(
    config: CampaignConfig, probe: SlowSource, t_compute: float, out: Path, rounds: int = 6
) -> float:
    """The per-scenario sleep that makes the source alone take ``t_compute`` per batch
    (within 3%): secant steps on the measured source time over the campaign's batches."""
    count = config.count

    def source_time(delay: float) -> float:
        return source_seconds(config, probe.variant(count, delay), out / f"{delay:.3e}")

    delay = config.loader_threads * t_compute / config.batch_size
    for _ in range(rounds):
        t_source = source_time(delay)
        if abs(t_source / t_compute - 1) < 0.03:
            break
        delay = corrected_delay(config, delay, t_source, t_compute)
    return delay


def corrected_delay(config: CampaignConfig, delay: float, t_source: float, t_compute: float) -> float:
    """One secant step: time per batch is about a + delay * batch / threads, so correct the
    sleep part by the measured difference."""
    return max(delay + (t_compute - t_source) * config.loader_threads / config.batch_size, 0.0)


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
        "--repeats", type=int, default=5, help="Cycles of source, compute, pipelined, compute, serial."
    )
    parser.add_argument(
        "--scenarios-per-read", type=int, default=16, help="Scenarios per emulated file read (one sleep)."
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
