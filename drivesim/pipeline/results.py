"""Result shards (Parquet, written atomically) and DuckDB queries over a campaign.

Each ledger batch writes ``results/part-BBBBBBBB.parquet``: rows go to a temporary name,
are flushed and fsync'ed, then renamed over the final name (and the directory fsync'ed), so
a shard is either complete or absent. ``results_relation(DIR)`` / ``results_table(DIR)``
give the ``results`` view as a DuckDB relation / Arrow table; ``query(DIR, SQL)`` runs SQL
with that view defined.
"""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

RESULTS_DIR = "results"
# 2: min_road_edge_distance_m, collided_with, agents_collided, agents_offroad; offroad from
# the box corners, min_ttc_s against vehicles only, max_jerk from step 1, IDM s* clamped,
# window_overflow = the scenario was recomputed by the exact all-pairs search.
RESULTS_SCHEMA_VERSION = 2

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
        ("batch_id", pa.int64()),
        ("process_index", pa.int32()),
    ],
    metadata={b"drivesim.results_schema_version": str(RESULTS_SCHEMA_VERSION).encode()},
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
)


@dataclass(frozen=True)
class ScenarioInfo:
    """Descriptive columns of one scenario row (ok or failed)."""

    scenario_id: int
    family: str
    source: str
    name: str
    num_agents: int | None
    size_class: int | None


def shard_name(batch_id: int) -> str:
    return f"part-{batch_id:08d}.parquet"


def batch_table(
    infos: list[ScenarioInfo],
    metrics: dict | None,
    policies: tuple[str, ...],
    batch_id: int,
    process_index: int = 0,
    failed: list[tuple[ScenarioInfo, str]] = (),
) -> pa.Table:
    """Arrow table of one batch: rows per (scenario, policy) for ``infos`` with ``metrics``
    ({name: (P, B) array}), then one row per failed scenario (null metrics)."""
    p_count, b_count = len(policies), len(infos)
    cols: dict[str, list | np.ndarray] = {}
    rep = lambda values: np.tile(np.asarray(values), p_count) if b_count else np.asarray(values)  # noqa: E731
    cols["scenario_id"] = rep([i.scenario_id for i in infos])
    for key in ("family", "source", "name", "num_agents", "size_class"):
        cols[key] = list(rep(np.array([getattr(i, key) for i in infos], dtype=object)))
    cols["policy_id"] = np.repeat(np.arange(p_count), b_count)
    cols["policy"] = list(np.repeat(np.array(policies, dtype=object), b_count))
    cols["status"] = ["ok"] * (p_count * b_count)
    cols["error"] = [None] * (p_count * b_count)
    for key in METRIC_COLUMNS:
        cols[key] = np.asarray(metrics[key]).reshape(-1) if b_count else []
    ok = pa.table(
        {k: _array(k, v) for k, v in cols.items()} | _constants(batch_id, process_index, p_count * b_count),
        schema=SCHEMA,
    )
    if not failed:
        return ok
    return pa.concat_tables([ok, failed_table(failed, batch_id, process_index)])


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


def write_shard(table: pa.Table, directory: pathlib.Path, batch_id: int) -> pathlib.Path:
    """Write ``table`` durably and atomically to ``directory/results/part-<batch_id>.parquet``."""
    results = pathlib.Path(directory) / RESULTS_DIR
    results.mkdir(parents=True, exist_ok=True)
    final = results / shard_name(batch_id)
    tmp = results / f".{final.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        pq.write_table(table, fh, compression="snappy")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    _fsync_dir(results)
    return final


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
    """A DuckDB connection with the view ``results`` over the campaign's shards."""
    import duckdb

    con = connection or duckdb.connect()
    results = pathlib.Path(directory) / RESULTS_DIR
    shards = sorted(results.glob("part-*.parquet")) if results.is_dir() else []
    if shards:
        glob = str(results / "part-*.parquet").replace("'", "''")
        con.execute(f"CREATE OR REPLACE VIEW results AS SELECT * FROM read_parquet('{glob}')")
    else:
        con.register("_empty_results", SCHEMA.empty_table())
        con.execute("CREATE OR REPLACE VIEW results AS SELECT * FROM _empty_results")
    return con


def results_relation(directory, connection=None):
    """The ``results`` view as a DuckDB relation (keep the connection alive while using it)."""
    return connect(directory, connection).sql("SELECT * FROM results")


def results_table(directory) -> pa.Table:
    """The ``results`` view as an Arrow table, ordered by (scenario_id, policy_id)."""
    return query(directory, "SELECT * FROM results ORDER BY scenario_id, policy_id")


def query(directory, sql: str) -> pa.Table:
    """Run ``sql`` with the ``results`` view defined; returns an Arrow table."""
    con = connect(directory)
    try:
        return _arrow(con.sql(sql))
    finally:
        con.close()


def _arrow(relation) -> pa.Table:
    """A relation's rows as an Arrow table (duckdb 1.x: ``arrow()``, 2.x: ``to_arrow_table()``)."""
    if hasattr(relation, "to_arrow_table"):
        return relation.to_arrow_table()
    return relation.arrow()
