"""drivesim's own scenario store: one Parquet file, one row per scenario, columnar.

Every Scenario field is a column (``agents_x``, ``road_centers``, ``log_xy``, ...): arrays are
flattened into list columns with the dims (num_agents N, num_lanes L, num_points P,
log_steps T) in their own columns, so a row decodes back to exactly the same NumPy arrays
(dtype and shape). The file's schema metadata carries ``drivesim.schema_version``.
Writing is streamed in row groups and atomic (temporary file, then rename); reading
decodes one row group at a time, so a store of a million scenarios never has to fit in
memory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivesim.core.types import AgentState, IDMParams, LogTrajectory, RoadMap, Scenario
from drivesim.core.validate import ScenarioError, validate_scenario
from drivesim.scenarios.record import ScenarioRecord

SCHEMA_VERSION = 1
VERSION_KEY = b"drivesim.schema_version"

F32, I32, BOOL = np.float32, np.int32, np.bool_
# (field path, dtype, shape in dims N, L, P, T); () = scalar.
FIELDS: tuple[tuple[str, type, tuple], ...] = (
    *((f"agents.{k}", F32, ("N",)) for k in ("x", "y", "heading", "speed", "accel", "length", "width")),
    ("agents.valid", BOOL, ("N",)),
    ("agents.route", I32, ("N",)),
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


def column_name(path: str) -> str:
    return path.replace(".", "_")


def schema() -> pa.Schema:
    """The Arrow schema of a store (list columns for arrays, nullable log columns)."""
    cols = [pa.field(n, t, nullable=(n == "log_steps")) for n, t in META_COLUMNS]
    for path, dtype, shape in FIELDS:
        t = ARROW[dtype] if shape == () else pa.list_(ARROW[dtype])
        cols.append(pa.field(column_name(path), t, nullable=path.startswith("log.")))
    return pa.schema(cols, metadata={VERSION_KEY: str(SCHEMA_VERSION).encode()})


def _get(sc: Scenario, path: str):
    obj = sc
    for part in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, part)
    return obj


class StoreWriter:
    """Streams ScenarioRecords into a store file, ``row_group_size`` rows per row group.

    Use as a context manager; the file appears (atomically) on a clean exit only.
    """

    def __init__(self, path: str | Path, row_group_size: int = 512):
        self.path = Path(path)
        self.row_group_size = row_group_size
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self._writer: Any = None
        self._rows: list[ScenarioRecord] = []
        self.count = 0

    def __enter__(self) -> StoreWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(self._tmp, schema(), compression="zstd")
        return self

    def write(self, record: ScenarioRecord) -> None:
        """Append one record (validated first; ScenarioError if it is unusable)."""
        validate_scenario(record.scenario, where=f"{record.source}#{record.name}")
        self._rows.append(record)
        self.count += 1
        if len(self._rows) >= self.row_group_size:
            self._flush()

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


def write_store(path: str | Path, records, row_group_size: int = 512) -> int:
    """Write an iterable of ScenarioRecords to a store; returns the number written."""
    with StoreWriter(path, row_group_size) as writer:
        for record in records:
            writer.write(record)
    return writer.count


def _to_table(records: list[ScenarioRecord]) -> pa.Table:
    scs = [r.scenario for r in records]
    logs = [s.log is not None for s in scs]
    data = {
        "family": pa.array([r.family for r in records], pa.string()),
        "source": pa.array([r.source for r in records], pa.string()),
        "name": pa.array([r.name for r in records], pa.string()),
        "num_agents": pa.array([s.num_agents for s in scs], pa.int32()),
        "num_lanes": pa.array([np.asarray(s.road.widths).shape[0] for s in scs], pa.int32()),
        "num_points": pa.array([np.asarray(s.road.centers).shape[1] for s in scs], pa.int32()),
        "log_steps": pa.array(
            [np.asarray(s.log.valid).shape[0] if s.log is not None else None for s in scs], pa.int32()
        ),
    }
    for path, dtype, shape in FIELDS:
        values = [_get(s, path) for s in scs]
        if shape == ():
            data[column_name(path)] = pa.array([np.asarray(v, dtype).item() for v in values], ARROW[dtype])
            continue
        flat: list[np.ndarray] = [
            np.asarray(v, dtype).ravel() if v is not None else np.zeros(0, dtype) for v in values
        ]
        offsets = np.concatenate([[0], np.cumsum([len(f) for f in flat])]).astype(np.int32)
        mask = None if all(logs) or not path.startswith("log.") else pa.array([not h for h in logs])
        data[column_name(path)] = pa.ListArray.from_arrays(
            pa.array(offsets), pa.array(np.concatenate(flat), ARROW[dtype]), mask=mask
        )
    return pa.table(data, schema=schema())


class _RowGroup:
    """One decoded row group: per column, flat NumPy values and list offsets."""

    def __init__(self, table: pa.Table):
        self.meta = {n: table.column(n).to_pylist() for n, _ in META_COLUMNS}
        self.columns: dict[str, tuple] = {}
        for path, dtype, shape in FIELDS:
            col = table.column(column_name(path)).combine_chunks()
            if shape == ():
                self.columns[path] = (col.to_numpy(zero_copy_only=False).astype(dtype), None, None)
            else:
                values = col.values.to_numpy(zero_copy_only=False).astype(dtype)
                null = col.is_null().to_numpy(zero_copy_only=False)
                self.columns[path] = (values, col.offsets.to_numpy(), null)


class ScenarioStore:
    """Lazy reader of a store: ``len(store)``, ``store.load(position)``, ``iter(store)``.

    Keeps one decoded row group in memory. Errors (missing file, not a store, wrong
    schema version, a corrupt row) are ScenarioErrors naming the file and the row.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self._file = pq.ParquetFile(self.path)
        except (OSError, pa.ArrowException) as err:
            raise ScenarioError(f"cannot open the scenario store: {err}", path=str(self.path)) from None
        meta = self._file.schema_arrow.metadata or {}
        version = meta.get(VERSION_KEY)
        if version is None:
            raise ScenarioError(
                "not a drivesim scenario store (no schema version)",
                path=str(self.path),
                field="schema metadata",
            )
        if int(version) != SCHEMA_VERSION:
            raise ScenarioError(
                f"unsupported store schema version {int(version)} (this drivesim reads {SCHEMA_VERSION})",
                path=str(self.path),
                field="schema metadata",
            )
        md = self._file.metadata
        self._starts = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])
        self._cached: tuple[int, _RowGroup] | None = None

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __iter__(self) -> Iterator[ScenarioRecord]:
        for position in range(len(self)):
            yield self.load(position)

    def _group(self, index: int) -> _RowGroup:
        if self._cached is None or self._cached[0] != index:
            self._cached = (index, _RowGroup(self._file.read_row_group(index)))
        return self._cached[1]

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


def _decode(group: _RowGroup, row: int, where: str) -> ScenarioRecord:
    meta = {k: v[row] for k, v in group.meta.items()}
    dims = {"N": meta["num_agents"], "L": meta["num_lanes"], "P": meta["num_points"], "T": meta["log_steps"]}
    has_log = dims["T"] is not None
    out: dict[str, np.ndarray] = {}
    for path, dtype, shape in FIELDS:
        values, offsets, null = group.columns[path]
        if shape == ():
            out[path] = np.asarray(values[row], dtype)
            continue
        if path.startswith("log.") and not has_log:
            continue
        flat = values[offsets[row] : offsets[row + 1]]
        full = tuple(dims[d] if isinstance(d, str) else d for d in shape)
        if null[row] or flat.size != int(np.prod(full)):
            raise ScenarioError(
                f"{flat.size} values do not fill shape {full}",
                path=where,
                scenario_id=int(out.get("scenario_id", row)),
                field=column_name(path),
            )
        out[path] = flat.reshape(full).copy()
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
    )
    return ScenarioRecord(scenario=scenario, family=meta["family"], source=meta["source"], name=meta["name"])
