"""Padding host scenarios to fixed shapes, bucketing them by size class and stacking them
into host batches (one shape per bucket, so each bucket compiles once)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from drivesim.core.signals import NO_SIGNAL
from drivesim.core.types import (
    IDM_DEFAULTS,
    AgentState,
    IDMParams,
    LogTrajectory,
    MOBILParams,
    RoadMap,
    Scenario,
    SignalPlan,
    replace,
)
from drivesim.core.validate import ScenarioError
from drivesim.scenarios.record import ScenarioRecord

# padding value of each AgentState field (pad_scenario and stack_bucket's fast path)
AGENT_FILL = dict(
    x=0.0, y=0.0, heading=0.0, speed=0.0, accel=0.0, length=1.0, width=1.0, valid=False, route=0, kind=0
)


def _pad_axis(values: np.ndarray, axis: int, size: int, fill) -> np.ndarray:
    """Pad ``values`` along ``axis`` to ``size`` with ``fill`` (or the last entry if fill='edge')."""
    missing = size - values.shape[axis]
    if missing < 0:
        raise ValueError(f"cannot pad axis {axis} of size {values.shape[axis]} down to {size}")
    if missing == 0:
        return values
    if fill == "edge":
        last = np.take(values, [-1], axis=axis)
        pad = np.repeat(last, missing, axis=axis)
    else:
        shape = list(values.shape)
        shape[axis] = missing
        pad = np.full(shape, fill, values.dtype)
    return np.concatenate([values, pad], axis=axis)


def pad_signal(plan: SignalPlan | None, n: int, num_agents: int) -> SignalPlan:
    """A scenario's SignalPlan padded to ``num_agents`` (``n`` real slots); agents that meet
    no signal, padding slots included, get drivesim.core.signals.NO_SIGNAL."""
    if plan is None:
        return SignalPlan(**{k: np.full(num_agents, v, np.float32) for k, v in NO_SIGNAL.items()})
    return SignalPlan(
        **{
            k: _pad_axis(np.asarray(getattr(plan, k), np.float32), 0, num_agents, v)
            for k, v in NO_SIGNAL.items()
        }
    )


def pad_scenario(
    sc: Scenario,
    num_agents: int,
    num_lanes: int,
    num_points: int,
    log_steps: int | None = None,
    signals: bool | None = None,
) -> Scenario:
    """Pad one host scenario to (N, L, P[, T]) = (num_agents, num_lanes, num_points, log_steps).

    Padding agents have valid=False, unit box size and default IDM parameters; padding
    lanes have lane_valid=False; polylines repeat their last point. signals: give the result
    a SignalPlan (True; no-signal rows where the scenario has none) or not (False); None:
    keep the scenario's.
    """
    ag = sc.agents
    pa = lambda v, fill: _pad_axis(np.asarray(v), 0, num_agents, fill)  # noqa: E731
    agents = AgentState(**{k: pa(getattr(ag, k), fill) for k, fill in AGENT_FILL.items()})
    idm = IDMParams(**{k: pa(getattr(sc.idm, k), IDM_DEFAULTS[k]) for k in IDM_DEFAULTS})
    centers = _pad_axis(np.asarray(sc.road.centers), 1, num_points, "edge")
    centers = _pad_axis(centers, 0, num_lanes, 0.0)
    road = RoadMap(
        centers=centers,
        widths=_pad_axis(np.asarray(sc.road.widths), 0, num_lanes, 0.0),
        lane_valid=_pad_axis(np.asarray(sc.road.lane_valid), 0, num_lanes, False),
        sort_axis=np.asarray(sc.road.sort_axis),
        conflict_xy=np.asarray(sc.road.conflict_xy),
        conflict_radius=np.asarray(sc.road.conflict_radius),
    )
    log = None
    if sc.log is not None:
        steps = log_steps or sc.log.valid.shape[0]
        pt = lambda v, fill: _pad_axis(_pad_axis(np.asarray(v), 1, num_agents, fill), 0, steps, fill)  # noqa: E731
        log = LogTrajectory(
            xy=pt(sc.log.xy, 0.0),
            heading=pt(sc.log.heading, 0.0),
            speed=pt(sc.log.speed, 0.0),
            valid=pt(sc.log.valid, False),
            replay=pa(sc.log.replay, False),
        )
    with_signal = sc.signal is not None if signals is None else signals
    mobil = None
    if sc.mobil is not None:  # padding agents never change lanes
        mobil = MOBILParams(
            **{k: pa(getattr(sc.mobil, k), 0.0) for k in ("politeness", "b_safe", "threshold")},
            enabled=pa(sc.mobil.enabled, False),
        )
    return Scenario(
        agents=agents,
        idm=idm,
        stop_s=pa(sc.stop_s, np.inf),
        road=road,
        ego_index=sc.ego_index,
        episode_length=sc.episode_length,
        scenario_id=sc.scenario_id,
        valid=sc.valid,
        log=log,
        signal=pad_signal(sc.signal, len(np.asarray(ag.x)), num_agents) if with_signal else None,
        mobil=mobil,
    )


def stack_scenarios(scenarios: list[Scenario]) -> Scenario:
    """Stack equally shaped host scenarios along a new leading batch axis."""
    import jax

    return jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(v) for v in leaves]), *scenarios)


def pad_and_stack(scenarios: list[Scenario], num_agents: int | None = None) -> Scenario:
    """Pad scenarios to common (N, L, P, T) (the maximum, or ``num_agents``) and stack them."""
    n = num_agents or max(s.agents.x.shape[0] for s in scenarios)
    lanes = max(s.road.widths.shape[0] for s in scenarios)
    points = max(s.road.centers.shape[1] for s in scenarios)
    logs = [s.log.valid.shape[0] for s in scenarios if s.log is not None]
    steps = max(logs) if logs else None
    signals = any(s.signal is not None for s in scenarios)
    return stack_scenarios([pad_scenario(s, n, lanes, points, steps, signals) for s in scenarios])


# --- size classes and bucketing -------------------------------------------------------

SIZE_CLASSES = (8, 16, 32, 64, 128)
# Every agent's box corners are tested against every lane segment each step, but padding
# lanes cost little next to padding points (W32 highway on CPU: 8 lanes x 2 points runs as
# fast as 5 x 2, 8 x 4 at 0.57x), so lane classes are coarse and point classes start at 2
# (straight lanes). Coarse classes mean fewer buckets.
LANE_CLASSES = (8, 32, 128, 256)
POINT_CLASSES = (2, 4, 8, 16, 32)
LOG_CLASSES = (16, 32, 64, 128, 256, 512, 1024)


def class_of(value: int, classes: tuple[int, ...], what: str) -> int:
    """Smallest class >= value; ScenarioError when value exceeds the largest class."""
    for c in classes:
        if value <= c:
            return c
    raise ScenarioError(f"{what} {value} exceeds the largest class {classes[-1]}", field=what)


def size_class(num_agents: int, classes: tuple[int, ...] = SIZE_CLASSES) -> int:
    """Agent size class of a scenario with ``num_agents`` agent slots (8/16/32/64/128)."""
    if num_agents < 1:
        raise ScenarioError("zero agents", field="agents")
    return class_of(int(num_agents), classes, "agents")


@dataclass(frozen=True)
class BucketKey:
    """What must agree for scenarios to stack: agent, lane, point and log-length classes."""

    agents: int
    lanes: int
    points: int
    log_steps: int | None


@dataclass
class HostBatch:
    """A stacked host batch of one bucket.

    scenario: Scenario with NumPy fields and leading axis B (padding scenarios, if any,
    have valid=False and come after the real ones); records / positions: the real
    scenarios (len <= B) and their source positions; size_class: agent slots per scenario.
    """

    scenario: Scenario
    records: list[ScenarioRecord]
    positions: list[int]
    size_class: int

    @property
    def batch_size(self) -> int:
        return int(np.asarray(self.scenario.valid).shape[0])

    @property
    def real_agents(self) -> int:
        return sum(r.num_agents for r in self.records)

    @property
    def agent_slots(self) -> int:
        return self.batch_size * self.size_class


def padding_waste(batches) -> float:
    """Padded agent slots / real agent slots over ``batches`` (0 = no padding)."""
    real = sum(b.real_agents for b in batches)
    slots = sum(b.agent_slots for b in batches)
    return (slots - real) / real if real else 0.0


@dataclass(frozen=True)
class BucketConfig:
    """Padding classes of the bucketing (each ascending)."""

    sizes: tuple[int, ...] = SIZE_CLASSES
    lanes: tuple[int, ...] = LANE_CLASSES
    points: tuple[int, ...] = POINT_CLASSES
    log_steps: tuple[int, ...] = LOG_CLASSES


def bucket_key(sc: Scenario, cfg: BucketConfig = BucketConfig()) -> BucketKey:
    """The bucket of one unpadded host scenario; ScenarioError if it fits no class."""
    log = None
    if sc.log is not None:
        log = class_of(int(np.asarray(sc.log.valid).shape[0]), cfg.log_steps, "log steps")
    return BucketKey(
        agents=size_class(sc.num_agents, cfg.sizes),
        lanes=class_of(int(np.asarray(sc.road.widths).shape[0]), cfg.lanes, "lanes"),
        points=class_of(int(np.asarray(sc.road.centers).shape[1]), cfg.points, "points per lane"),
        log_steps=log,
    )


def stack_bucket(records: list[ScenarioRecord], key: BucketKey, batch_size: int | None = None) -> Scenario:
    """Pad records to ``key``'s shapes and stack; with ``batch_size``, append padding
    scenarios (copies of the first with valid=False) up to it. Leading axis B.

    Fills one preallocated array per field (the result equals padding each scenario with
    ``pad_scenario`` and stacking, bit for bit); unusual inputs (mixed dtypes, shapes that do
    not fit ``key``) take that per-scenario path, which also names what does not fit.
    """
    scenarios = [r.scenario for r in records]
    try:
        return _fill_bucket(scenarios, key, batch_size)
    except _SlowPath:
        return _pad_then_stack(scenarios, key, batch_size)


def _pad_then_stack(scenarios: list[Scenario], key: BucketKey, batch_size: int | None) -> Scenario:
    """The reference path of stack_bucket: pad each scenario, then stack every leaf."""
    signals = any(sc.signal is not None for sc in scenarios)
    padded = [pad_scenario(sc, key.agents, key.lanes, key.points, key.log_steps, signals) for sc in scenarios]
    if batch_size is not None and len(padded) < batch_size:
        filler = replace(padded[0], valid=np.asarray(False), scenario_id=np.asarray(-1, np.int32))
        padded += [filler] * (batch_size - len(padded))
    return stack_scenarios(padded)


# --- vectorised padding + stacking (stack_bucket's fast path) --------------------------


class _SlowPath(Exception):
    """The fast path does not handle this input; use the per-scenario reference path."""


def _rows(indices: list[int]):
    """Index of the batch rows ``indices``: a slice when they run 0..k-1."""
    if indices[-1] == len(indices) - 1:
        return slice(0, len(indices))
    return np.asarray(indices)


def _gather(arrays: list[np.ndarray], indices: list[int], shape: tuple[int, ...]) -> np.ndarray:
    """arrays[indices] (all of ``shape``) as one (len(indices), *shape) array."""
    if len(indices) == 1:
        return arrays[indices[0]][None]
    return np.concatenate([arrays[i] for i in indices]).reshape(len(indices), *shape)


def _by_shape(shapes: list[tuple[int, ...]]) -> dict[tuple[int, ...], list[int]]:
    """Indices of the arrays of each shape (one group in the common equal-shape case)."""
    if shapes.count(shapes[0]) == len(shapes):
        return {shapes[0]: list(range(len(shapes)))}
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, shape in enumerate(shapes):
        groups.setdefault(shape, []).append(i)
    return groups


def _fill_stack(arrays: list[np.ndarray], sizes: tuple[int, ...], fill, total: int, edge: bool = False):
    """Stack ``arrays`` padded on their leading axes to ``sizes`` with ``fill``: (total, *sizes, *tail).

    Rows past len(arrays) copy row 0 (padding scenarios). edge: the last padded axis repeats
    each array's last entry instead (polyline points). Raises _SlowPath on mixed dtypes,
    ranks or trailing shapes, or arrays larger than ``sizes``.
    """
    first = arrays[0]
    rank, dtype, tail = len(sizes), first.dtype, first.shape[len(sizes) :]
    if len({a.dtype for a in arrays}) > 1:
        raise _SlowPath
    groups = _by_shape([a.shape for a in arrays])
    if any(len(shape) != first.ndim or shape[rank:] != tail for shape in groups):
        raise _SlowPath
    out = np.full((total, *sizes, *tail), fill, dtype)
    for shape, indices in groups.items():
        if any(s > t for s, t in zip(shape, sizes, strict=False)) or (edge and shape[rank - 1] == 0):
            raise _SlowPath
        block = _gather(arrays, indices, shape)
        lead = tuple(slice(0, s) for s in shape[:rank])
        rows = _rows(indices)
        out[(rows, *lead)] = block
        if edge and shape[rank - 1] < sizes[-1]:
            last = block[(slice(None),) * rank + (slice(-1, None),)]
            out[(rows, *lead[:-1], slice(shape[rank - 1], None))] = last
    out[len(arrays) :] = out[0]
    return out


def _leaves(items: list, path: str) -> list[np.ndarray]:
    """The leaf at dotted ``path`` of every item, as NumPy arrays."""
    return list(map(np.asarray, map(attrgetter(path), items)))


def _stack_plain(scenarios: list[Scenario], path: str, extra: list | None, total: int) -> np.ndarray:
    """np.stack of an unpadded leaf, then the padding scenarios' leaves: ``extra`` (None:
    the first scenario's) up to ``total`` rows."""
    leaves = _leaves(scenarios, path)
    fill = total - len(leaves)
    return np.stack(leaves + ([leaves[0]] * fill if extra is None else [np.asarray(extra)] * fill))


