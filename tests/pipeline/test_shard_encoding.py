"""Result shards: dictionary pages only for the string columns, statistics only for the ids
(drivesim.pipeline.results.WRITE_OPTIONS), and every row read back unchanged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from drivesim.pipeline.results import SCHEMA, write_shard

DICTIONARY = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(1)
    columns = {}
    for f in SCHEMA:
        if pa.types.is_string(f.type):
            columns[f.name] = pa.array(np.where(rng.random(rows) < 0.5, "highway", "merge").tolist())
        elif pa.types.is_boolean(f.type):
            columns[f.name] = pa.array(rng.random(rows) < 0.5)
        elif pa.types.is_floating(f.type):
            columns[f.name] = pa.array(rng.random(rows).astype(np.float32))
        else:
            columns[f.name] = pa.array(rng.integers(0, 99, rows).astype(f.type.to_pandas_dtype()))
    return pa.table(columns, schema=SCHEMA)


def test_shards_use_dictionaries_for_strings_and_statistics_for_ids(tmp_path):
    table = _table(500)
    path = write_shard(table, tmp_path, batch_id=3)
    assert pq.read_table(path).equals(table)
    meta = pq.ParquetFile(path).metadata.row_group(0)
    columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    for name in ("family", "status", "policy"):
        assert DICTIONARY & set(columns[name].encodings), name
    for name in ("progress_m", "min_ttc_s", "max_jerk", "collision_step"):
        assert not DICTIONARY & set(columns[name].encodings), name
        assert not columns[name].is_stats_set, name
    for name in ("scenario_id", "policy_id", "batch_id"):
        assert columns[name].is_stats_set, name
    assert {c.compression for c in columns.values()} == {"LZ4"}


def test_a_campaign_with_older_shards_reads_the_newer_columns_as_null(tmp_path):
    """A campaign begun before schema 4 (no ade_*/fde_*) and finished after it: the view has
    every column of SCHEMA; the older shard's rows hold NULL in the new ones."""
    from drivesim.pipeline.results import SCHEMA_KEY, query

    new = _table(6)
    new_columns = [f"{k}_{h}" for k in ("ade", "fde") for h in ("1s", "3s", "8s")]
    old = new.drop_columns(new_columns).replace_schema_metadata({SCHEMA_KEY: b"3"})
    old = old.set_column(old.schema.get_field_index("batch_id"), "batch_id", pa.array([0] * 6, pa.int64()))
    new = new.set_column(new.schema.get_field_index("batch_id"), "batch_id", pa.array([1] * 6, pa.int64()))
    write_shard(old, tmp_path, batch_id=0)
    write_shard(new, tmp_path, batch_id=1)
    rows = query(tmp_path, "SELECT batch_id, ade_1s, fde_8s FROM results ORDER BY batch_id").to_pylist()
    assert [r["batch_id"] for r in rows] == [0] * 6 + [1] * 6
    assert all(r["ade_1s"] is None and r["fde_8s"] is None for r in rows[:6])
    assert [r["ade_1s"] for r in rows[6:]] == pytest.approx(new.column("ade_1s").to_pylist())
    only_old = tmp_path / "old"
    write_shard(old, only_old, batch_id=0)
    assert query(only_old, "SELECT count(fde_3s) AS n FROM results").to_pylist() == [{"n": 0}]
