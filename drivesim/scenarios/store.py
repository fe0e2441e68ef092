"""drivesim's own scenario store: one Parquet file, one row per scenario, columnar.

Every Scenario field is a column (``agents_x``, ``road_centers``, ``log_xy``, ...). Schema
version 4 stores an array as one binary value per row, versions 2 and 3 as a list column; both
read (drivesim.scenarios.store_arrays). Version 3 (version 2 plus ``agents_kind``, the
road-user type; a version-2 store still reads, every agent a vehicle) stores each row *padded
to its bucket* (agent, lane, point and log-length classes, in the ``class_*`` columns) beside its own dims
(``num_agents`` N, ``num_lanes`` L, ``num_points`` P, ``log_steps`` T), so

* rows of one bucket have equal list lengths: a batch of one bucket is a ``take`` of whole
  columns reshaped to (B, ...) arrays (``read_batch``), with no per-row Python, bit for bit
  what padding and stacking the records one by one gives;
* bucketing is a vectorized pass over the ``class_*`` columns (``bucket_keys``);
* ``load(position)`` slices a row back to exactly its original arrays (dtype and shape).

Writing is streamed in row groups and atomic (temporary file, then rename). Reading keeps one
Parquet reader and one decoded row group per thread: a ``pyarrow.parquet.ParquetFile`` shared
by concurrent threads is not safe (it crashed or hung in Arrow's read-range cache), so no
reader state is shared. Version-1 stores (unpadded rows) are refused with a one-line error
naming ``drivesim scenarios convert``, which rewrites them. Version 3 adds the traffic-signal
columns (``signal_line_s``, ...; rows without signals hold drivesim.core.signals.NO_SIGNAL);
version-2 stores, which have none, are read as scenarios without signals. A row whose stop
lines are all at +inf reads back with ``signal=None``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivesim.core.signals import NO_SIGNAL
from drivesim.core.types import AgentState, IDMParams, LogTrajectory, RoadMap, Scenario, SignalPlan
from drivesim.core.validate import ScenarioError, validate_scenario
from drivesim.scenarios.batching import BucketKey, bucket_key, stack_bucket
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.store_arrays import array_column, binary_column, zeros_like_column

SCHEMA_VERSION = 4
# the first version whose array columns are binary (before it: list columns)
BINARY_SINCE = 4
# columns added after version 2, absent from a version-1 or -2 store: agents_kind reads as
# zeros (every agent a vehicle), the signal columns as no signals
ADDED_COLUMNS = ("agents_kind",)
READ_VERSIONS = (1, 2, 3, SCHEMA_VERSION)
VERSION_KEY = b"drivesim.schema_version"

F32, I32, BOOL = np.float32, np.int32, np.bool_
# (field path, dtype, shape in dims N, L, P, T); () = scalar.
FIELDS: tuple[tuple[str, type, tuple], ...] = (
    *((f"agents.{k}", F32, ("N",)) for k in ("x", "y", "heading", "speed", "accel", "length", "width")),
    ("agents.valid", BOOL, ("N",)),
    ("agents.route", I32, ("N",)),
    ("agents.kind", I32, ("N",)),
    *((f"idm.{k}", F32, ("N",)) for k in ("v0", "T", "s0", "a", "b", "delta")),
    ("stop_s", F32, ("N",)),
    ("road.centers", F32, ("L", "P", 2)),
    ("road.widths", F32, ("L",)),
    ("road.lane_valid", BOOL, ("L",)),
    ("road.sort_axis", F32, (2,)),
    ("road.conflict_xy", F32, (2,)),
    ("road.conflict_radius", F32, ()),
    ("ego_index", I32, ()),
    ("episode_length", I32, ()),
    ("scenario_id", I32, ()),
    ("valid", BOOL, ()),
    ("log.xy", F32, ("T", "N", 2)),
    ("log.heading", F32, ("T", "N")),
    ("log.speed", F32, ("T", "N")),
    ("log.valid", BOOL, ("T", "N")),
    ("log.replay", BOOL, ("N",)),
    *((f"signal.{k}", F32, ("N",)) for k in NO_SIGNAL),
)
ARROW = {F32: pa.float32(), I32: pa.int32(), BOOL: pa.bool_()}
META_COLUMNS = (
    ("family", pa.string()),
    ("source", pa.string()),
    ("name", pa.string()),
    ("num_agents", pa.int32()),
    ("num_lanes", pa.int32()),
    ("num_points", pa.int32()),
    ("log_steps", pa.int32()),
)
# the bucket of each row: the padded dims its arrays are stored with (class_log null: no log)
CLASS_COLUMNS = ("class_agents", "class_lanes", "class_points", "class_log")
DIMS = ("N", "L", "P", "T")


def column_name(path: str) -> str:
    return path.replace(".", "_")


def schema(version: int = SCHEMA_VERSION) -> pa.Schema:
    """The Arrow schema of a store of ``version`` (arrays: binary columns from BINARY_SINCE,
    list columns before; nullable log columns)."""
    cols = [pa.field(n, t, nullable=(n == "log_steps")) for n, t in META_COLUMNS]
    cols += [pa.field(n, pa.int32(), nullable=(n == "class_log")) for n in CLASS_COLUMNS]
    for path, dtype, shape in FIELDS:
        array = pa.large_binary() if version >= BINARY_SINCE else pa.list_(ARROW[dtype])
        t = ARROW[dtype] if shape == () else array
        cols.append(pa.field(column_name(path), t, nullable=path.startswith("log.")))
    return pa.schema(cols, metadata={VERSION_KEY: str(version).encode()})


def stored_column(table: pa.Table, name: str, combine: bool = True) -> pa.Array | pa.ChunkedArray | None:
    """Column ``name`` of a store table as one array (``combine`` False: its chunks as read,
    no copy). A column absent from an older store: an ADDED_COLUMNS one reads as zeros
    (agents_kind: every agent a vehicle), a signal column as None (no signals)."""
    if name in table.column_names:
        column = table.column(name)
        return column.combine_chunks() if combine else column
    if name.startswith("signal_"):
        return None
    if name not in ADDED_COLUMNS:
        return table.column(name).combine_chunks()  # the missing column's own error
    return zeros_like_column(table.column("agents_valid").combine_chunks(), BOOL, I32)


def field_shape(shape: tuple, dims: dict) -> tuple[int, ...]:
    """A FIELDS shape with its dim letters replaced by ``dims`` values."""
    return tuple(dims[d] if isinstance(d, str) else d for d in shape)


def leaf(sc: Scenario, path: str):
    """The leaf at dotted ``path`` of a Scenario (None inside a missing log)."""
    obj = sc
    for part in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part)
    return obj


# Parquet encoding of a store, chosen by measurement (a W32 highway store, 16,384 rows):
# dictionary pages only for the repeated string columns (family, source; the float arrays are
# near-unique, where a dictionary page grows the file and slows the read), LZ4 pages (the
# random float columns do not compress, but the constant ones do: a binary store without
# compression is 1.8x the bytes and reads at the same CPU cost), and row groups of 4,096 rows
# (a campaign reads whole windows; row groups of 512 read at half the rate). Stores written
# with other encodings read the same.
ROW_GROUP_ROWS = 4096
WRITE_OPTIONS = {
    "compression": "lz4",
    "use_dictionary": [f.name for f in schema() if pa.types.is_string(f.type) and f.name != "name"],
}


class StoreWriter:
    """Streams ScenarioRecords into a store file, ``row_group_size`` rows per row group.

    Rows keep their write order (a store position is its write index). Use as a context
    manager; the file appears (atomically) on a clean exit only.
    """

    def __init__(self, path: str | Path, row_group_size: int = ROW_GROUP_ROWS):
        self.path = Path(path)
        self.row_group_size = row_group_size
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self._writer: Any = None
        self._rows: list[ScenarioRecord] = []
        self.count = 0

    def __enter__(self) -> StoreWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(self._tmp, schema(), **WRITE_OPTIONS)
        return self

    def write(self, record: ScenarioRecord) -> None:
        """Append one record (validated first; ScenarioError if it is unusable)."""
        validate_scenario(record.scenario, where=f"{record.source}#{record.name}")
        bucket_key(record.scenario)  # ScenarioError now if it fits no padding class
        self._rows.append(record)
        self.count += 1
        if len(self._rows) >= self.row_group_size:
            self._flush()

    def write_batch(self, scenario: Scenario, family: str, source: str, names=None) -> None:
        """Append a stacked host batch (NumPy leaves, leading axis B; every row keeps the
        batch's N/L/P/T, its padding slots included). Each row is validated like ``write``.
        names: B strings (default ``FAMILY-ID``)."""
        import jax

        batch = int(np.asarray(scenario.valid).shape[0])
        leaves = jax.tree_util.tree_map(np.asarray, scenario)
        ids = leaves.scenario_id.reshape(batch)
        names = [f"{family}-{i}" for i in ids] if names is None else list(names)
        for k in range(batch):
            row = jax.tree_util.tree_map(lambda v, k=k: v[k], leaves)
            self.write(ScenarioRecord(row, family, source, names[k]))

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(_to_table(self._rows), row_group_size=len(self._rows))
            self._rows = []

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self._flush()
            self._writer.close()
            if exc_type is None:
                os.replace(self._tmp, self.path)
        finally:
            self._tmp.unlink(missing_ok=True)


def write_store(path: str | Path, records, row_group_size: int = ROW_GROUP_ROWS) -> int:
    """Write an iterable of ScenarioRecords to a store; returns the number written."""
    with StoreWriter(path, row_group_size) as writer:
        for record in records:
            writer.write(record)
    return writer.count


def _to_table(records: list[ScenarioRecord]) -> pa.Table:
    """One row group: records grouped by bucket, each group padded and stacked at once
    (batching.stack_bucket) and written as whole columns, then put back in write order."""
    keys = [bucket_key(r.scenario) for r in records]
    groups: dict[BucketKey, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    tables, order = [], []
    for key, rows in groups.items():
        tables.append(_bucket_table([records[i] for i in rows], key))
        order += rows
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if order != sorted(order):
        table = table.take(pa.array(np.argsort(np.asarray(order), kind="stable")))
    return table.combine_chunks()


def _log_steps(sc: Scenario) -> int:
    """T of a scenario's log (ScenarioError if it has none, in a bucket with logs)."""
    if sc.log is None:
        raise ScenarioError("a scenario without a log in a bucket of scenarios with logs")
    return sc.log.valid.shape[0]


def _bucket_table(records: list[ScenarioRecord], key: BucketKey) -> pa.Table:
    """Rows of one bucket: meta columns and the records padded to ``key`` as list columns."""
    scs = [r.scenario for r in records]
    b = len(records)
    stacked = stack_bucket(records, key)
    has_log = key.log_steps is not None
    data = {
        "family": pa.array([r.family for r in records], pa.string()),
        "source": pa.array([r.source for r in records], pa.string()),
        "name": pa.array([r.name for r in records], pa.string()),
        "num_agents": pa.array([s.num_agents for s in scs], pa.int32()),
        "num_lanes": pa.array([np.asarray(s.road.widths).shape[0] for s in scs], pa.int32()),
        "num_points": pa.array([np.asarray(s.road.centers).shape[1] for s in scs], pa.int32()),
        "log_steps": pa.array([_log_steps(s) if has_log else None for s in scs], pa.int32()),
        "class_agents": pa.array(np.full(b, key.agents, np.int32)),
        "class_lanes": pa.array(np.full(b, key.lanes, np.int32)),
        "class_points": pa.array(np.full(b, key.points, np.int32)),
        "class_log": pa.array(np.full(b, key.log_steps or 0, np.int32), mask=np.full(b, not has_log)),
    }
    for path, dtype, shape in FIELDS:
        value = leaf(stacked, path)
        name = column_name(path)
        if value is None and path.startswith("signal."):  # no signals: the no-signal plan
            value = np.full((b, key.agents), NO_SIGNAL[path.split(".", 1)[1]], dtype)
        if shape == ():
            data[name] = pa.array(np.asarray(value, dtype).reshape(b))
        elif value is None:
            data[name] = pa.nulls(b, pa.large_binary())
        else:
            data[name] = binary_column(np.asarray(value).reshape(b, -1), dtype)
    return pa.table(data, schema=schema())


class ScenarioStore:
    """Lazy reader of a store: ``len(store)``, ``store.load(position)``, ``iter(store)``,
    ``bucket_keys()`` and ``read_batch(positions)`` (drivesim.scenarios.store_columns).

    Safe to use from several threads: each thread opens its own Parquet reader and keeps its
    own decoded row group. Errors (missing file, not a store, wrong schema version, a
    corrupt row) are ScenarioErrors naming the file and the row.
    """

    def __init__(self, path: str | Path, allow_version_1: bool = False):
        self.path = Path(path)
        file = self._open()
        meta = file.schema_arrow.metadata or {}
        version = meta.get(VERSION_KEY)
        if version is None:
            raise ScenarioError(
                "not a drivesim scenario store (no schema version)",
                path=str(self.path),
                field="schema metadata",
            )
        self.version = int(version)
        if self.version == 1 and not allow_version_1:
            raise ScenarioError(
                f"store schema version 1 is not read by this drivesim (version {SCHEMA_VERSION}); "
                f"convert it: drivesim scenarios convert {self.path} --out NEW.parquet",
                path=str(self.path),
                field="schema metadata",
            )
        if self.version not in READ_VERSIONS:
            raise ScenarioError(
                f"unsupported store schema version {self.version} (this drivesim reads {SCHEMA_VERSION})",
                path=str(self.path),
                field="schema metadata",
            )
        md = file.metadata
        self.row_group_rows = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)])
        self._starts = np.cumsum(np.concatenate([[0], self.row_group_rows])).astype(np.int64)
        self._local = threading.local()
        self._local.file = file

    def _open(self) -> pq.ParquetFile:
        try:
            return pq.ParquetFile(self.path, pre_buffer=False)
        except (OSError, pa.ArrowException) as err:
            raise ScenarioError(f"cannot open the scenario store: {err}", path=str(self.path)) from None

    def reader(self) -> pq.ParquetFile:
        """This thread's own Parquet reader of the store (opened on first use)."""
        file = getattr(self._local, "file", None)
        if file is None:
            file = self._local.file = self._open()
        return file

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __iter__(self) -> Iterator[ScenarioRecord]:
        for position in range(len(self)):
            yield self.load(position)

    def row_groups(self, lo: int, hi: int) -> range:
        """Indices of the row groups holding positions lo..hi-1."""
        first = int(np.searchsorted(self._starts, lo, side="right") - 1)
        last = int(np.searchsorted(self._starts, max(hi - 1, lo), side="right") - 1)
        return range(first, last + 1)

    def row_group_start(self, index: int) -> int:
        return int(self._starts[index])

    def _group(self, index: int) -> _RowGroup:
        cached = getattr(self._local, "cached", None)
        if cached is None or cached[0] != index:
            cached = self._local.cached = (
                index,
                _RowGroup(self.reader().read_row_group(index), self.version),
            )
        return cached[1]

    def load(self, position: int) -> ScenarioRecord:
        """The record at ``position`` (0-based row); ScenarioError if it cannot be decoded."""
        if not 0 <= position < len(self):
            raise IndexError(f"store {self.path} has {len(self)} scenarios; no position {position}")
        index = int(np.searchsorted(self._starts, position, side="right") - 1)
        group = self._group(index)
        row = position - int(self._starts[index])
        try:
            return _decode(group, row, str(self.path))
        except ScenarioError:
            raise
        except (ValueError, IndexError, TypeError) as err:
            raise ScenarioError(f"corrupt row: {err}", path=str(self.path), scenario_id=position) from None

    def bucket_keys(self):
        """Every row's bucket as int32 columns (drivesim.scenarios.store_columns.BucketColumns)."""
        from drivesim.scenarios.store_columns import bucket_columns

        return bucket_columns(self)

    def read_batch(self, positions, padded_batch: int | None = None):
        """Rows ``positions`` (one bucket) as a stacked Scenario and their descriptive
        columns (drivesim.scenarios.store_columns.read_batch)."""
        from drivesim.scenarios.store_columns import read_batch

        return read_batch(self, positions, padded_batch)