def _fill_bucket(scenarios: list[Scenario], key: BucketKey, batch_size: int | None) -> Scenario:
    """stack_bucket by field: one preallocated array per leaf, each scenario slice-assigned."""
    if not scenarios or any(s.mobil is not None for s in scenarios):  # per-agent MOBIL: pad_scenario
        raise _SlowPath
    total = max(len(scenarios), batch_size or 0)
    lanes, grid = (key.lanes,), (key.lanes, key.points)

    def padded(path, sizes, fill, edge=False):
        return _fill_stack(_leaves(scenarios, path), sizes, fill, total, edge)

    def plain(path, extra=None):
        return _stack_plain(scenarios, path, extra, total)

    def agent(name, fill):
        return padded(name, (key.agents,), fill)

    agents = AgentState(**{k: agent("agents." + k, fill) for k, fill in AGENT_FILL.items()})
    road = RoadMap(
        centers=padded("road.centers", grid, 0.0, edge=True),
        widths=padded("road.widths", lanes, 0.0),
        lane_valid=padded("road.lane_valid", lanes, False),
        sort_axis=plain("road.sort_axis"),
        conflict_xy=plain("road.conflict_xy"),
        conflict_radius=plain("road.conflict_radius"),
    )
    return Scenario(
        agents=agents,
        idm=IDMParams(**{k: agent("idm." + k, IDM_DEFAULTS[k]) for k in IDM_DEFAULTS}),
        stop_s=agent("stop_s", np.inf),
        road=road,
        ego_index=plain("ego_index"),
        episode_length=plain("episode_length"),
        scenario_id=plain("scenario_id", np.asarray(-1, np.int32)),
        valid=plain("valid", np.asarray(False)),
        log=_fill_logs(scenarios, key, total),
        signal=_fill_signals(scenarios, key, total),
    )


