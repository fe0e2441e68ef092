"""Campaigns on a Ray cluster: the driver plans and keeps the ledger, Ray actors compute.

``run_campaign`` comes here when ``CampaignConfig.cluster`` is set (``drivesim run --cluster
ray``). The driver plans windows and batches with the embedded planner (a synthetic or store
source plans from ids / class columns alone; other sources are loaded once on the driver to
bucket them, never stacked) and owns the ledger exactly as the embedded run does. N workers
(drivesim.pipeline.ray_worker, one actor each) rebuild their batches from the positions,
simulate them, and write the Parquet shards into the campaign directory, which must be on a
file system every node sees at the same path (NFS, a cluster file system, or one machine).

Scheduling is pull-based: each worker has at most ``IN_FLIGHT`` batches outstanding and the
next batch goes to whichever worker finishes first (``ray.wait``), so fast workers get more.
A worker that dies (``RayActorError``: a killed process, a lost node) is dropped and its
outstanding batches go back to the front of the queue for the others; a shard it wrote but
never reported is not named by the ledger (a stray file, never read) and is overwritten when
the batch is redone. A batch whose compute raises is retried ``config.retries`` times, then
recorded as failed. A killed driver resumes from the ledger with any number of workers.
With the default worker count (one per GPU, else one per node), nodes that join the cluster
during the run get a worker, and so does a node whose worker was lost.
The driver is the only process that writes the ledger; each done batch records its worker.
"""

from __future__ import annotations

import collections
import json
import os
import platform
import threading
import time
from dataclasses import dataclass
from typing import Any

from drivesim.parallel import determinism
from drivesim.pipeline import batch_size, interrupt, policy_provenance, sessions
from drivesim.pipeline.config import CampaignConfig
from drivesim.pipeline.ledger import Ledger, PlannedBatch, ShardCheck
from drivesim.pipeline.program_identity import worker_notes
from drivesim.pipeline.timing import BatchEvent, PhaseTimes
from drivesim.pipeline.validation import ConfigError

IN_FLIGHT = 2  # outstanding batches per worker: one computing, one waiting
JOIN_CHECK_S = 2.0  # how often the driver looks for nodes that joined (default worker count)
_PASSED_ENV = (
    "JAX_PLATFORMS",
    "XLA_FLAGS",
    determinism.FMA_FREE_ENV,
    "DRIVESIM_JAX_CACHE",
    "JAX_COMPILATION_CACHE_DIR",
    "DRIVESIM_PIN_WORKERS",
)


def parse_cluster(spec: str) -> str | None:
    """The Ray address of a ``--cluster`` value: ``ray`` -> None (what ``ray.init()`` finds,
    else a local cluster), ``ray:auto`` -> "auto", ``ray:HOST:PORT`` -> "HOST:PORT",
    ``ray://HOST:PORT`` -> itself (Ray Client). Raises ConfigError naming the value."""
    if spec == "ray":
        return None
    if spec.startswith("ray://"):
        if len(spec) > len("ray://"):
            return spec
    elif spec.startswith("ray:") and len(spec) > len("ray:"):
        return spec[len("ray:") :]
    raise ConfigError(f"cluster: {spec!r} is not ray, ray:auto, ray:HOST:PORT or ray://HOST:PORT")


def _ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("cluster: Ray is not installed (pip install 'drivesim[ray]')") from None
    return ray


def worker_env() -> dict[str, str]:
    """Environment variables the workers get (runtime_env): the driver's JAX platform and XLA
    flags, so a worker compiles the same programs as the embedded run would here."""
    return {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}


def default_workers(ray) -> int:
    """One worker per GPU of the cluster, else one per alive node."""
    gpus = int(ray.cluster_resources().get("GPU", 0))
    return gpus or max(1, sum(1 for node in ray.nodes() if node.get("Alive")))


