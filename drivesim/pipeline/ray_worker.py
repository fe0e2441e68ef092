"""The worker side of a campaign on a Ray cluster: one actor class, no Ray import here.

A :class:`CampaignWorker` (made a Ray actor by drivesim.pipeline.cluster) opens the campaign's
sources and policy itself and holds a compiled executor on its local devices. Per batch it
gets only ``(batch_id, positions, size_class)``, rebuilds the batch from the source exactly
as the embedded loader would (sources are addressable by position), simulates it, writes the
batch's Parquet shard into the campaign directory (a file system the driver and every worker
see at the same path) and returns the shard's path, row count, SHA-256 and phases; the
driver records them in the ledger. Whatever the worker, a batch's shard is the same bytes.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from drivesim.pipeline import results as res
from drivesim.pipeline.config import CampaignConfig
from drivesim.pipeline.ledger import PlannedBatch
from drivesim.pipeline.plan import HostWork, plan_settings
from drivesim.pipeline.timing import FallbackClock, Stopwatch

# What crosses the wire for one batch: (batch_id, positions, size_class)
# (batch id, positions, size class, the driver's batch size: the worker pads every batch to it)
BatchMessage = tuple[int, tuple[int, ...], int, int]


def pin(index: int) -> int | None:
    """With ``DRIVESIM_PIN_WORKERS=1`` (for measuring on one machine): run worker ``index`` on
    core ``index mod cores`` only, with the CPU device count of one core (the driver's count is
    dropped from XLA_FLAGS). Returns the core, or None when not pinning. Call before JAX starts."""
    if os.environ.get("DRIVESIM_PIN_WORKERS") != "1" or not hasattr(os, "sched_setaffinity"):
        return None
    from drivesim.parallel.cpu_devices import COUNT_FLAG

    cores = sorted(os.sched_getaffinity(0))
    core = cores[index % len(cores)]
    os.sched_setaffinity(0, {core})
    flags = os.environ.get("XLA_FLAGS", "").split()
    os.environ["XLA_FLAGS"] = " ".join(f for f in flags if not f.startswith(f"--{COUNT_FLAG}="))
    return core


def prepare_jax() -> None:
    """Before JAX starts in a worker: the CLI's CPU device count and determinism mode (so a
    worker's results are bitwise those of the embedded run; DRIVESIM_FMA_FREE=1 as in the CLI).
    Flags the driver passed in XLA_FLAGS win. The persistent compilation cache is on as in
    the CLI (DRIVESIM_JAX_CACHE; on a shared path, workers of one shape compile it once)."""
    from drivesim.parallel import compile_cache, cpu_devices, determinism

    cpu_devices.enable()
    determinism.configure()
    compile_cache.enable()


class CampaignWorker:
    """One cluster worker: executor on the local devices, batches in, shards out.

    config: the campaign (``out`` is the shared campaign directory); source: a source object
    to use instead of opening ``config.sources`` (library use); index: the worker's number.
    """

    def __init__(self, config: CampaignConfig, source=None, index: int = 0):
        self.core = pin(index)
        prepare_jax()
        from drivesim.pipeline import sources as src
        from drivesim.pipeline.config import policy_spec, sim_config
        from drivesim.pipeline.devices import DeviceRunner
        from drivesim.pipeline.generated import make_planner

        self.config, self.directory = config, config.directory
        if source is None:
            source = src.campaign_source(config)
        self.spec = policy_spec(config)
        self.device = DeviceRunner(config, sim_config(config, self.spec.policy), self.spec)
        # the driver's batch size comes with every batch and sets the padding (_settings)
        self.planner = make_planner(source, self.directory, self._settings(1), range(len(source)))
        self.name = f"w{index}@{platform.node()}:{os.getpid()}"

    def info(self) -> dict:
        """The worker's name, process id, device count and program (pipeline.program_identity)."""
        import jax

        from drivesim.parallel.cpu_devices import usable_cores
        from drivesim.pipeline.program_identity import program

        devices = self.device.num_devices
        return dict(
            name=self.name,
            pid=os.getpid(),
            devices=devices,
            platform=jax.default_backend(),
            cores=usable_cores(),
            core=self.core,
            program=program(),
        )

    def _settings(self, batch_size: int):
        """The plan settings of batches of ``batch_size`` on this worker's devices."""
        config, devices = self.config, self.device.num_devices
        return plan_settings(batch_size, config.window_batches, devices, config.loader_threads)

    def pid(self) -> int:
        return os.getpid()

    def run_batch(self, message: BatchMessage) -> dict:
        """Build, simulate and write one batch; returns what the ledger records: shard (path
        relative to the campaign directory), rows, sha256, phases, failures [(id, reason)],
        num_scenarios, size_class, worker."""
        from drivesim.parallel.memory import host_rss
        from drivesim.pipeline.devices import block
        from drivesim.pipeline.verify import shard_check

        wall_start = time.time()
        batch = PlannedBatch(int(message[0]), tuple(int(p) for p in message[1]), int(message[2]))
        size = int(message[3])
        if size != self.planner.settings.batch_size:
            self.planner.settings = self._settings(size)
        with Stopwatch() as load:
            work = self.planner.work(batch)
        phases = dict(load_s=load.seconds, wall_start=wall_start)
        metrics = self._simulate(work, phases, block) if work.scenario is not None else None
        with Stopwatch() as write:
            if metrics is not None:
                table = res.batch_table(work.infos, metrics, self.spec.names, work.batch_id, 0, work.failed)
            else:
                table = res.failed_table(work.failed, work.batch_id, 0)
            shard = res.write_shard(table, self.directory, work.batch_id)
            check = shard_check(shard)
        phases |= dict(write_s=write.seconds, wall_end=time.time())
        return dict(
            batch_id=work.batch_id,
            shard=str(shard.relative_to(self.directory)),
            rows=check.rows,
            sha256=check.sha256,
            bytes=check.size,
            mtime_ns=check.mtime_ns,
            phases=phases,
            failures=[(info.scenario_id, reason) for info, reason in work.failed],
            num_scenarios=len(work.infos) + len(work.failed),
            size_class=work.size_class,
            host_rss_bytes=host_rss(),
            worker=self.name,
        )

    def _simulate(self, work: HostWork, phases: dict, block) -> dict[str, np.ndarray]:
        """Metrics {name: (P, B)} of a batch; fills h2d_s, compile_s, compute_s, d2h_s."""
        executor = self.device.executor
        with Stopwatch() as h2d:
            dbatch = self.device.put(work.scenario)
            block(dbatch)
        before = executor.compile_seconds
        with Stopwatch() as compute:
            result = self.device.run(dbatch)
            block(result)
        compile_s = executor.compile_seconds - before
        fallback = FallbackClock(executor)
        with Stopwatch() as d2h:
            metrics = self.device.fetch(result, len(work.infos))
        fallback_compile_s, fallback_run_s = fallback.spent()  # the exact fallback runs in the fetch
        phases |= dict(
            h2d_s=h2d.seconds,
            compile_s=compile_s + fallback_compile_s,
            compute_s=max(0.0, compute.seconds - compile_s) + fallback_run_s,
            d2h_s=max(0.0, d2h.seconds - fallback_compile_s - fallback_run_s),
        )
        return metrics
