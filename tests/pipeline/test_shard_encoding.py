"""Result shards: dictionary pages only for the string columns, statistics only for the ids
(drivesim.pipeline.results.WRITE_OPTIONS), and every row read back unchanged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

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
