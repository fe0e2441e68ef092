"""Per-batch phase timing and the progress events a campaign emits.

Every batch is timed in five phases: ``load_s`` (read/generate, validate, pad, stack on the
host, measured in the loader thread), ``h2d_s`` (device_put until the arrays are ready, in the
device prefetch thread), ``compute_s`` (dispatch until the result is ready), ``d2h_s`` (metrics
back to NumPy) and ``write_s`` (result table, Parquet shard + fsync, shard check; of which
``encode_s`` built the table and ``check_s`` hashed the shard); ``ledger_s`` is the ledger's
commit after it (not stored in the ledger's own row); ``compile_s`` is the XLA
compilation a batch of a new shape waited for (0 once the shape is compiled), kept out of
``compute_s``. Phases of different batches overlap, so their sum over batches exceeds the
wall time when the pipeline works.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field


@dataclass
class PhaseTimes:
    """Seconds spent per phase on one batch; ``wall_start``/``wall_end`` are epoch seconds."""

    load_s: float = 0.0
    h2d_s: float = 0.0
    compute_s: float = 0.0
    d2h_s: float = 0.0
    write_s: float = 0.0
    compile_s: float = 0.0
    encode_s: float = 0.0
    check_s: float = 0.0
    ledger_s: float = 0.0
    wall_start: float = field(default_factory=time.time)
    wall_end: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.seconds``."""

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


@dataclass(frozen=True, kw_only=True)
class BatchEvent:
    """What a campaign reports after each batch (the progress-callback API).

    kind: "start" (once, before the first batch: ``total`` known, nothing done yet),
        "batch" (a batch was written), "batch_failed" (its compute raised; ``error`` set),
        "end" (once, after the last batch).
    batch_id, num_scenarios, num_failed, size_class, phases: the batch (None for start/end).
    done, failed, total: scenarios done so far (this run and earlier runs of the campaign),
        scenarios that failed to load/validate so far, scenarios in the campaign.
    skipped: scenarios already done by an earlier run (resume).
    elapsed_s: wall seconds since this run started; scenarios_per_s: scenarios done by this
        run / elapsed_s (live throughput); device_count: devices in use.
    worker: the Ray worker that ran the batch (``node:pid``; None when run embedded).
    """

    kind: str
    done: int
    failed: int
    total: int
    skipped: int
    elapsed_s: float
    scenarios_per_s: float
    device_count: int
    batch_id: int | None = None
    num_scenarios: int = 0
    num_failed: int = 0
    size_class: int | None = None
    phases: PhaseTimes | None = None
    error: str | None = None
    worker: str | None = None


class FallbackClock:
    """Seconds the executor's exact fallback (drivesim.parallel.exact_pass) compiled and ran
    since this was made: (compile_s, run_s)."""

    def __init__(self, executor):
        self.executor = executor
        self.compile_s, self.run_s = executor.exact_pass.compile_seconds, executor.exact_pass.run_seconds

    def spent(self) -> tuple[float, float]:
        fallback = self.executor.exact_pass
        return fallback.compile_seconds - self.compile_s, fallback.run_seconds - self.run_s