def _fill_signals(scenarios: list[Scenario], key: BucketKey, total: int) -> SignalPlan | None:
    """The stacked SignalPlans (total, N), None when no scenario has one (scenarios without
    one get no-signal rows in a batch where others have one)."""
    if all(sc.signal is None for sc in scenarios):
        return None
    plans = [pad_signal(sc.signal, sc.num_agents, sc.num_agents) for sc in scenarios]
    return SignalPlan(
        **{k: _fill_stack(_leaves(plans, k), (key.agents,), fill, total) for k, fill in NO_SIGNAL.items()}
    )


def _fill_logs(scenarios: list[Scenario], key: BucketKey, total: int) -> LogTrajectory | None:
    """The stacked logs: (total, T, N[, 2]) padded with fill on time and agents."""
    with_log = sum(sc.log is not None for sc in scenarios)
    if with_log == 0:
        return None
    if with_log != len(scenarios) or key.log_steps is None:
        raise _SlowPath
    logs = [sc.log for sc in scenarios]
    shape = (key.log_steps, key.agents)

    def timed(name, fill):
        return _fill_stack(_leaves(logs, name), shape, fill, total)

    return LogTrajectory(
        xy=timed("xy", 0.0),
        heading=timed("heading", 0.0),
        speed=timed("speed", 0.0),
        valid=timed("valid", False),
        replay=_fill_stack(_leaves(logs, "replay"), (key.agents,), False, total),
    )


