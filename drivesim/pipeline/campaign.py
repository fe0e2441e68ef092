"""The campaign runner: plan, load, prefetch to devices, compute, write, record, resume.

Threads: the loader stage (``Planner`` + a pool of loader threads) fills a bounded queue of host
batches; the device stage ``device_put``s the next batch while the main thread computes the
current one; a writer thread writes each batch's Parquet shard (atomic, fsync'ed) and only then
marks the batch done in the ledger. Rerunning a campaign skips done batches and redoes the rest.
Progress is reported through ``progress(BatchEvent)`` calls on the calling thread.
"""

from __future__ import annotations

import json
import pathlib
import platform
import queue
import sqlite3
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import jax

from drivesim.pipeline import (
    batch_size,
    defaults,
    fingerprint,
    interrupt,
    policy_provenance,
    program_identity,
    sessions,
    verify,
)
from drivesim.pipeline import results as res
from drivesim.pipeline import sources as src
from drivesim.pipeline.config import (
    CONFIG_NAME,
    CampaignConfig,
    check_same_campaign,
    read_config,
    sim_config,
    write_config,
)
from drivesim.pipeline.devices import DeviceRunner, block
from drivesim.pipeline.generated import make_planner
from drivesim.pipeline.ledger import Ledger
from drivesim.pipeline.lock import CampaignLock, remove_dead_temporaries
from drivesim.pipeline.plan import HostWork, describe_source, plan_settings
from drivesim.pipeline.prefetch import Prefetcher, chain
from drivesim.pipeline.timing import BatchEvent, FallbackClock, PhaseTimes, Stopwatch
from drivesim.pipeline.validation import validate_config
from drivesim.pipeline.watchdog import Watchdog, WatchdogConfig
from drivesim.pipeline.writer import Outcome as _Outcome
from drivesim.pipeline.writer import Writer as _Writer
from drivesim.pipeline.writer import close_stages as _close

ProgressFn = Callable[[BatchEvent], None]
EngineFactory = Callable[..., DeviceRunner]


@dataclass(kw_only=True)
class CampaignResult:
    """What a run did: scenarios done (this run and before), failed to load, skipped
    (done by an earlier run), batches whose compute failed, wall seconds, throughput."""

    directory: pathlib.Path
    total: int
    done: int
    failed: int
    skipped: int
    failed_batches: int
    elapsed_s: float
    scenarios_per_s: float
    device_count: int
    batch_size: int | None = None  # this run's scenarios per batch (``batch_size="auto"`` resolved)
    notes: list[str] = field(default_factory=list)


@dataclass
class DeviceWork:
    """A host batch with its device copy (None for a batch of failed scenarios only)."""

    host: HostWork
    dbatch: object
    h2d_s: float


@dataclass
class _Launch:
    """A device batch whose computation was dispatched (result None: not dispatched yet)."""

    dwork: DeviceWork
    result: object | None
    dispatched: float  # perf_counter at dispatch
    wall_start: float = field(default_factory=time.time)
    compile_s: float = 0.0  # compilation the dispatch waited for (new shapes only)


def prepare_directory(config: CampaignConfig) -> CampaignConfig:
    """Create the campaign directory and its config; on a rerun check it is the same campaign
    (config fields, input fingerprints, campaign.toml) and reconcile the ledger with the shards.
    A full or read-only file system ends it in one line (RuntimeError, results.write_failure).
    The caller holds the directory's CampaignLock."""
    try:
        return _prepare(config)
    except (OSError, sqlite3.OperationalError) as err:
        raise RuntimeError(res.write_failure(config.out, err, "campaign start")) from err


def _prepare(config: CampaignConfig) -> CampaignConfig:
    directory = config.directory
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / CONFIG_NAME).is_file():
        check_same_campaign(read_config(directory), config, directory)
    else:
        write_config(config, directory)
    fingerprint.check_and_record(directory, config)
    remove_dead_temporaries(directory)
    report = verify.reconcile(directory)
    found = [line for line in report.lines()[1:] if not line.endswith("(Parquet footer checked)")]
    if found:  # said at the end of the run: what was redone, what was ignored
        found = [f"{line} -> redone" if line.startswith(("missing", "damaged")) else line for line in found]
        config = replace(config, notes=config.notes + tuple(found))
    return config


def _positions(total: int) -> tuple[range, int]:
    if jax.process_count() == 1:
        return range(total), 0
    from drivesim.parallel.distributed import process_positions

    return process_positions(total), jax.process_index()


