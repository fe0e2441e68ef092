"""The campaign's writer thread: each computed batch's shard (atomic, durable) first, then its
ledger row, in submission order; outcomes go back to the main thread through an events
queue, errors are re-raised there."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

from drivesim.parallel.memory import host_rss
from drivesim.pipeline import results as res
from drivesim.pipeline.ledger import Ledger
from drivesim.pipeline.plan import HostWork
from drivesim.pipeline.prefetch import Prefetcher
from drivesim.pipeline.timing import PhaseTimes, Stopwatch
from drivesim.pipeline.verify import shard_check


@dataclass
class Outcome:
    """A computed batch on its way to the writer."""

    work: HostWork
    metrics: dict | None
    phases: PhaseTimes
    error: str | None = None


def close_stages(stage, writer, stalled: BaseException | None) -> None:
    """Stop the stages; after a stall, give up on threads that do not stop and raise it."""
    if stalled is None:
        stage.close()
        writer.close()
        return
    try:
        stage.close(timeout=2.0)
        writer.close(timeout=2.0)
    except Exception:  # noqa: BLE001 - a stuck thread is what the stall error reports
        pass
    raise stalled


class Writer:
    """Writer thread: shard (atomic, durable) first, then the ledger; results go back to the
    main thread through ``events``. Errors are re-raised in the main thread."""

    def __init__(self, directory, process_index: int, policies: tuple[str, ...], events: queue.SimpleQueue):
        self.directory, self.process_index, self.policies, self.events = (
            directory,
            process_index,
            policies,
            events,
        )
        self.queue: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.stalled: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="drivesim-writer", daemon=True)
        self.thread.start()

    def abort(self, stage: Prefetcher):
        """The watchdog's stall action: the main thread stops waiting on ``stage`` or on us."""

        def on_stall(error: BaseException) -> None:
            self.stalled = error
            stage.abort(error)

        return on_stall

    def submit(self, outcome: Outcome) -> None:
        while self.thread.is_alive():
            if self.stalled is not None:
                raise self.stalled
            try:
                self.queue.put(outcome, timeout=0.1)
                break
            except queue.Full:
                continue
        self._check()

    def _check(self) -> None:
        if self.error is not None:
            raise RuntimeError(res.write_failure(self.directory, self.error)) from self.error

    def _work(self) -> None:
        ledger = Ledger(self.directory)
        try:
            while (outcome := self.queue.get()) is not None:
                self._write(ledger, outcome)
                self.events.put(outcome)
        except BaseException as exc:  # noqa: BLE001 - surfaced by submit/close
            self.error = exc
        finally:
            ledger.close()

    def _write(self, ledger: Ledger, outcome: Outcome) -> None:
        work = outcome.work
        if outcome.error is not None:
            ledger.mark_failed(work.batch_id, outcome.error)
            return
        phases = outcome.phases
        with Stopwatch() as encode:
            if outcome.metrics is not None:
                table = res.batch_table(
                    work.infos, outcome.metrics, self.policies, work.batch_id, self.process_index, work.failed
                )
            else:
                table = res.failed_table(work.failed, work.batch_id, self.process_index)
        with Stopwatch() as write:
            shard = res.write_shard(table, self.directory, work.batch_id)
        with Stopwatch() as checked:
            check = shard_check(shard)  # row count + SHA-256 of the durable shard, checked on resume
        phases.encode_s, phases.check_s = encode.seconds, checked.seconds
        phases.write_s = encode.seconds + write.seconds + checked.seconds
        phases.wall_end = time.time()
        row = phases.as_dict() | dict(
            num_scenarios=len(work.infos) + len(work.failed),
            size_class=work.size_class,
            host_rss_bytes=host_rss(),
        )
        failures = [(info.scenario_id, reason) for info, reason in work.failed]
        with Stopwatch() as recorded:
            shard_name = str(shard.relative_to(self.directory))
            ledger.mark_done(work.batch_id, shard_name, row, failures, check=check)
        phases.ledger_s = recorded.seconds

    def close(self, timeout: float | None = None) -> None:
        if self.thread.is_alive():
            self.queue.put(None, timeout=timeout)
            self.thread.join(timeout)
        self._check()