@dataclass
class Ticket:
    """A planned batch on its way to a worker (``load_s``: driver-side planning seconds)."""

    batch: PlannedBatch
    load_s: float = 0.0

    @property
    def batch_id(self) -> int:
        return self.batch.batch_id

    def message(self, batch_size: int) -> tuple[int, tuple[int, ...], int, int]:
        """What a worker gets: the batch and the campaign's batch size (the worker pads to it)."""
        return (self.batch.batch_id, self.batch.positions, self.batch.size_class, batch_size)


def plan_only(planner):
    """Make an embedded planner yield Tickets instead of built batches (it still records the
    plan in the ledger): no id batch, stack or column decode happens on the driver."""

    def window(store, start, stop_pos, batches, stop):
        for batch in batches:
            if stop.is_set():
                return
            yield batch.batch_id, Ticket(batch)

    overrides = {
        "work": Ticket,  # GeneratedPlanner: no id batch
        "_window": window,  # ColumnarPlanner: no column read or decode
        "_build": lambda batch, loaded, key=None: Ticket(batch),  # record Planner: no stacking
    }
    for name, method in overrides.items():  # instance attributes shadow the methods
        setattr(planner, name, method)
    return planner


def run_cluster_campaign(config: CampaignConfig, progress, source=None):
    """Run (or resume) ``config`` on the Ray cluster of ``config.cluster``; returns the
    CampaignResult. Ray is started for the run when not connected yet, and shut down after."""
    from drivesim.pipeline import sources as src
    from drivesim.pipeline.campaign import prepare_directory
    from drivesim.pipeline.lock import CampaignLock

    address = parse_cluster(config.cluster or "")
    if config.workers is not None and config.workers < 1:
        raise ConfigError(f"workers: {config.workers} (at least 1)")
    ray = _ray()
    opened = source if source is not None else src.campaign_source(config)
    config.directory.mkdir(parents=True, exist_ok=True)
    with CampaignLock(config.out):
        config = prepare_directory(config)
        started = not ray.is_initialized()
        if started:
            ray.init(address=address, log_to_driver=False)
        try:
            return _Driver(config, progress, opened, source).run()
        finally:
            if started:
                ray.shutdown()


