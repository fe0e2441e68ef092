"""Deterministic batch planning and host batch preparation (the loader stage).

Positions ``0..len(source)-1`` are cut into windows of ``batch_size * window_batches``. Inside a
window, scenarios are loaded in position order and bucketed by (agent size class, has log);
a bucket that reaches ``batch_size`` becomes a batch, and the rest are flushed at the window's
end, together with one batch of the window's failed scenarios. A batch's id is its smallest
position. The plan is a pure function of the window's scenarios, so a resumed run rebuilds the
same batches; a window whose plan is complete in the ledger is rebuilt from the ledger alone.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from drivesim.core.types import replace
from drivesim.pipeline import sources as src
from drivesim.pipeline.ledger import Ledger, PlannedBatch
from drivesim.pipeline.results import ScenarioInfo
from drivesim.pipeline.timing import Stopwatch
from drivesim.scenarios.batching import pad_scenario, stack_scenarios
from drivesim.scenarios.record import ScenarioRecord


@dataclass
class HostWork:
    """One prepared batch on the host.

    scenario: stacked Scenario (NumPy, leading axis = padded batch size) or None when every
    scenario failed; infos: the valid rows in batch order (the first ``len(infos)`` entries of
    the stack); failed: (info, reason) pairs; load_s: host preparation seconds.
    """

    batch_id: int
    size_class: int
    scenario: object | None
    infos: list[ScenarioInfo]
    failed: list[tuple[ScenarioInfo, str]]
    load_s: float = 0.0


@dataclass(frozen=True)
class PlanSettings:
    """What the loader needs: batch size, window length, padded batch length (a multiple of
    the device count) and loader threads."""

    batch_size: int
    window: int
    padded_batch: int
    loader_threads: int


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _load(source, position: int) -> ScenarioRecord | tuple[ScenarioInfo, str]:
    """A valid record, or (info, reason) when loading or validation fails."""
    name = getattr(source, "name", "source")
    try:
        record = source.load(position)
        src.validate(record, where=f"{record.source} scenario {position} ({record.name})")
        return record
    except Exception as exc:  # noqa: BLE001 - a bad scenario is recorded, the campaign goes on
        info = ScenarioInfo(
            position,
            getattr(exc, "family", None) or "unknown",
            str(getattr(exc, "path", None) or name),
            getattr(exc, "name", None),
            None,
            None,
        )
        return info, f"{type(exc).__name__}: {exc}"


def _info(record: ScenarioRecord, position: int, size_class: int) -> ScenarioInfo:
    return ScenarioInfo(position, record.family, record.source, record.name, record.num_agents, size_class)


def stack_batch(records: list[ScenarioRecord], size_class: int, padded_batch: int):
    """Pad records to (size_class agents, pow2 lanes/points/log steps) and stack them, adding
    invalid copies of the first scenario up to ``padded_batch``; leading axis padded_batch."""
    scs = [r.scenario for r in records]
    lanes = next_pow2(max(s.road.widths.shape[0] for s in scs))
    points = next_pow2(max(s.road.centers.shape[1] for s in scs))
    logs = [s.log.valid.shape[0] for s in scs if s.log is not None]
    steps = next_pow2(max(logs)) if logs else None
    padded = [pad_scenario(s, size_class, lanes, points, steps) for s in scs]
    filler = replace(padded[0], valid=np.asarray(False))
    padded += [filler] * (padded_batch - len(padded))
    return stack_scenarios(padded)


class Planner:
    """Produces HostWork for every batch not yet done, window by window (runs in the loader
    thread, with its own ledger connection)."""

    def __init__(self, source, directory, settings: PlanSettings, positions: range):
        self.source, self.directory, self.settings, self.positions = source, directory, settings, positions

    def windows(self) -> list[tuple[int, int, int]]:
        """(window_id, start, stop) over this process's positions."""
        w = self.settings.window
        first, last = self.positions.start, self.positions.stop
        return [
            (start // w, start, min(start + w, last))
            for start in range(first - first % w, last, w)
            if min(start + w, last) > max(start, first)
        ]

    def __call__(self, stop: threading.Event):
        ledger = Ledger(self.directory)
        pool = ThreadPoolExecutor(self.settings.loader_threads, thread_name_prefix="drivesim-loader")
        try:
            for window_id, start, stop_pos in self.windows():
                if stop.is_set():
                    return
                start = max(start, self.positions.start)
                if ledger.window_planned(window_id):
                    yield from self._replay(ledger, window_id, pool, stop)
                else:
                    yield from self._plan(ledger, window_id, start, stop_pos, pool, stop)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            ledger.close()

    def _load_many(self, pool, positions):
        return list(pool.map(lambda p: _load(self.source, p), positions))

    def _replay(self, ledger: Ledger, window_id: int, pool, stop):
        for batch in ledger.open_batches(window_id):
            if stop.is_set():
                return
            with Stopwatch() as sw:
                loaded = self._load_many(pool, batch.positions)
                work = self._build(batch, list(zip(batch.positions, loaded, strict=False)))
            work.load_s = sw.seconds
            yield batch.batch_id, work

    def _plan(self, ledger: Ledger, window_id: int, start: int, stop_pos: int, pool, stop):
        size = self.settings.batch_size
        done = ledger.done_ids(window_id)
        buckets: dict[tuple[int, bool], list] = {}
        failed: list = []
        planned: list[PlannedBatch] = []
        chunk = max(size, 64)
        for lo in range(start, stop_pos, chunk):
            if stop.is_set():
                return
            with Stopwatch() as sw:
                positions = range(lo, min(lo + chunk, stop_pos))
                loaded = self._load_many(pool, positions)
            spent = sw.seconds
            for position, item in zip(positions, loaded, strict=False):
                if not isinstance(item, ScenarioRecord):
                    failed.append((position, item))
                    continue
                key = (src.size_class(item.num_agents), item.scenario.log is not None)
                bucket = buckets.setdefault(key, [])
                bucket.append((position, item))
                if len(bucket) == size:
                    del buckets[key]
                    work = self._emit(ledger, window_id, key[0], bucket, done, planned)
                    if work is not None:
                        work.load_s, spent = spent, 0.0
                        yield work.batch_id, work
        rest = sorted(buckets.items(), key=lambda kv: kv[1][0][0])
        groups = [(key[0], bucket) for key, bucket in rest] + ([(0, failed)] if failed else [])
        for size_class, bucket in groups:
            work = self._emit(ledger, window_id, size_class, bucket, done, planned)
            if work is not None:
                yield work.batch_id, work
        ledger.record_plan(window_id, start, stop_pos, planned)

    def _emit(self, ledger, window_id, size_class, bucket, done, planned) -> HostWork | None:
        batch = PlannedBatch(bucket[0][0], tuple(p for p, _ in bucket), size_class)
        planned.append(batch)
        if batch.batch_id in done:
            return None
        ledger.record_batch(window_id, batch)
        with Stopwatch() as sw:
            work = self._build(batch, bucket)
        work.load_s = sw.seconds
        return work

    def _build(self, batch: PlannedBatch, loaded: list) -> HostWork:
        good = [(p, r) for p, r in loaded if isinstance(r, ScenarioRecord)]
        failed = [
            (info, reason)
            for _, (info, reason) in ((p, r) for p, r in loaded if not isinstance(r, ScenarioRecord))
        ]
        size_class = batch.size_class or (max(src.size_class(r.num_agents) for _, r in good) if good else 0)
        good_fit = []
        for position, record in good:
            if record.num_agents > size_class:
                failed.append(
                    (
                        _info(record, position, None),
                        f"ValueError: num_agents {record.num_agents} > planned size class {size_class}",
                    )
                )
            else:
                good_fit.append((position, record))
        scenario = None
        if good_fit:
            scenario = stack_batch([r for _, r in good_fit], size_class, self.settings.padded_batch)
        infos = [_info(r, p, size_class) for p, r in good_fit]
        return HostWork(batch.batch_id, size_class, scenario, infos, failed)