@dataclass(frozen=True)
class Campaign:
    """A campaign resolved and checked, nothing written yet (:func:`open_campaign`).

    config: every default filled in (drivesim.pipeline.defaults), every field valid.
    spec: the policy parameters (drivesim.pipeline.config.PolicySpec), sweep or MLP files read.
    source: the library's own scenario source, or None (``config.sources`` are opened).
    """

    config: CampaignConfig
    spec: Any
    source: Any = None

    def run(
        self, progress: ProgressFn | None = None, *, engine: EngineFactory = DeviceRunner
    ) -> CampaignResult:
        """Run (or resume) the campaign in ``config.out`` (see :func:`run_campaign`)."""
        config, report = self.config, progress or (lambda event: None)
        if config.cluster:  # on a Ray cluster (drivesim.pipeline.cluster); Ray is imported there only
            from drivesim.pipeline.cluster import run_cluster_campaign

            return run_cluster_campaign(config, report, self.source)
        # the runner opens the sources: their errors come before any write
        runner = _Runner(config, report, self, engine)
        config.directory.mkdir(parents=True, exist_ok=True)
        with CampaignLock(config.out, jax.process_index()):
            runner.config = prepare_directory(config)
            return runner.run()


def open_campaign(config: CampaignConfig, source=None) -> Campaign:
    """Resolve ``config``'s defaults and check it, before anything is written: ConfigError for
    an invalid field, for a policy or sweep file that cannot be read, and for a directory that
    holds another campaign (a refused resume). ``source``: as for :func:`run_campaign`."""
    config = defaults.resolve(config, fill_sources=source is None)
    spec = validate_config(config, available_devices=jax.device_count())
    if (config.directory / CONFIG_NAME).is_file():
        check_same_campaign(read_config(config.directory), config, config.directory)
        fingerprint.check_inputs(config.directory, config)
    return Campaign(config, spec, source)


def run_campaign(
    config: CampaignConfig,
    progress: ProgressFn | None = None,
    source=None,
    *,
    engine: EngineFactory = DeviceRunner,
) -> CampaignResult:
    """Run (or resume) the campaign described by ``config`` in ``config.out``.

    config: unset fields take the defaults of drivesim.pipeline.defaults (``CampaignConfig()``
    is the demo of ``make run``).
    progress: called with a :class:`BatchEvent` on this thread (start, per batch, end).
    source: a scenario source object (``len``, ``load(position)``) to use instead of
    ``config.sources`` (library use; a resume must pass an equal source).
    engine: builds the device side from (config, SimConfig, PolicySpec): put/run/fetch
    (drivesim.bench.null_engine measures the host alone with one that computes nothing).
    """
    return open_campaign(config, source).run(progress, engine=engine)


