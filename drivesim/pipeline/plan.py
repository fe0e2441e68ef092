"""Deterministic batch planning and host batch preparation (the loader stage).

Positions ``0..len(source)-1`` are cut into windows of ``batch_size * window_batches``, each
begun in the ledger with its stop and batch size (:meth:`Planner.walk`): a resume with another
batch size keeps the windows already begun and cuts only the rest anew. Inside a window,
scenarios are loaded in position order and bucketed by their padding classes (agents, lanes,
points, log steps); a bucket that reaches ``batch_size`` becomes a batch, and the rest are
flushed at the window's end (those of buckets that filled no batch padded to one shape:
remainders.merge_partial), together with one batch of the window's failed scenarios. A
batch's id is its smallest position. The plan is a pure function of the window's scenarios,
so a resumed run rebuilds the same batches; a window whose plan is complete in the ledger is
rebuilt from the ledger alone.
"""

from __future__ import annotations

import collections
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from drivesim.core.validate import validate_scenario
from drivesim.pipeline.ledger import Ledger, PlannedBatch
from drivesim.pipeline.results import ScenarioInfo
from drivesim.pipeline.timing import Stopwatch
from drivesim.scenarios.batching import (
    BucketGroups,
    BucketKey,
    bucket_key,
    size_class,
    stack_bucket,
)
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.remainders import merge_partial, shared_keys
from drivesim.scenarios.sources import ScenarioSource


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


# A campaign of at most this many positions (this process's), in one window, is planned
# whole: its buckets are padded to the largest classes of the buckets alike in having logs
# (remainders.shared_keys), one program where there were several. Compiling a program costs
# seconds; padding a few thousand scenarios to larger classes costs a fraction of one. Larger
# campaigns keep each bucket's own classes (their speed) and their pipeline.
SHARE_BELOW = 4096


@dataclass(frozen=True, kw_only=True)
class PlanSettings:
    """What the loader needs: batch size, window length, padded batch length (a multiple of
    the device count), loader threads, and the campaign length (positions of this process)
    up to which buckets share programs (``share_below``, 0: never)."""

    batch_size: int
    window: int
    padded_batch: int
    loader_threads: int
    share_below: int = SHARE_BELOW


