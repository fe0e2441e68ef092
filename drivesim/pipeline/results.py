"""Result shards (Parquet, written atomically) and DuckDB queries over a campaign.

Each ledger batch writes ``results/part-BBBBBBBB.parquet``: rows go to a temporary name,
are flushed and fsync'ed, then renamed over the final name (and the directory fsync'ed), so
a shard is either complete or absent. ``results_relation(DIR)`` / ``results_table(DIR)``
give the ``results`` view as a DuckDB relation / Arrow table; ``query(DIR, SQL)`` runs SQL
with that view defined.
"""

from __future__ import annotations

import errno
import os
import pathlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from drivesim.pipeline.campaign_key import CAMPAIGN_KEY, campaign_key

RESULTS_DIR = "results"
# 2: min_road_edge_distance_m, collided_with, agents_collided, agents_offroad; offroad from
# the box corners, min_ttc_s against vehicles only, max_jerk from step 1, IDM s* clamped,
# window_overflow = the scenario was recomputed by the exact all-pairs search.
# 3: road-user types (collided_with_kind, pedestrians_collided, cyclists_collided) and
#    red_light_violation (the ego crossed its signal stop line on red).
# 4: ade_1s, ade_3s, ade_8s, fde_1s, fde_3s, fde_8s (displacement against the log; shards of
#    version 3 read them as NULL).
RESULTS_SCHEMA_VERSION = 4
SCHEMA_KEY = b"drivesim.results_schema_version"  # in every shard's footer metadata