class _Runner:
    """State of one run of a campaign (see module docstring for the threads)."""

    def __init__(self, config: CampaignConfig, progress: ProgressFn, campaign: Campaign, engine=DeviceRunner):
        self.config, self.progress = config, progress
        self.directory = config.directory
        self.source = campaign.source if campaign.source is not None else src.campaign_source(config)
        self.spec = campaign.spec
        self.sim_config = sim_config(config, self.spec.policy)
        self.device = engine(config, self.sim_config, self.spec)
        self.total = len(self.source)
        self.positions, self.process_index = _positions(self.total)
        # a host batch is this process's: its positions, its devices
        local = len(self.device.executor.local_devices)
        self.batch_size = batch_size.for_campaign(config, len(self.positions), jax.default_backend(), local)
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.counts = dict(done=0, failed=0, failed_batches=0, this_run=0)
        self._last_ready = 0.0  # perf_counter when the previous batch's result was ready

    def run(self) -> CampaignResult:
        ledger = Ledger(self.directory)
        self._write_meta(ledger)
        changed = program_identity.resume_notes(ledger)  # said at the end of the run
        self.config = replace(self.config, notes=self.config.notes + tuple(changed))
        self.counts["done"] = self.skipped = ledger.done_scenarios()
        self.counts["failed"] = ledger.failure_count()
        ledger.close()
        self.start = time.perf_counter()
        self._emit("start")
        d = self.device.num_devices
        settings = plan_settings(self.batch_size, self.config.window_batches, d, self.config.loader_threads)
        planner = make_planner(self.source, self.directory, settings, self.positions)
        host = Prefetcher(planner, self.config.prefetch, name="drivesim-loader")
        stage = chain(host, self._to_device, depth=2)
        writer = _Writer(self.directory, self.process_index, self.spec.names, self.events)
        self.watchdog = Watchdog(self.directory, WatchdogConfig(self.config.stall_s), writer.abort(stage))
        inflight: _Launch | None = None
        try:
            # dispatch batch k+1 before fetching batch k: the devices never wait for the host
            for _batch_id, work in stage:
                self.watchdog.beat()
                launched = self._launch(work)
                if inflight is not None:  # its wait included the next batch's compile, if any
                    writer.submit(self._collect(inflight, hidden_s=launched.compile_s))
                inflight = launched
                self._drain()
                interrupt.raise_if_pending()  # a SIGTERM whose own exception a finalizer swallowed
            if inflight is not None:
                writer.submit(self._collect(inflight))
        except KeyboardInterrupt as stop:  # SIGINT, or SIGTERM as Interrupted: what is written stays
            self._interrupted(stage, writer, stop)
            raise
        finally:
            self.watchdog.close()
            _close(stage, writer, self.watchdog.error)
        self._drain()
        return self._finish()

    def _interrupted(self, stage, writer, stop: KeyboardInterrupt) -> None:
        """Let the writer finish the batches it holds, then close the session record with
        the signal's name; ``stop.saved`` tells the caller how many scenarios are done."""
        self.watchdog.close()
        _close(stage, writer, self.watchdog.error)
        self._drain()
        elapsed = time.perf_counter() - self.start
        rate = self.counts["this_run"] / elapsed if elapsed > 0 else 0.0
        reason = getattr(stop, "signal_name", "SIGINT")
        sessions.record_end(self.directory, self.session, self.counts["this_run"], rate, interrupted=reason)
        stop.saved = dict(done=self.counts["done"], total=self.total, this_run=self.counts["this_run"])  # type: ignore[attr-defined]

    def _to_device(self, _position: int, work: HostWork) -> DeviceWork:
        if work.scenario is None:
            return DeviceWork(work, None, 0.0)
        with Stopwatch() as sw:
            dbatch = self.device.put(work.scenario)
            block(dbatch)
        return DeviceWork(work, dbatch, sw.seconds)

    def _launch(self, dwork: DeviceWork) -> _Launch:
        """Dispatch a device batch (asynchronous); a dispatch error is retried by _collect."""
        launch = _Launch(dwork, None, time.perf_counter())
        if dwork.dbatch is not None:
            before = self.device.executor.compile_seconds
            try:
                launch.result = self.device.run(dwork.dbatch)
            except Exception:  # noqa: BLE001 - _collect retries the batch from its host copy
                launch.result = None
            launch.compile_s = self.device.executor.compile_seconds - before
        return launch

    def _collect(self, launch: _Launch, hidden_s: float = 0.0) -> _Outcome:
        """Wait for a launched batch and fetch its metrics; a failed attempt is redone from
        the host batch up to ``config.retries`` times, then the batch is recorded as failed.
        hidden_s: host seconds spent compiling the next batch after this one was dispatched
        (the devices may have finished meanwhile; not counted as this batch's compute)."""
        dwork = launch.dwork
        work = dwork.host
        phases = PhaseTimes(
            load_s=work.load_s, h2d_s=dwork.h2d_s, wall_start=launch.wall_start, compile_s=launch.compile_s
        )
        if dwork.dbatch is None:
            return _Outcome(work, None, phases)
        error = None
        for attempt in range(self.config.retries + 1):
            try:
                if attempt > 0 or launch.result is None:
                    before = self.device.executor.compile_seconds
                    launch.dispatched = time.perf_counter()
                    launch.result = self.device.run(self.device.put(work.scenario))
                    launch.compile_s = self.device.executor.compile_seconds - before
                    phases.compile_s += launch.compile_s
                block(launch.result)
                ready = time.perf_counter()
                fallback = FallbackClock(self.device.executor)
                with Stopwatch() as d2h:
                    metrics = self.device.fetch(launch.result, len(work.infos))
                fallback_compile_s, fallback_run_s = fallback.spent()
                # batches queue on the devices: this one started when dispatched or when the
                # previous one was ready, whichever came later
                started = max(launch.dispatched + launch.compile_s, self._last_ready)
                phases.compute_s = max(0.0, ready - started - (hidden_s if attempt == 0 else 0.0))
                phases.compute_s += fallback_run_s  # the exact fallback ran inside the fetch
                phases.compile_s += fallback_compile_s
                phases.d2h_s = max(0.0, d2h.seconds - fallback_compile_s - fallback_run_s)
                self._last_ready = ready
                return _Outcome(work, metrics, phases)
            except Exception as exc:  # noqa: BLE001 - a failing batch is recorded, the campaign goes on
                error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
        return _Outcome(work, None, phases, error=error)

    def _drain(self) -> None:
        while True:
            try:
                outcome = self.events.get_nowait()
            except queue.Empty:
                return
            work = outcome.work
            self.watchdog.beat()
            if outcome.error is not None:
                self.counts["failed_batches"] += 1
                self._emit("batch_failed", work, outcome)
                continue
            self.counts["done"] += len(work.infos) + len(work.failed)
            self.counts["this_run"] += len(work.infos) + len(work.failed)
            self.counts["failed"] += len(work.failed)
            self._emit("batch", work, outcome)

    def _emit(self, kind: str, work: HostWork | None = None, outcome: _Outcome | None = None) -> None:
        elapsed = time.perf_counter() - self.start
        rate = self.counts["this_run"] / elapsed if elapsed > 0 else 0.0
        extra: dict[str, Any] = {}
        if work is not None and outcome is not None:
            extra = dict(
                batch_id=work.batch_id,
                num_scenarios=len(work.infos) + len(work.failed),
                num_failed=len(work.failed),
                size_class=work.size_class,
                phases=outcome.phases,
                error=outcome.error,
            )
        self.progress(
            BatchEvent(
                kind=kind,
                done=self.counts["done"],
                failed=self.counts["failed"],
                total=len(self.positions),
                skipped=self.skipped,
                elapsed_s=elapsed,
                scenarios_per_s=rate,
                device_count=self.device.num_devices,
                **extra,
            )
        )

    def _write_meta(self, ledger: Ledger) -> None:
        devices = jax.devices()[: self.device.num_devices]
        kinds = [d.device_kind for d in devices]
        self.session = sessions.record_start(self.directory, self.config.backend, kinds, self.process_index)
        first = {} if "started_at" in ledger.meta() else {"started_at": str(time.time())}
        ledger.set_meta(
            machine=platform.node() + " " + platform.machine(),
            devices=json.dumps([d.device_kind for d in devices]),
            jax_version=jax.__version__,
            backend=self.config.backend,
            device_count=str(self.device.num_devices),
            batch_size=str(self.batch_size),  # this run's (a resume may use another)
            workload=describe_source(self.source),
            policy_training=json.dumps(policy_provenance.training_records(self.config.policy)),
            **first,  # the campaign's first start; every session is in sessions.jsonl
        )

    def _finish(self) -> CampaignResult:
        return finish_run(
            self,
            total=len(self.positions),
            device_count=self.device.num_devices,
            notes=list(self.config.notes),
            search_plans=self.device.executor.search_plans,
        )


