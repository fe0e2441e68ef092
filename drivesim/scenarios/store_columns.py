"""Whole-column reads of a scenario store: bucket keys of every row, and a batch of one
bucket decoded straight into stacked (B, ...) arrays.

A store (schema version 2 and later) keeps each row padded to its bucket, so the rows of one bucket
have equal list lengths and a batch is ``take(rows)`` on the Arrow columns followed by one
``reshape`` per field: no per-row Python objects. The result equals
``batching.stack_bucket`` of the same records bit for bit (padding scenarios up to
``padded_batch`` copy the first row with valid=False and scenario_id=-1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from drivesim.core.ranges import extent_problem
from drivesim.core.types import AgentState, IDMParams, LogTrajectory, RoadMap, Scenario
from drivesim.core.validate import ScenarioError
from drivesim.scenarios.store import (
    CLASS_COLUMNS,
    FIELDS,
    column_name,
    field_shape,
    signal_of,
    stored_column,
)
from drivesim.scenarios.store_arrays import array_column

INFO_COLUMNS = ("family", "source", "name")
ALIGN = 64  # bytes: the alignment XLA's CPU client needs to share a host buffer
AGENT_FLOATS = ("x", "y", "heading", "speed", "accel", "length", "width")


@dataclass(frozen=True)
class BucketColumns:
    """The bucket of every store row, as (R,) int32 arrays (log: -1 for rows without a log)."""

    agents: np.ndarray
    lanes: np.ndarray
    points: np.ndarray
    log: np.ndarray

    def stacked(self) -> np.ndarray:
        """(R, 4) int32: agents, lanes, points, log classes per row."""
        return np.stack([self.agents, self.lanes, self.points, self.log], axis=1)


def bucket_columns(store) -> BucketColumns:
    """Read only the ``class_*`` columns of ``store`` (a ScenarioStore)."""
    table = store.reader().read(columns=list(CLASS_COLUMNS))
    cols = [table.column(n).to_numpy(zero_copy_only=False) for n in CLASS_COLUMNS]
    log = table.column("class_log").fill_null(-1).to_numpy(zero_copy_only=False)
    agents, lanes, points = (np.asarray(c, np.int32) for c in cols[:3])
    return BucketColumns(agents, lanes, points, np.asarray(log, np.int32))


def read_span(store, lo: int, hi: int) -> pa.Table:
    """Rows lo..hi-1 of ``store`` as one Arrow table (this thread's reader)."""
    groups = store.row_groups(lo, hi)
    table = store.reader().read_row_groups(list(groups))
    first = store.row_group_start(groups[0])
    return table.slice(lo - first, hi - lo)


def read_batch(store, positions, padded_batch: int | None = None):
    """(Scenario, infos) of store rows ``positions`` (one bucket): see ``decode_batch``."""
    positions = np.asarray(positions, np.int64)
    lo, hi = int(positions.min()), int(positions.max()) + 1
    return decode_batch(read_span(store, lo, hi), positions - lo, positions, padded_batch, str(store.path))


def decode_batch(table: pa.Table, rows, positions, padded_batch: int | None, where: str = ""):
    """Stacked Scenario of ``table`` rows ``rows`` (all of one bucket) and their infos.

    Returns (scenario with leading axis max(len(rows), padded_batch), infos table with columns
    scenario_id (the stored ids, as the record path gives them), family, source, name,
    num_agents (valid agents), size_class). ScenarioError (naming ``where`` and the column)
    when the rows do not share a bucket, a list does not fill its shape, or a vectorized
    check of the values fails.
    """
    rows = np.asarray(rows, np.int64)
    contiguous = len(rows) > 0 and rows[-1] - rows[0] + 1 == len(rows) and bool(np.all(np.diff(rows) == 1))
    t = table.slice(int(rows[0]), len(rows)) if contiguous else table.take(pa.array(rows))
    b = t.num_rows
    key = _common_key(t, where)
    dims = dict(zip(("N", "L", "P", "T"), key, strict=True))
    total = max(b, padded_batch or 0)
    arena = Arena(total, dims)
    leaves = {}
    for path, dtype, shape in FIELDS:
        name = column_name(path)
        col = stored_column(t, name, combine=False)
        if col is None:
            continue
        if shape == ():
            leaves[path] = _pad_rows(col.to_numpy(zero_copy_only=False), arena.take((), dtype), path)
            continue
        if path.startswith("log.") and dims["T"] is None:
            continue
        full = field_shape(shape, dims)
        if "signal.line_s" in leaves and not np.isfinite(leaves["signal.line_s"]).any():
            _chunks(col, dtype, full, (where, name))  # no stop line: checked, not copied (no signal)
            continue
        leaves[path] = _list_rows(col, arena.take(full, dtype), (where, name))
    scenario = _scenario(leaves)
    _check(scenario, b, where)
    _check_counts(t, scenario, b, where)
    infos = pa.table(
        {
            "scenario_id": pa.array(scenario.scenario_id[:b].astype(np.int64)),  # the stored ids
            **{k: t.column(k).combine_chunks() for k in INFO_COLUMNS},
            "num_agents": pa.array(scenario.agents.valid[:b].sum(axis=1).astype(np.int32)),
            "size_class": pa.array(np.full(b, key[0], np.int32)),
        }
    )
    return scenario, infos


def _common_key(t: pa.Table, where: str) -> tuple:
    """(agents, lanes, points, log or None) shared by every row; ScenarioError otherwise."""
    key = []
    for name in CLASS_COLUMNS:
        col = t.column(name)
        values = np.unique(col.fill_null(-1).to_numpy(zero_copy_only=False))
        if len(values) != 1:
            raise ScenarioError(
                f"rows of one batch have different buckets {values.tolist()}", path=where, field=name
            )
        key.append(None if values[0] == -1 else int(values[0]))
    if None in key[:3]:
        raise ScenarioError("missing bucket class", path=where, field="class_agents")
    return tuple(key)


def _list_rows(col, out: np.ndarray, where: tuple[str, str]) -> np.ndarray:
    """An array column (b rows, each prod(full) values; a ChunkedArray or an Array) copied
    into ``out`` (total, *full), chunk by chunk (no combined copy of the column first);
    padding rows copy row 0 (as _pad_rows). ScenarioError as ``_chunks``."""
    total, full = out.shape[0], out.shape[1:]
    size = int(np.prod(full))
    flat = out.reshape(total, size)
    row = 0
    for values, n in _chunks(col, out.dtype, full, where):
        flat[row : row + n] = values.reshape(n, size)
        row += n
    out[row:] = out[0]
    return out


def _chunks(col, dtype, full: tuple[int, ...], where: tuple[str, str]) -> list[tuple[np.ndarray, int]]:
    """(values, rows) of each chunk of an array column (binary or list: store.array_column),
    the rows' values back to back. ScenarioError when a row does not fill ``full`` or is null;
    ``where``: (file, column) for it."""
    size = int(np.prod(full))
    out = []
    for chunk in getattr(col, "chunks", [col]):
        values, offsets, null = array_column(chunk, dtype)
        if null.any() or not np.all(np.diff(offsets) == size):
            raise ScenarioError(f"a row's array does not fill shape {full}", path=where[0], field=where[1])
        out.append((values, len(chunk)))
    return out


def _pad_rows(values: np.ndarray, out: np.ndarray, path: str) -> np.ndarray:
    """values (b,) copied into ``out`` (total,): padding scenarios copy row 0, except
    scenario_id -1 and valid False (as batching.stack_bucket)."""
    b, total = values.shape[0], out.shape[0]
    out[:b] = values
    if total > b:
        out[b:] = {"scenario_id": -1, "valid": False}.get(path, values[0])
    return out


class Arena:
    """The leaves of one decoded batch, carved from one allocation: each leaf C-contiguous
    and starting on a 64-byte boundary (NumPy's own arrays start 16 bytes past one), which
    jax.device_put to a CPU device shares instead of copying. One large allocation also
    takes the kernel's huge pages (NumPy advises them), so filling it faults a few pages
    where a leaf each would fault thousands. Sized for every field of FIELDS at ``dims``
    (T None: no log), ``total`` rows each."""

    def __init__(self, total: int, dims: dict):
        sizes = [_leaf_bytes(total, field_shape(shape, dims), dtype) for path, dtype, shape in FIELDS]
        self.total = total
        self._raw = np.empty(sum(sizes) + ALIGN * (len(sizes) + 1), np.uint8)
        self._at = -self._raw.ctypes.data % ALIGN

    def take(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised (total, *shape) ``dtype`` array of the arena."""
        nbytes = _leaf_bytes(self.total, shape, dtype)
        out = self._raw[self._at : self._at + nbytes].view(dtype).reshape(self.total, *shape)
        self._at += -(-nbytes // ALIGN) * ALIGN
        return out


def _leaf_bytes(total: int, shape: tuple, dtype) -> int:
    if any(d is None for d in shape):  # a log field of a batch without logs
        return 0
    return total * int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _scenario(leaves: dict) -> Scenario:
    pick = lambda prefix: {p.split(".", 1)[1]: v for p, v in leaves.items() if p.startswith(prefix)}  # noqa: E731
    logs = pick("log.")
    return Scenario(
        agents=AgentState(**pick("agents.")),
        idm=IDMParams(**pick("idm.")),
        stop_s=leaves["stop_s"],
        road=RoadMap(**pick("road.")),
        ego_index=leaves["ego_index"],
        episode_length=leaves["episode_length"],
        scenario_id=leaves["scenario_id"],
        valid=leaves["valid"],
        log=LogTrajectory(**logs) if logs else None,
        signal=signal_of(pick("signal.")),
    )


def _extent(values, mask) -> tuple[float, float] | None:
    """(least, greatest) of ``values`` (b, ...) where ``mask`` (b, k) (its leading axes; None:
    everywhere) holds, NaN when a checked value is NaN; None when nothing is checked. Reduces
    in place: no masked copy of the column, no widened dtype."""
    if mask is None or mask.all():
        if values.size == 0:
            return None
        return float(values.min()), float(values.max())
    if not mask.any():
        return None
    where = mask.reshape(mask.shape + (1,) * (values.ndim - mask.ndim))
    return (
        float(np.min(values, where=where, initial=np.inf)),
        float(np.max(values, where=where, initial=-np.inf)),
    )


def _check(sc: Scenario, b: int, where: str) -> None:
    """Vectorized validation of the first ``b`` rows (validate_scenario's value checks, in its
    order), from each checked column's extent over its real entries."""
    ag = sc.agents
    valid = ag.valid[:b]
    fail = lambda field, reason: ScenarioError(reason, path=where, field=field)  # noqa: E731
    if not np.all(valid.any(axis=1)):
        raise fail("agents.valid", "zero agents (a scenario has no valid agent)")
    ego = sc.ego_index[:b]
    n = valid.shape[1]
    if np.any((ego < 0) | (ego >= n)) or not np.all(valid[np.arange(b), np.clip(ego, 0, n - 1)]):
        raise fail("ego_index", "ego index is not a valid agent slot")
    extents = {f"agents.{k}": _extent(getattr(ag, k)[:b], valid) for k in AGENT_FLOATS}
    for name in AGENT_FLOATS:
        if not _finite(extents[f"agents.{name}"]):
            raise fail(f"agents.{name}", "non-finite value (NaN or Inf)")
    if any(e is not None and e[0] <= 0 for e in (extents["agents.length"], extents["agents.width"])):
        raise fail("agents.length/width", "box size must be > 0")
    if not _finite(_extent(sc.road.centers[:b], None)):
        raise fail("road.centers", "non-finite lane point")
    if np.any(sc.episode_length[:b] < 1):
        raise fail("episode_length", "episode length must be >= 1")
    if sc.signal is not None:
        for name in ("line_s", "cycle", "offset", "green", "amber"):
            if np.any(np.isnan(getattr(sc.signal, name)[:b][valid])):
                raise fail(f"signal.{name}", "NaN value")
        if np.any(sc.signal.cycle[:b][valid] <= 0):
            raise fail("signal.cycle", "cycle length must be > 0 s")
    for name, (values, mask) in _range_fields(sc, b, valid).items():
        extent = extents[name] if name in extents else _extent(values, mask)
        problem = None if extent is None else extent_problem(name, *extent)
        if problem is not None:
            raise fail(*problem)


def _finite(extent: tuple[float, float] | None) -> bool:
    return extent is None or bool(np.isfinite(extent[0]) and np.isfinite(extent[1]))


def _range_fields(sc: Scenario, b: int, valid) -> dict:
    """The physical-range fields of validate_scenario over the first ``b`` rows, in its order:
    name -> (values (b, ...), mask of the real entries (b, k) over its leading axes)."""
    ag, idm, road = sc.agents, sc.idm, sc.road
    fields = {
        f"agents.{k}": (getattr(ag, k)[:b], valid) for k in ("x", "y", "speed", "accel", "length", "width")
    }
    fields |= {f"idm.{k}": (getattr(idm, k)[:b], valid) for k in idm.__dataclass_fields__}
    lanes = road.lane_valid[:b].astype(bool)
    fields |= {"road.widths": (road.widths[:b], lanes), "road.centers": (road.centers[:b], lanes)}
    if sc.log is not None:
        logged = sc.log.valid[:b].astype(bool)
        fields |= {"log.xy": (sc.log.xy[:b], logged), "log.speed": (sc.log.speed[:b], logged)}
    return fields


def _check_counts(t: pa.Table, sc: Scenario, b: int, where: str) -> None:
    """Every row's stored ``num_agents`` (its own agent slots) is within 1..the bucket's slots
    and covers every valid slot."""
    if "num_agents" not in t.column_names:
        return
    stored = t.column("num_agents").to_numpy(zero_copy_only=False).astype(np.int64)
    slots = sc.agents.valid.shape[1]
    beyond = sc.agents.valid[:b] & (np.arange(slots)[None, :] >= stored[:, None])
    if np.any((stored < 1) | (stored > slots)) or np.any(beyond):
        raise ScenarioError(
            f"agent count outside 1..{slots} or below the valid slots", path=where, field="num_agents"
        )