class _RowGroup:
    """One decoded row group: meta values, stored dims per row, per column flat values and
    list offsets."""

    def __init__(self, table: pa.Table, version: int):
        self.meta = {n: table.column(n).to_pylist() for n, _ in META_COLUMNS}
        own = [
            self.meta["num_agents"],
            self.meta["num_lanes"],
            self.meta["num_points"],
            self.meta["log_steps"],
        ]
        stored = own if version == 1 else [table.column(n).to_pylist() for n in CLASS_COLUMNS]
        self.dims = [dict(zip(DIMS, values, strict=True)) for values in zip(*own, strict=True)]
        self.stored = [dict(zip(DIMS, values, strict=True)) for values in zip(*stored, strict=True)]
        self.columns: dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray | None]] = {}
        for path, dtype, shape in FIELDS:
            col = stored_column(table, column_name(path))
            if col is None:
                continue
            if shape == ():
                self.columns[path] = (col.to_numpy(zero_copy_only=False).astype(dtype), None, None)
            else:
                self.columns[path] = array_column(col, dtype)


def _decode(group: _RowGroup, row: int, where: str) -> ScenarioRecord:
    """Row ``row`` of a decoded row group as an unpadded record (its own dims)."""
    meta = {k: v[row] for k, v in group.meta.items()}
    dims, stored = group.dims[row], group.stored[row]
    has_log = dims["T"] is not None
    for dim, column, least in (("N", "num_agents", 1), ("L", "num_lanes", 1), ("P", "num_points", 2)):
        if not least <= dims[dim] <= stored[dim]:
            raise ScenarioError(
                f"{dims[dim]} outside {least}..{stored[dim]} (the row's stored size)",
                path=where,
                field=column,
            )
    out: dict[str, np.ndarray] = {}
    for path, dtype, shape in FIELDS:
        if path not in group.columns:  # signal columns of a version-2 store
            continue
        values, offsets, null = group.columns[path]
        if shape == ():
            out[path] = np.asarray(values[row], dtype)
            continue
        if path.startswith("log.") and not has_log:
            continue
        assert offsets is not None and null is not None  # list columns keep both
        flat = values[offsets[row] : offsets[row + 1]]
        full = field_shape(shape, stored)
        own = field_shape(shape, dims)
        if null[row] or flat.size != int(np.prod(full)) or any(o > f for o, f in zip(own, full, strict=True)):
            raise ScenarioError(
                f"{flat.size} values do not fill shape {full}",
                path=where,
                scenario_id=int(out.get("scenario_id", row)),
                field=column_name(path),
            )
        out[path] = flat.reshape(full)[tuple(slice(0, n) for n in own)].copy()
    pick = lambda prefix: {p.split(".", 1)[1]: v for p, v in out.items() if p.startswith(prefix)}  # noqa: E731
    log = LogTrajectory(**pick("log.")) if has_log else None
    scenario = Scenario(
        agents=AgentState(**pick("agents.")),
        idm=IDMParams(**pick("idm.")),
        stop_s=out["stop_s"],
        road=RoadMap(**pick("road.")),
        ego_index=out["ego_index"],
        episode_length=out["episode_length"],
        scenario_id=out["scenario_id"],
        valid=out["valid"],
        log=log,
        signal=signal_of(pick("signal.")),
    )
    return ScenarioRecord(scenario=scenario, family=meta["family"], source=meta["source"], name=meta["name"])


def signal_of(columns: dict) -> SignalPlan | None:
    """The SignalPlan of decoded ``signal.*`` columns (name -> array), None when there are
    none or no stop line is finite."""
    if not columns or not np.isfinite(columns["line_s"]).any():
        return None
    return SignalPlan(**columns)


def convert_store(old: str | Path, new: str | Path, row_group_size: int = 512) -> int:
    """Rewrite a version-1 (or current) store as a current one; returns the rows written."""
    store = ScenarioStore(old, allow_version_1=True)
    return write_store(new, iter(store), row_group_size)