def plan_settings(batch_size: int, window_batches: int, devices: int, loader_threads: int) -> PlanSettings:
    """The one rule for a campaign's plan: windows of ``window_batches`` batches, every
    batch padded to a whole number of rows per device, the buckets of a campaign of one
    window of up to :data:`SHARE_BELOW` positions sharing programs."""
    return PlanSettings(
        batch_size=batch_size,
        window=batch_size * window_batches,
        padded_batch=-(-batch_size // devices) * devices,
        loader_threads=loader_threads,
        share_below=SHARE_BELOW,
    )


@dataclass(frozen=True)
class Window:
    """A stretch of positions ``start..stop-1`` planned together (``window_id`` = start), in
    batches of ``batch_size``; ``planned``: its plan is complete in the ledger."""

    window_id: int
    stop: int
    batch_size: int
    planned: bool

    @property
    def start(self) -> int:
        return self.window_id


def _load_all(source, positions, validated: bool) -> list:
    """:func:`_load` of each position, read together where the source reads several
    scenarios at once (``load_many``: a synthetic source generates a block per call)."""
    many = getattr(source, "load_many", None)
    if not callable(many):
        return [_load(source, p, validated) for p in positions]
    try:
        got = many(positions)
    except Exception:  # noqa: BLE001 - one position at a time names the one that fails
        return [_load(source, p, validated) for p in positions]
    return [_load(source, p, validated, item) for p, item in zip(positions, got, strict=True)]


def _load(source, position: int, validated: bool, loaded=None):
    """``(record, bucket key)`` of a valid scenario, or (info, reason) when loading or
    validation fails (or no padding class fits). ``loaded``: the record (or the exception)
    already read for ``position``."""
    name = getattr(source, "name", "source")
    try:
        if isinstance(loaded, Exception):
            raise loaded
        record = source.load(position) if loaded is None else loaded
        if not validated:
            validate_scenario(record.scenario, where=f"{record.source} scenario {position} ({record.name})")
        return record, bucket_key(record.scenario)
    except Exception as exc:  # noqa: BLE001 - a bad scenario is recorded, the campaign goes on
        info = ScenarioInfo(
            _scenario_id_at(source, position),
            getattr(exc, "family", None) or "unknown",
            str(getattr(exc, "path", None) or name),
            getattr(exc, "name", None),
            None,
            None,
        )
        return info, f"{type(exc).__name__}: {exc}"


def _scenario_id_at(source, position: int) -> int:
    """The id a result row of ``position`` carries when its scenario cannot be loaded: the
    source's own (``scenario_id_at``, e.g. a store's stored id), else the position."""
    at = getattr(source, "scenario_id_at", None)
    try:
        return int(at(position)) if callable(at) else position
    except Exception:  # noqa: BLE001 - an unreadable id falls back to the position
        return position


def describe_source(source) -> str:
    """One line describing a source for the ledger's meta (its ``describe()``, else its name)."""
    describe = getattr(source, "describe", None)
    return describe() if callable(describe) else getattr(source, "name", type(source).__name__)


def _pairs(positions, loaded: list) -> list:
    """(position, record) for each loaded scenario, (position, (info, reason)) for a failed one."""
    return [(p, item[0] if _ok(item) else item) for p, item in zip(positions, loaded, strict=True)]


def _ok(item) -> bool:
    return isinstance(item[0], ScenarioRecord)


def _info(
    record: ScenarioRecord, position: int, size_class: int | None, agents: int | None = None
) -> ScenarioInfo:
    """Descriptive row of a record (``agents``: its num_agents, when already counted). The row's
    scenario id is the record's own (synthetic: its position; CommonRoad: crc32 of the benchmark
    id; store: its stored id), so results join across campaigns."""
    agents = record.num_agents if agents is None else agents
    return ScenarioInfo(record.scenario_id, record.family, record.source, record.name, agents, size_class)


def batch_key(records: list[ScenarioRecord], size_class: int) -> BucketKey:
    """The padding shapes of a batch: ``size_class`` agents and the largest lane, point and
    log-step classes of its records (they agree for a planned batch: one bucket)."""
    keys = [bucket_key(r.scenario) for r in records]
    logs = [k.log_steps for k in keys if k.log_steps is not None]
    return BucketKey(
        size_class, max(k.lanes for k in keys), max(k.points for k in keys), max(logs) if logs else None
    )


def stack_batch(
    records: list[ScenarioRecord], size_class: int, padded_batch: int, key: BucketKey | None = None
):
    """Pad records to their bucket's classes (size_class agents; lanes, points and log steps
    from batching's classes, so each bucket has one shape and compiles once) and stack them,
    with padding scenarios (valid=False) up to ``padded_batch``; leading axis padded_batch.
    key: the records' common bucket key when known (saves recomputing it)."""
    if key is None or key.agents != size_class:
        key = batch_key(records, size_class)
    return stack_bucket(records, key, padded_batch)


@dataclass(frozen=True)
class LoadRun:
    """Positions the loader loads together: a slice of an unplanned window (``batch`` None;
    ``last``: the window's final slice) or one open batch of a planned window (resume)."""

    window_id: int  # the window's first position
    positions: tuple[int, ...]
    batch: PlannedBatch | None = None
    last: bool = False
    window_stop: int = 0  # the window's end position (unplanned windows)
    batch_size: int = 0  # the window's batch size (unplanned windows)


@dataclass
class _WindowPlan:
    """The plan of one unplanned window (positions window_id..stop-1) while its scenarios arrive."""

    window_id: int
    stop: int
    done: set[int]
    buckets: BucketGroups
    failed: list = field(default_factory=list)
    planned: list[PlannedBatch] = field(default_factory=list)
    full_keys: set[BucketKey] = field(default_factory=set)  # buckets that filled a batch
    held: list | None = None  # a window planned whole: (position, (record, key)) until its end
    held_s: float = 0.0  # seconds waited for the held scenarios (the first batch's load_s)


class Planner:
    """Produces HostWork for every batch not yet done, window by window (runs in the loader
    thread, with its own ledger connection). Loading reads ahead: the next run of positions
    is already loading in the pool while this thread buckets and stacks the current one, so
    the source's wait and the host's stacking overlap."""

    READ_AHEAD = 1  # runs of positions loading beyond the one being stacked

    def __init__(self, source, directory, settings: PlanSettings, positions: range):
        self.source, self.directory, self.settings, self.positions = source, directory, settings, positions
        # drivesim's own sources validate in ``load`` (their contract); others are validated here
        self.validated = isinstance(source, ScenarioSource)

    def windows(self) -> list[tuple[int, int, int]]:
        """(window_id, start, stop) over this process's positions: windows of
        ``settings.window`` positions from the first one; a window's id is its first
        position, so processes with disjoint positions never share a window."""
        w = self.settings.window
        first, last = self.positions.start, self.positions.stop
        return [(start, start, min(start + w, last)) for start in range(first, last, w)]

    def walk(self, ledger: Ledger):
        """The Windows over this process's positions, in order: a planned window as it was
        planned, a window begun but not planned (a killed run) with the stop and batch size it
        was begun with, and each further window of ``settings.window`` positions, begun in the
        ledger (window_starts) as it is reached. So a campaign grown by further sources keeps
        its plan and a resume with another batch size never cuts a begun window anew."""
        position, last = self.positions.start, self.positions.stop
        while position < last:
            planned = ledger.planned_stop(position)
            if planned is not None and planned > position:
                yield Window(position, planned, self.settings.batch_size, planned=True)
                position = planned
                continue
            want = min(position + self.settings.window, last)
            stop, size = ledger.begin_window(position, want, self.settings.batch_size)
            stop = min(stop, last)
            yield Window(position, stop, size, planned=False)
            position = stop

    def __call__(self, stop: threading.Event):
        ledger = Ledger(self.directory)
        pool = ThreadPoolExecutor(self.settings.loader_threads, thread_name_prefix="drivesim-loader")
        plan: _WindowPlan | None = None
        try:
            for run, loaded, spent in self._read_ahead(pool, self._runs(ledger), stop):
                if run.batch is not None:  # a planned window's open batch (resume)
                    yield self._rebuild(run, loaded, spent)
                    continue
                if plan is None or plan.window_id != run.window_id:
                    done = ledger.done_ids(run.window_id)
                    plan = _WindowPlan(run.window_id, run.window_stop, done, BucketGroups(run.batch_size))
                    if self._planned_whole(run):
                        plan.held = []
                yield from self._add(ledger, plan, run.positions, loaded, spent)
                if run.last:
                    yield from self._finish(ledger, plan)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            ledger.close()

    def _planned_whole(self, run: LoadRun) -> bool:
        """Whether ``run``'s window is this process's whole campaign, short enough to be
        planned whole (its buckets sharing programs: PlanSettings.share_below)."""
        whole = (run.window_id, run.window_stop) == (self.positions.start, self.positions.stop)
        return whole and len(self.positions) <= self.settings.share_below

    def _runs(self, ledger: Ledger):
        """LoadRuns of every window in order (:meth:`walk`): a planned window's open batches,
        else the window cut into slices of max(batch_size, 64) positions."""
        for window in self.walk(ledger):
            if window.planned:
                for batch in ledger.open_batches(window.window_id):
                    yield LoadRun(window.window_id, tuple(batch.positions), batch)
                continue
            step = max(window.batch_size, 64)
            for lo in range(window.start, window.stop, step):
                hi = min(lo + step, window.stop)
                yield LoadRun(
                    window.window_id,
                    tuple(range(lo, hi)),
                    last=hi == window.stop,
                    window_stop=window.stop,
                    batch_size=window.batch_size,
                )

    def _read_ahead(self, pool, runs, stop: threading.Event):
        """(run, loaded items, seconds waited for them) per run in order, keeping
        READ_AHEAD further runs loading in ``pool``."""
        runs, pending = iter(runs), collections.deque[tuple]()
        while not stop.is_set():
            while len(pending) <= self.READ_AHEAD and (run := next(runs, None)) is not None:
                pending.append((run, self._submit(pool, run.positions)))
            if not pending:
                return
            head, results = pending.popleft()
            with Stopwatch() as sw:
                loaded = [item for part in results for item in part]
            yield head, loaded, sw.seconds

    def _submit(self, pool, positions):
        """Start loading ``positions`` (a few tasks of consecutive positions per run); returns
        the iterator of per-task result lists."""
        step = max(1, -(-len(positions) // (4 * self.settings.loader_threads)))
        parts = [positions[i : i + step] for i in range(0, len(positions), step)]
        return pool.map(lambda part: _load_all(self.source, part, self.validated), parts)

    def _rebuild(self, run: LoadRun, loaded: list, spent: float) -> tuple[int, HostWork]:
        """(batch id, HostWork) of an open batch of a planned window, rebuilt from its positions."""
        assert run.batch is not None  # a resumed run carries its planned batch
        with Stopwatch() as sw:
            work = self._build(run.batch, _pairs(run.positions, loaded))
        work.load_s = spent + sw.seconds
        return work.batch_id, work

    def _add(self, ledger: Ledger, plan: _WindowPlan, positions, loaded, spent: float):
        """Bucket a slice of loaded scenarios; emit each bucket that fills (a window planned
        whole holds them until its end, and the seconds waited for them)."""
        if plan.held is not None:
            plan.held_s, spent = plan.held_s + spent, 0.0
        for position, item in zip(positions, loaded, strict=True):
            if not _ok(item):
                plan.failed.append((position, item))
            elif plan.held is not None:
                plan.held.append((position, item))
            else:
                for work in self._bucket(ledger, plan, position, *item):
                    work.load_s, spent = work.load_s + spent, 0.0
                    yield work.batch_id, work

    def _bucket(self, ledger: Ledger, plan: _WindowPlan, position: int, record, key: BucketKey):
        """Add one scenario to its bucket; the HostWork of the bucket when that filled it."""
        bucket = plan.buckets.add(key, (position, record))
        if bucket is not None:
            plan.full_keys.add(key)
            work = self._emit(ledger, plan, key.agents, bucket, key)
            if work is not None:
                yield work

    def _finish(self, ledger: Ledger, plan: _WindowPlan):
        """Flush the window's partial buckets (those of buckets that filled no batch padded to
        one shape: scenarios.remainders.merge_partial) and its failed scenarios; record the plan.
        A window planned whole buckets its held scenarios first, each under its shared key."""
        if plan.held is not None:
            shared = shared_keys({key for _, (_, key) in plan.held})
            for position, (record, key) in plan.held:
                for work in self._bucket(ledger, plan, position, record, shared[key]):
                    work.load_s, plan.held_s = work.load_s + plan.held_s, 0.0
                    yield work.batch_id, work
        rest = sorted(plan.buckets.drain(), key=lambda kv: kv[1][0][0])
        items = {position: item for _, bucket in rest for position, item in bucket}
        parts = merge_partial([(k, [p for p, _ in b]) for k, b in rest], plan.buckets.size, plan.full_keys)
        groups: list[tuple[BucketKey | None, list]] = [(k, [(p, items[p]) for p in ps]) for k, ps in parts]
        groups += [(None, plan.failed)] if plan.failed else []
        for key, bucket in groups:
            size_class = 0 if key is None else key.agents
            work = self._emit(ledger, plan, size_class, bucket, key)
            if work is not None:
                yield work.batch_id, work
        ledger.record_plan(plan.window_id, plan.window_id, plan.stop, plan.planned)

    def _emit(self, ledger, plan: _WindowPlan, size_class, bucket, key=None) -> HostWork | None:
        """Add a bucket to the window's plan as a batch; its HostWork unless already done."""
        batch = PlannedBatch(bucket[0][0], tuple(p for p, _ in bucket), size_class)
        plan.planned.append(batch)
        if batch.batch_id in plan.done:
            return None
        ledger.record_batch(plan.window_id, batch)
        with Stopwatch() as sw:
            work = self._build(batch, bucket, key)
        work.load_s = sw.seconds
        return work

    def work(self, batch: PlannedBatch) -> HostWork:
        """HostWork of a planned batch, built from its positions as this loader builds it
        (a cluster worker's whole life cycle of a batch: load, validate, stack)."""
        with Stopwatch() as sw:
            loaded = _load_all(self.source, batch.positions, self.validated)
            work = self._build(batch, _pairs(batch.positions, loaded))
        work.load_s = sw.seconds
        return work

    def _build(self, batch: PlannedBatch, loaded: list, key: BucketKey | None = None) -> HostWork:
        """HostWork of a batch: the stacked valid records (``key``: their common bucket, when
        the plan knows it) and the failed ones."""
        good = [(p, r, r.num_agents) for p, r in loaded if isinstance(r, ScenarioRecord)]
        failed = [r for _, r in loaded if not isinstance(r, ScenarioRecord)]
        agent_class = batch.size_class or (size_class(max(n for _, _, n in good)) if good else 0)
        good_fit = [(p, r, n) for p, r, n in good if n <= agent_class]
        failed += [
            (_info(r, p, None, n), f"ValueError: num_agents {n} > planned size class {agent_class}")
            for p, r, n in good
            if n > agent_class
        ]
        scenario = None
        if good_fit:
            records = [r for _, r, _ in good_fit]
            scenario = stack_batch(records, agent_class, self.settings.padded_batch, key)
        infos = [_info(r, p, agent_class, n) for p, r, n in good_fit]
        return HostWork(batch.batch_id, agent_class, scenario, infos, failed)
