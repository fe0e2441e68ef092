"""The loader stage for a columnar scenario store: no per-scenario Python on the hot path.

A window is planned from the store's ``class_*`` columns alone (one vectorized pass), into
exactly the batches the record-by-record ``Planner`` would make (each bucket's positions in
order, cut every ``batch_size``), and each batch is decoded from the window's Arrow table by
``store_columns.decode_batch``: a ``take`` and a reshape per field. Its infos travel as an
Arrow table, so the result writer builds its shard from whole columns too. A batch whose
decode or vectorized checks fail is rebuilt record by record, which names every bad
scenario as a failed row (the campaign goes on).
"""

from __future__ import annotations

import threading

import numpy as np

from drivesim.core.validate import ScenarioError
from drivesim.pipeline.ledger import Ledger, PlannedBatch
from drivesim.pipeline.plan import HostWork, Planner, PlanSettings
from drivesim.pipeline.timing import Stopwatch
from drivesim.scenarios.batching import BucketKey
from drivesim.scenarios.remainders import merge_partial
from drivesim.scenarios.sources import StoreSource
from drivesim.scenarios.store_columns import decode_batch, read_span


def planner_for(source, directory, settings: PlanSettings, positions: range) -> Planner:
    """The loader stage of a campaign: columnar for a (current-schema) store source, else
    the record-by-record Planner."""
    if isinstance(source, StoreSource) and hasattr(source.store, "bucket_keys"):
        return ColumnarPlanner(source, directory, settings, positions)
    return Planner(source, directory, settings, positions)