def finish_run(
    run, *, total: int, device_count: int, notes: list[str], search_plans: dict | None = None
) -> CampaignResult:
    """End a campaign run (embedded or on a cluster): emit "end", stamp the ledger, close the
    run session and return its CampaignResult. ``run`` has directory, session, counts,
    skipped, start and _emit; ``search_plans``: {"AGENTSxSEGMENTS[ SEARCHES]": SearchPlan
    record} of the programs this run compiled (drivesim.parallel.executor), added to the
    ledger's meta ``search_plans``."""
    run._emit("end")
    elapsed = time.perf_counter() - run.start
    with Ledger(run.directory) as ledger:
        ledger.set_meta(finished_at=str(time.time()))
        if search_plans:
            known = json.loads(ledger.meta().get("search_plans") or "{}")
            ledger.set_meta(search_plans=json.dumps(known | search_plans, sort_keys=True))
    rate = run.counts["this_run"] / elapsed if elapsed > 0 else 0.0
    sessions.record_end(run.directory, run.session, run.counts["this_run"], rate)
    return CampaignResult(
        directory=run.directory,
        total=total,
        done=run.counts["done"],
        failed=run.counts["failed"],
        skipped=run.skipped,
        failed_batches=run.counts["failed_batches"],
        elapsed_s=elapsed,
        scenarios_per_s=rate,
        device_count=device_count,
        batch_size=getattr(run, "batch_size", None),
        notes=notes,
    )