class BucketGroups:
    """Items grouped by BucketKey: ``add`` hands a group back (and forgets it) once it holds
    ``size`` items; ``drain`` hands back the partial groups, the one whose first item came
    first leading. The grouping of the campaign planner (drivesim.pipeline.plan) and of
    :func:`bucket_records`."""

    def __init__(self, size: int):
        self.size = size
        self._groups: dict[BucketKey, list] = {}

    def __len__(self) -> int:
        """Items held (in partial groups)."""
        return sum(len(v) for v in self._groups.values())

    def add(self, key: BucketKey, item) -> list | None:
        """Append ``item`` to its group; the group's items when that made it full, else None."""
        items = self._groups.setdefault(key, [])
        items.append(item)
        if len(items) < self.size:
            return None
        del self._groups[key]
        return items

    def drain(self) -> list[tuple[BucketKey, list]]:
        """(key, items) of every partial group, oldest first, and forget them."""
        rest = list(self._groups.items())
        self._groups.clear()
        return rest


def _key_order(key: BucketKey) -> tuple[int, int, int, int]:
    return (key.agents, key.lanes, key.points, key.log_steps or 0)


def bucket_records(
    records: list[ScenarioRecord],
    batch_size: int,
    config: BucketConfig = BucketConfig(),
    pad_partial: bool = True,
) -> list[HostBatch]:
    """HostBatches of ``records`` (positions: their indices), grouped by BucketKey with
    :class:`BucketGroups` as the campaign planner groups them: each full batch when it fills,
    then the partial ones, smallest agent class first (padded up to ``batch_size`` with
    padding scenarios when ``pad_partial``, so every batch of a bucket has one shape).
    Raises ScenarioError for a scenario that fits no class."""
    if batch_size < 1:
        raise ValueError(f"bucket_records: batch_size must be >= 1, got {batch_size}")
    groups = BucketGroups(batch_size)

    def make(key: BucketKey, items) -> HostBatch:
        chosen = [r for r, _ in items]
        scenario = stack_bucket(chosen, key, batch_size if pad_partial else None)
        positions = [p for _, p in items]
        return HostBatch(scenario=scenario, records=chosen, positions=positions, size_class=key.agents)

    batches = []
    for position, record in enumerate(records):
        key = bucket_key(record.scenario, config)
        full = groups.add(key, (record, position))
        if full is not None:
            batches.append(make(key, full))
    rest = sorted(groups.drain(), key=lambda kv: _key_order(kv[0]))
    return batches + [make(key, items) for key, items in rest]