SCHEMA = pa.schema(
    [
        ("scenario_id", pa.int64()),
        ("family", pa.string()),
        ("source", pa.string()),
        ("name", pa.string()),
        ("num_agents", pa.int32()),
        ("size_class", pa.int32()),
        ("policy_id", pa.int32()),
        ("policy", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("ego_collided", pa.bool_()),
        ("collision_step", pa.int32()),
        ("collision_pairs", pa.int32()),
        ("offroad", pa.bool_()),
        ("progress_m", pa.float32()),
        ("min_ttc_s", pa.float32()),
        ("max_jerk", pa.float32()),
        ("steps", pa.int32()),
        ("has_nan", pa.bool_()),
        ("log_div_mean", pa.float32()),
        ("log_div_final", pa.float32()),
        ("window_overflow", pa.bool_()),
        ("min_road_edge_distance_m", pa.float32()),
        ("collided_with", pa.int32()),
        ("agents_collided", pa.int32()),
        ("agents_offroad", pa.int32()),
        # road-user types
        ("collided_with_kind", pa.int32()),
        ("pedestrians_collided", pa.int32()),
        ("cyclists_collided", pa.int32()),
        ("red_light_violation", pa.bool_()),
        ("ade_1s", pa.float32()),
        ("ade_3s", pa.float32()),
        ("ade_8s", pa.float32()),
        ("fde_1s", pa.float32()),
        ("fde_3s", pa.float32()),
        ("fde_8s", pa.float32()),
        ("batch_id", pa.int64()),
        ("process_index", pa.int32()),
    ],
    metadata={SCHEMA_KEY: str(RESULTS_SCHEMA_VERSION).encode()},
)

METRIC_COLUMNS = (
    "ego_collided",
    "collision_step",
    "collision_pairs",
    "offroad",
    "progress_m",
    "min_ttc_s",
    "max_jerk",
    "steps",
    "has_nan",
    "log_div_mean",
    "log_div_final",
    "window_overflow",
    "min_road_edge_distance_m",
    "collided_with",
    "agents_collided",
    "agents_offroad",
    "collided_with_kind",
    "pedestrians_collided",
    "cyclists_collided",
    "red_light_violation",
    "ade_1s",
    "ade_3s",
    "ade_8s",
    "fde_1s",
    "fde_3s",
    "fde_8s",
)


@dataclass(frozen=True)
class ScenarioInfo:
    """Descriptive columns of one scenario row (ok or failed)."""

    scenario_id: int
    family: str
    source: str
    name: str | None
    num_agents: int | None
    size_class: int | None


def shard_name(batch_id: int) -> str:
    return f"part-{batch_id:08d}.parquet"


INFO_COLUMNS = ("scenario_id", "family", "source", "name", "num_agents", "size_class")


def batch_table(
    infos,
    metrics: dict | None,
    policies: tuple[str, ...],
    batch_id: int,
    process_index: int = 0,
    failed: list[tuple[ScenarioInfo, str]] | tuple[()] = (),
) -> pa.Table:
    """Arrow table of one batch: rows per (scenario, policy) for ``infos`` (ScenarioInfos, or
    an Arrow table with the INFO_COLUMNS) with ``metrics`` ({name: (P, B) array}), then one
    row per failed scenario (null metrics). Built from whole columns: per policy, the info
    columns repeat and each metric is its (P, B) array flattened."""
    info = info_table(infos)
    p_count, b_count = len(policies), info.num_rows
    n = p_count * b_count
    rep = info.take(pa.array(np.tile(np.arange(b_count), p_count))) if p_count != 1 else info
    policy_ids = np.repeat(np.arange(p_count, dtype=np.int32), b_count)
    cols = {k: rep.column(k).combine_chunks().cast(SCHEMA.field(k).type) for k in INFO_COLUMNS}
    cols["policy_id"] = pa.array(policy_ids)
    cols["policy"] = pa.array(list(policies), pa.string()).take(pa.array(policy_ids))
    cols["status"] = pa.array(["ok"], pa.string()).take(pa.array(np.zeros(n, np.int32)))
    cols["error"] = pa.nulls(n, pa.string())
    if b_count and metrics is None:
        raise ValueError(f"batch_table: batch {batch_id} has {b_count} scenarios but no metrics")
    for key in METRIC_COLUMNS:
        values = np.asarray(metrics[key]).reshape(-1) if b_count and metrics is not None else np.zeros(0)
        cols[key] = pa.array(values).cast(SCHEMA.field(key).type)
    ok = pa.table(cols | _constants(batch_id, process_index, n), schema=SCHEMA)
    if not failed:
        return ok
    return pa.concat_tables([ok, failed_table(failed, batch_id, process_index)])


def info_table(infos) -> pa.Table:
    """The INFO_COLUMNS of ``infos`` (an Arrow table is returned as it is)."""
    if isinstance(infos, pa.Table):
        return infos
    return pa.table({k: _array(k, [getattr(i, k) for i in infos]) for k in INFO_COLUMNS})


def failed_table(failed: list[tuple[ScenarioInfo, str]], batch_id: int, process_index: int = 0) -> pa.Table:
    """One status="failed" row per failed scenario (policy_id 0, null metrics)."""
    n = len(failed)
    cols = {
        "scenario_id": [info.scenario_id for info, _ in failed],
        "family": [info.family for info, _ in failed],
        "source": [info.source for info, _ in failed],
        "name": [info.name for info, _ in failed],
        "num_agents": [info.num_agents for info, _ in failed],
        "size_class": [info.size_class for info, _ in failed],
        "policy_id": [0] * n,
        "policy": [None] * n,
        "status": ["failed"] * n,
        "error": [reason for _, reason in failed],
    }
    arrays = {k: _array(k, v) for k, v in cols.items()}
    for key in METRIC_COLUMNS:
        arrays[key] = pa.nulls(n, SCHEMA.field(key).type)
    return pa.table(arrays | _constants(batch_id, process_index, n), schema=SCHEMA)


def _array(name: str, values) -> pa.Array:
    return pa.array(values, type=SCHEMA.field(name).type, from_pandas=False)


def _constants(batch_id: int, process_index: int, n: int) -> dict:
    return {
        "batch_id": pa.array(np.full(n, batch_id, np.int64)),
        "process_index": pa.array(np.full(n, process_index, np.int32)),
    }


# Parquet encoding of a shard, chosen by measurement (benchmarks/shard_write.py): dictionary
# pages only for the string columns (repeated family, source, policy, status names; the metric
# columns are near-unique floats, where building a dictionary costs most of the write) and
# column statistics only for the ids that queries filter on; LZ4 pages (0.91x snappy's write
# time at 65,536 rows, the same size).
WRITE_OPTIONS = {
    "compression": "lz4",
    "use_dictionary": [f.name for f in SCHEMA if pa.types.is_string(f.type)],
    "write_statistics": ["scenario_id", "policy_id", "batch_id"],
}


def write_shard(table: pa.Table, directory: pathlib.Path, batch_id: int) -> pathlib.Path:
    """Write ``table`` durably and atomically to ``directory/results/part-<batch_id>.parquet``,
    the campaign's key in its footer (drivesim.pipeline.campaign_key)."""
    results = pathlib.Path(directory) / RESULTS_DIR
    results.mkdir(parents=True, exist_ok=True)
    final = results / shard_name(batch_id)
    tmp = results / f".{final.name}.{os.getpid()}.tmp"
    if (key := campaign_key(directory)) is not None:  # which campaign wrote it
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), CAMPAIGN_KEY: key.encode()})
    with open(tmp, "wb") as fh:
        pq.write_table(table, fh, **WRITE_OPTIONS)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    _fsync_dir(results)
    return final


def write_failure(directory, error: BaseException, stage: str = "result writer") -> str:
    """One line for a campaign whose write failed at ``stage``: the directory, the reason, and,
    for a full or read-only file system, how to go on (the batches written before are durable;
    a rerun resumes after them)."""
    text = str(error)
    full = getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "disk is full" in text
    # SQLite names a write that found no room "disk I/O error" when the room ran out in its
    # journal or shared-memory file; the file system's own free space tells which it was
    full = full or ("disk I/O error" in text and _nearly_full(directory))
    read_only = getattr(error, "errno", None) == errno.EROFS or "readonly database" in text
    if not (full or read_only):
        return f"{stage} failed in {directory}: {text}"
    what = "no space left on the device" if full else "the file system is read-only"
    return (
        f"{stage} failed in {directory}: {what} ({text}); every batch written before is kept: "
        "free space (or make it writable) and rerun the same command to resume"
    )