class _Driver:
    """One run of a campaign over Ray workers (see the module docstring)."""

    def __init__(self, config: CampaignConfig, progress, source, library_source):
        self.config, self.progress, self.source = config, progress, source
        self.library_source = library_source  # sent to the workers when given (else they open it)
        self.directory = config.directory
        self.ray = _ray()
        self.counts = dict(done=0, failed=0, failed_batches=0, this_run=0)
        self.notes = list(config.notes)
        self.queue: collections.deque[Ticket] = collections.deque()
        self.attempts: collections.Counter[int] = collections.Counter()

    def run(self):
        from drivesim.pipeline.generated import make_planner
        from drivesim.pipeline.plan import plan_settings

        ledger = Ledger(self.directory)
        try:
            self.counts["done"] = self.skipped = ledger.done_scenarios()
            self.counts["failed"] = ledger.failure_count()
            self.workers = self._start_workers(ledger)
            self._write_meta(ledger)
            self.start = time.perf_counter()
            self._emit("start")
            # the workers pad for their own devices: one device's rule here
            threads = self.config.loader_threads
            settings = plan_settings(self.batch_size, self.config.window_batches, 1, threads)
            planner = plan_only(make_planner(self.source, self.directory, settings, range(len(self.source))))
            self.plan = (ticket for _, ticket in planner(threading.Event()))
            self._schedule(ledger)
        finally:
            if hasattr(self, "plan"):
                self.plan.close()  # the planner's ledger connection
            ledger.close()
            for handle in [*getattr(self, "workers", {}).values(), *getattr(self, "starting", {}).values()]:
                self.ray.kill(handle, no_restart=True)
        return self._finish()

    def _spawn(self) -> Any:
        """Start one more worker actor (returns its handle at once)."""
        if not hasattr(self, "_actor"):
            from drivesim.pipeline.ray_worker import CampaignWorker

            gpus = 1 if self.ray.cluster_resources().get("GPU", 0) else 0
            self._actor = self.ray.remote(CampaignWorker).options(
                num_cpus=1, num_gpus=gpus, max_restarts=0, runtime_env={"env_vars": worker_env()}
            )
        self.spawned = getattr(self, "spawned", 0) + 1
        return self._actor.remote(self.config, self.library_source, self.spawned - 1)

    def _start_workers(self, ledger: Ledger) -> dict:
        """Start the workers and wait until each has built its executor: {name: handle}; notes
        for workers with another program than the campaign's (pipeline.program_identity)."""
        self.starting: dict = {}  # info ObjectRef -> handle of a worker joining during the run
        count = self.config.workers or default_workers(self.ray)
        handles = [self._spawn() for _ in range(count)]
        try:
            infos = self.ray.get([h.info.remote() for h in handles])
        except BaseException:
            for handle in handles:
                self.ray.kill(handle, no_restart=True)
            raise
        self.device_count = sum(info["devices"] for info in infos)
        # batches go to one worker each: sized for the first worker's devices
        first = infos[0]
        self.batch_size = batch_size.for_campaign(
            self.config, len(self.source), first["platform"], first["devices"], first.get("cores")
        )
        # the workers compute, not this driver: their programs are recorded and compared
        self.notes += worker_notes(ledger, {info["name"]: info["program"] for info in infos})
        return {info["name"]: h for info, h in zip(infos, handles, strict=True)}

    def _grow(self) -> None:
        """With the default worker count: start a worker for each node (GPU) that joined the
        cluster, or whose worker was lost while the node stayed."""
        if self.config.workers is not None:
            return
        for _ in range(default_workers(self.ray) - len(self.workers) - len(self.starting)):
            handle = self._spawn()
            self.starting[handle.info.remote()] = handle

    def _joined(self, ledger: Ledger, ref, handle) -> None:
        try:
            info = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            self.ray.kill(handle, no_restart=True)
            self.notes.append(f"a joining worker failed to start ({type(exc).__name__})")
            return
        self.workers[info["name"]] = handle
        self.device_count += info["devices"]
        self.notes += worker_notes(ledger, {info["name"]: info["program"]})
        self.notes.append(f"worker {info['name']} joined during the run")

    def _next(self) -> Ticket | None:
        if self.queue:
            return self.queue.popleft()
        return next(self.plan, None)

    def _schedule(self, ledger: Ledger) -> None:
        """Keep IN_FLIGHT batches per worker; settle whichever finishes first; every
        JOIN_CHECK_S let joined nodes add workers; no batch for stall_s fails the run."""
        inflight: dict = {}  # ObjectRef -> (worker name, Ticket)
        load: collections.Counter[str] = collections.Counter()
        stall = self.config.stall_s if self.config.stall_s > 0 else float("inf")
        checked = progressed = time.monotonic()
        while True:
            for name, handle in list(self.workers.items()):
                while load[name] < IN_FLIGHT and (ticket := self._next()) is not None:
                    inflight[handle.run_batch.remote(ticket.message(self.batch_size))] = (name, ticket)
                    load[name] += 1
            if not inflight:
                return
            if time.monotonic() - checked > JOIN_CHECK_S:
                self._grow()
                checked = time.monotonic()
            waiting = list(inflight) + list(self.starting)
            ready, _ = self.ray.wait(waiting, num_returns=1, timeout=min(JOIN_CHECK_S, stall))
            if not ready:
                if time.monotonic() - progressed > stall:
                    raise RuntimeError(f"{self.directory}: no batch finished in {stall:g} s; rerun to resume")
                continue
            progressed = time.monotonic()
            for ref in ready:
                if ref in self.starting:
                    self._joined(ledger, ref, self.starting.pop(ref))
                    continue
                name, ticket = inflight.pop(ref)
                load[name] -= 1
                self._settle(ledger, ref, name, ticket)
            interrupt.raise_if_pending()  # a SIGTERM whose own exception a finalizer swallowed

    def _settle(self, ledger: Ledger, ref, name: str, ticket: Ticket) -> None:
        """Record a finished batch, or requeue / fail it."""
        exceptions = self.ray.exceptions
        try:
            out = self.ray.get(ref)
        except exceptions.RayActorError as exc:
            self.queue.appendleft(ticket)  # the worker is gone: another one redoes the batch
            if name in self.workers:
                self.ray.kill(self.workers.pop(name), no_restart=True)
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                self.notes.append(f"worker {name} lost ({reason[:120]}); its batches were redone")
            if not self.workers:
                raise RuntimeError(f"{self.directory}: every Ray worker was lost; rerun to resume") from exc
            return
        except exceptions.RayError as exc:  # the batch raised in the worker
            self.attempts[ticket.batch_id] += 1
            if self.attempts[ticket.batch_id] <= self.config.retries:
                self.queue.append(ticket)
                return
            ledger.mark_failed(ticket.batch_id, f"{type(exc).__name__}: {exc}"[:4000])
            self.counts["failed_batches"] += 1
            self._emit("batch_failed", ticket, error=str(exc))
            return
        self._record(ledger, ticket, out)

    def _record(self, ledger: Ledger, ticket: Ticket, out: dict) -> None:
        phases = PhaseTimes(**out["phases"])
        phases.load_s += ticket.load_s
        row = phases.as_dict() | dict(
            num_scenarios=out["num_scenarios"],
            size_class=out["size_class"],
            host_rss_bytes=out["host_rss_bytes"],
        )
        failures = [(int(sid), reason) for sid, reason in out["failures"]]
        check = ShardCheck(int(out["rows"]), out["sha256"], out.get("bytes"), out.get("mtime_ns"))
        ledger.mark_done(ticket.batch_id, out["shard"], row, failures, check=check, worker=out["worker"])
        n = out["num_scenarios"]
        self.counts["done"] += n
        self.counts["this_run"] += n
        self.counts["failed"] += len(failures)
        self._emit("batch", ticket, phases=phases, out=out)

    def _emit(self, kind: str, ticket: Ticket | None = None, phases=None, out=None, error=None) -> None:
        elapsed = time.perf_counter() - self.start
        extra: dict = {}
        if ticket is not None:
            extra = dict(
                batch_id=ticket.batch_id, size_class=ticket.batch.size_class, phases=phases, error=error
            )
            extra["num_scenarios"] = out["num_scenarios"] if out else len(ticket.batch.positions)
            extra["num_failed"] = len(out["failures"]) if out else 0
            extra["worker"] = out["worker"] if out else None
        self.progress(
            BatchEvent(
                kind=kind,
                done=self.counts["done"],
                failed=self.counts["failed"],
                total=len(self.source),
                skipped=self.skipped,
                elapsed_s=elapsed,
                scenarios_per_s=self.counts["this_run"] / elapsed if elapsed > 0 else 0.0,
                device_count=self.device_count,
                **extra,
            )
        )

    def _write_meta(self, ledger: Ledger) -> None:
        from drivesim.pipeline.plan import describe_source

        kinds = [f"ray worker {name}" for name in self.workers]
        self.session = sessions.record_start(self.directory, self.config.backend, kinds, 0)
        first = {} if "started_at" in ledger.meta() else {"started_at": str(time.time())}
        ledger.set_meta(
            machine=f"ray cluster ({len(self.workers)} workers) from {platform.node()}",
            devices=str(kinds),
            backend=self.config.backend,
            device_count=str(self.device_count),
            batch_size=str(self.batch_size),
            workload=describe_source(self.source),
            cluster=self.config.cluster or "",
            policy_training=json.dumps(policy_provenance.training_records(self.config.policy)),
            **first,
        )

    def _finish(self):
        from drivesim.pipeline.campaign import finish_run

        return finish_run(self, total=len(self.source), device_count=self.device_count, notes=self.notes)