def plan_window(keys: np.ndarray, start: int, batch_size: int) -> list[PlannedBatch]:
    """Batches of a window whose rows (positions start..) have bucket ``keys`` (n, 4): every
    bucket's positions in order, cut every ``batch_size``; full batches in the order they fill,
    then the partial ones merged (scenarios.remainders.merge_partial) by first position (the order of
    the record planner)."""
    if len(keys) == 0:
        return []
    uniq, inverse = unique_rows(keys)
    full, partial = [], []
    for k in range(len(uniq)):
        pos = start + np.flatnonzero(inverse == k)
        for i in range(0, len(pos), batch_size):
            chunk = pos[i : i + batch_size]
            if len(chunk) == batch_size:
                batch = PlannedBatch(int(chunk[0]), tuple(chunk.tolist()), int(uniq[k][0]))
                full.append((int(chunk[-1]), batch))
            else:
                partial.append((_key(uniq[k]), chunk.tolist()))
    partial.sort(key=lambda kv: kv[1][0])
    filled = {_key(uniq[k]) for k in range(len(uniq)) if np.count_nonzero(inverse == k) >= batch_size}
    parts = merge_partial(partial, batch_size, filled)
    merged = [PlannedBatch(p[0], tuple(p), key.agents) for key, p in parts]
    return [batch for _, batch in sorted(full, key=lambda item: item[0])] + merged


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_inverse=True)`` of (n, k) integer rows (same rows, same
    lexicographic order, inverse (n,)), without its sort of whole rows: each column's codes
    in sorted order, combined in mixed radix with the codes of the columns before (order
    preserving; renumbered densely after each column, so below n * n), and the 1-d unique of
    the last codes."""
    if len(keys) and bool((keys == keys[0]).all()):  # one bucket: the common case
        return keys[:1].copy(), np.zeros(len(keys), np.intp)
    code = np.zeros(len(keys), np.int64)
    for column in keys.T:
        values, inverse = np.unique(column, return_inverse=True)
        code = np.unique(code * len(values) + inverse.reshape(-1), return_inverse=True)[1].reshape(-1)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return keys[first], inverse.reshape(-1)


def _key(row: np.ndarray) -> BucketKey:
    """The BucketKey of a row of bucket columns (log class -1: no log)."""
    agents, lanes, points, log = (int(v) for v in row)
    return BucketKey(agents, lanes, points, None if log < 0 else log)


class ColumnarPlanner(Planner):
    """Planner over a StoreSource: windows planned from bucket columns, batches decoded from
    whole columns (one window's Arrow table in memory at a time)."""

    def __call__(self, stop: threading.Event):
        store = self.source.store
        keys = store.bucket_keys().stacked()
        ledger = Ledger(self.directory)
        try:
            for window in self.walk(ledger):
                if stop.is_set():
                    return
                window_id, start, stop_pos = window.window_id, window.start, window.stop
                if window.planned:
                    batches = ledger.open_batches(window_id)
                else:  # the plan is known whole before its first batch: recorded at once
                    plan = plan_window(keys[start:stop_pos], start, window.batch_size)
                    done = ledger.done_ids(window_id)
                    ledger.record_plan(window_id, window_id, stop_pos, plan)
                    batches = [b for b in plan if b.batch_id not in done]
                if batches:
                    yield from self._window(store, start, stop_pos, batches, stop)
        finally:
            ledger.close()

    def _window(self, store, start: int, stop_pos: int, batches: list[PlannedBatch], stop):
        """(batch id, HostWork) of each batch of one window, decoded from its rows read as
        far as the batch reaches (WindowRows): the first batch starts before the window is
        read whole, and rows no later batch needs are let go."""
        rows = WindowRows(store, start, stop_pos, batches)
        for k, batch in enumerate(batches):
            if stop.is_set():
                return
            with Stopwatch() as sw:
                table = rows.table(k)
                work = self._columns(table, rows.first, batch)
            work.load_s = sw.seconds
            yield work.batch_id, work

    def work(self, batch: PlannedBatch) -> HostWork:
        """HostWork of a planned batch from one read of its rows (a cluster worker's batch)."""
        if not batch.positions:
            return super().work(batch)
        with Stopwatch() as sw:
            lo, hi = min(batch.positions), max(batch.positions) + 1
            work = self._columns(read_span(self.source.store, lo, hi), lo, batch)
        work.load_s = sw.seconds
        return work

    def _columns(self, table, start: int, batch: PlannedBatch) -> HostWork:
        """HostWork of one batch from the window table; record by record if that fails."""
        positions = np.asarray(batch.positions, np.int64)
        if batch.size_class and not np.any(self.source.repeated(positions)):
            try:
                scenario, infos = decode_batch(
                    table, positions - start, positions, self.settings.padded_batch, str(self.source.path)
                )
                return HostWork(batch.batch_id, batch.size_class, scenario, infos, [])
            except ScenarioError:
                pass  # the record path names each bad scenario
        return super().work(batch)  # the record path names each bad scenario


class WindowRows:
    """The rows of one window (positions start..stop-1) read row group by row group as its
    batches (in their order) reach them: ``table(k)`` holds every row batch k needs, first
    position ``first``, reading only the row groups not read yet and dropping those that
    batch k and every later batch start after (the window's memory shrinks as it goes).
    (Reading the next batch's rows in a thread of their own while one is decoded was no
    faster: Arrow's read already spreads over the cores.)"""

    def __init__(self, store, start: int, stop: int, batches: list[PlannedBatch]):
        self.store, self.start, self.stop = store, start, stop
        ends = [max(b.positions) + 1 if b.positions else start for b in batches]
        lows = [min(b.positions) if b.positions else stop for b in batches]
        self._need = np.maximum.accumulate(np.asarray(ends, np.int64))  # rows read for batch k
        self._keep = np.minimum.accumulate(np.asarray(lows, np.int64)[::-1])[::-1]  # first row still needed
        self._parts: list = []  # (first position, table) per read, in order
        self._read_to = start
        self.first = start

    def table(self, k: int):
        """The rows from ``first`` up to what batch ``k`` needs (one Arrow table, a chunk per
        row group)."""
        import pyarrow as pa

        from drivesim.scenarios.store_columns import read_span

        need = int(self._need[k])
        if need > self._read_to:  # read to the end of the last row group: none read twice
            last = self.store.row_groups(self._read_to, need)[-1]
            end = min(self.stop, self.store.row_group_start(last) + int(self.store.row_group_rows[last]))
            self._parts.append((self._read_to, read_span(self.store, self._read_to, end)))
            self._read_to = end
        keep = int(self._keep[k])
        while len(self._parts) > 1 and self._parts[1][0] <= keep:
            self._parts.pop(0)
        self.first = self._parts[0][0]
        return pa.concat_tables([t for _, t in self._parts])