def _nearly_full(directory, room: int = 64 * 1024) -> bool:
    """Whether the file system holding ``directory`` (or its nearest existing parent) has
    less than ``room`` bytes left for this user."""
    path = pathlib.Path(directory).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        stats = os.statvfs(path)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < room


def _fsync_dir(path: pathlib.Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_partial(directory) -> int:
    """Delete leftover temporary shards of a killed run; returns how many."""
    results = pathlib.Path(directory) / RESULTS_DIR
    stale = list(results.glob(".part-*.tmp")) if results.is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


# -- DuckDB ------------------------------------------------------------------------------
def connect(directory, connection=None):
    """A DuckDB connection with the view ``results`` over the shards the campaign's ledger
    names (stray files in ``results/`` are never read; see drivesim.pipeline.verify)."""
    import duckdb

    from drivesim.pipeline.verify import named_shards

    con = connection or duckdb.connect()
    shards = named_shards(directory)
    if shards:
        files = ", ".join("'" + str(p).replace("'", "''") + "'" for p in shards)
        rows = f"read_parquet([{files}], union_by_name = true)"
    else:
        con.register("_empty_results", SCHEMA.empty_table())
        rows = "_empty_results"
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {rows}").fetchall()}
    missing = "".join(  # columns newer than the campaign's first shards: NULL in every row
        f", NULL::{_SQL_TYPES[str(f.type)]} AS {f.name}" for f in SCHEMA if f.name not in present
    )
    con.execute(f"CREATE OR REPLACE VIEW results AS SELECT *{missing}, {PARAMS_SQL} AS params FROM {rows}")
    return con


_SQL_TYPES = {"int32": "INTEGER", "int64": "BIGINT", "float": "FLOAT", "bool": "BOOLEAN", "string": "VARCHAR"}


# The view's ``params``: a scenario's named parameters as MAP(VARCHAR, DOUBLE), read from a
# catalogue point's name ``FAMILY?NAME=VALUE,...`` (NULL for other scenarios), so
# ``params['gap']`` is a DOUBLE to group by; computed only where a query reads it.
PARAMS_SQL = (
    "CASE WHEN contains(name, '?') THEN map_from_entries(list_transform("
    "string_split(split_part(name, '?', 2), ','), lambda kv: struct_pack(k := split_part(kv, '=', 1), "
    "v := TRY_CAST(split_part(kv, '=', 2) AS DOUBLE)))) END"
)


def plain_rows(table: pa.Table) -> list[dict]:
    """Rows of ``table`` as dicts, a MAP column's value as a dict (``params``: {name: value})."""
    rows = table.to_pylist()
    maps = [f.name for f in table.schema if pa.types.is_map(f.type)]
    for row in rows:
        for name in maps:
            if row[name] is not None:
                row[name] = dict(row[name])
    return rows


def without_maps(table: pa.Table) -> pa.Table:
    """``table`` without its MAP columns (CSV cannot hold them; ``name`` holds ``params``)."""
    keep = [f.name for f in table.schema if not pa.types.is_map(f.type)]
    return table.select(keep)


def results_relation(directory, connection=None):
    """The ``results`` view as a DuckDB relation (keep the connection alive while using it)."""
    return connect(directory, connection).sql("SELECT * FROM results")


def results_table(directory) -> pa.Table:
    """The ``results`` view as an Arrow table, ordered by (scenario_id, policy_id)."""
    return query(directory, "SELECT * FROM results ORDER BY scenario_id, policy_id")


def query(directory, sql: str, unsafe: bool = False) -> pa.Table:
    """Run ``sql`` with the ``results`` view defined; returns an Arrow table. Unless
    ``unsafe``, the SQL cannot touch files beyond the view's shards (no COPY TO, no reads
    elsewhere, no ATTACH, no INSTALL/LOAD; see drivesim.pipeline.sandbox)."""
    from drivesim.pipeline.sandbox import lock_down, require_campaign
    from drivesim.pipeline.validation import ConfigError

    if not sql.strip():
        raise ConfigError('SQL: empty statement; e.g. "SELECT count(*) FROM results"')
    require_campaign(directory)
    con = connect(directory)
    if not unsafe:
        lock_down(con, directory)
    try:
        relation = con.sql(sql)
        if relation is None:  # only comments, or a statement that returns no rows
            raise ConfigError('SQL: no query that returns rows; e.g. "SELECT count(*) FROM results"')
        return _arrow(relation)
    finally:
        con.close()


def _arrow(relation) -> pa.Table:
    """A relation's rows as an Arrow table (duckdb 1.x: ``arrow()``, 2.x: ``to_arrow_table()``)."""
    if hasattr(relation, "to_arrow_table"):
        return relation.to_arrow_table()
    return relation.arrow()
