"""The Parquet scenario store: exact round trips, lazy row groups, schema checks."""

from __future__ import annotations

import jax
import numpy as np
import pyarrow.parquet as pq
import pytest

from drivesim.scenarios.commonroad import ImportConfig, load_commonroad
from drivesim.scenarios.sources import ScenarioError, StoreSource
from drivesim.scenarios.store import SCHEMA_VERSION, ScenarioStore, write_store
from drivesim.scenarios.synthetic import generate


def assert_same(a, b):
    assert (a.family, a.source, a.name) == (b.family, b.source, b.name)
    leaves_a, tree_a = jax.tree_util.tree_flatten(a.scenario)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b.scenario)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_synthetic_round_trip(tmp_path):
    records = [generate(f, i) for f in ("highway", "merge", "intersection") for i in range(7)]
    path = tmp_path / "s.parquet"
    assert write_store(path, records, row_group_size=5) == len(records)
    store = ScenarioStore(path)
    assert len(store) == len(records)
    assert pq.ParquetFile(path).metadata.num_row_groups == 5
    for i in (20, 0, 13, 4, 5):  # out of order: row groups decoded on demand
        assert_same(records[i], store.load(i))
    assert [r.name for r in store] == [r.name for r in records]


def test_commonroad_round_trip(tmp_path, commonroad_dir):
    records = [
        load_commonroad(p, ImportConfig(replay=k % 2 == 0))
        for k, p in enumerate(sorted(commonroad_dir.glob("*.xml")))
    ]
    path = tmp_path / "cr.parquet"
    write_store(path, records)
    for i, record in enumerate(records):
        assert_same(record, ScenarioStore(path).load(i))


def test_lazy_reading_keeps_one_row_group(tmp_path):
    path = tmp_path / "lazy.parquet"
    write_store(path, (generate("merge", i) for i in range(12)), row_group_size=4)
    store = ScenarioStore(path)
    store.load(9)
    assert store._local.cached[0] == 2  # only the third row group was decoded
    assert len(store._local.cached[1].meta["name"]) == 4


def test_not_a_store_and_wrong_version(tmp_path):
    import pyarrow as pa

    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1]}), plain)
    with pytest.raises(ScenarioError, match="not a drivesim scenario store"):
        ScenarioStore(plain)
    path = tmp_path / "v.parquet"
    write_store(path, [generate("highway", 0)])
    table = pq.read_table(path)
    future = table.replace_schema_metadata({b"drivesim.schema_version": str(SCHEMA_VERSION + 1).encode()})
    pq.write_table(future, path)
    with pytest.raises(ScenarioError, match="unsupported store schema version"):
        ScenarioStore(path)
    with pytest.raises(ScenarioError, match="cannot open"):
        ScenarioStore(tmp_path / "missing.parquet")


def test_corrupt_row_names_field(tmp_path):
    import pyarrow as pa

    path = tmp_path / "c.parquet"
    write_store(path, [generate("highway", 3)])
    table = pq.read_table(path)
    k = table.schema.get_field_index("num_agents")
    table = table.set_column(k, table.schema.field(k), pa.array([999], pa.int32()))
    pq.write_table(table, path)
    with pytest.raises(ScenarioError) as info:
        StoreSource(path).load(0)
    assert info.value.field == "num_agents" and info.value.path == str(path)


def test_writer_rejects_bad_scenario_and_leaves_no_file(tmp_path):
    from drivesim.core.types import replace

    rec = generate("highway", 1)
    ag = rec.scenario.agents
    bad = replace(rec, scenario=replace(rec.scenario, agents=replace(ag, x=np.full_like(ag.x, np.nan))))
    path = tmp_path / "bad.parquet"
    with pytest.raises(ScenarioError, match="non-finite"):
        write_store(path, [rec, bad])
    assert not path.exists() and not list(tmp_path.iterdir())


def test_road_user_kinds_round_trip_and_version_2_stores_read_as_vehicles(tmp_path):
    """Version 3 stores agents_kind; a version-2 store (no such column) still reads, through
    load and read_batch alike, with every agent a vehicle."""
    from drivesim.scenarios.catalogue import make_record

    records = [make_record("crossing_pedestrian", {}, 20), make_record("cyclist_ahead", {}, 20)]
    path = tmp_path / "vru.parquet"
    write_store(path, records)
    store = ScenarioStore(path)
    assert [store.load(i).scenario.agents.kind.tolist() for i in range(2)] == [[0, 1], [0, 2]]
    batch, _ = store.read_batch([0, 1])
    assert batch.agents.kind[:, :2].tolist() == [[0, 1], [0, 2]]  # padded to the bucket: 0
    table = pq.read_table(path).drop_columns(["agents_kind"])
    old = tmp_path / "v2.parquet"
    pq.write_table(table.replace_schema_metadata({b"drivesim.schema_version": b"2"}), old)
    store = ScenarioStore(old)
    assert store.load(1).scenario.agents.kind.tolist() == [0, 0]
    np.testing.assert_array_equal(store.load(1).scenario.agents.x, records[1].scenario.agents.x)
    batch, _ = store.read_batch([0, 1])
    assert batch.agents.kind.dtype == np.int32 and not batch.agents.kind.any()


def _lit(record):
    """A copy of ``record`` whose even agents meet a signal at s=80 m (90 s cycle)."""
    from drivesim.core.types import SignalPlan, replace
    from drivesim.scenarios.record import ScenarioRecord

    n = record.scenario.num_agents
    full = lambda v: np.full(n, v, np.float32)  # noqa: E731
    line = np.where(np.arange(n) % 2 == 0, 80.0, np.inf).astype(np.float32)
    plan = SignalPlan(line_s=line, cycle=full(90.0), offset=full(5.0), green=full(40.0), amber=full(4.0))
    return ScenarioRecord(
        replace(record.scenario, signal=plan), record.family, record.source, record.name + "-lit"
    )


def test_signal_round_trip_and_version_2_store_reads_without_signals(tmp_path):
    from drivesim.scenarios.batching import bucket_key, stack_bucket

    plain = generate("highway", 1)
    lit = _lit(plain)
    path = tmp_path / "sig.parquet"
    write_store(path, [plain, lit])
    store = ScenarioStore(path)
    assert store.load(0).scenario.signal is None
    assert_same(plain, store.load(0))
    assert_same(lit, store.load(1))
    batch, _infos = store.read_batch([0, 1])
    want = stack_bucket([plain, lit], bucket_key(plain.scenario))
    for got_leaf, want_leaf in zip(
        jax.tree_util.tree_leaves(batch), jax.tree_util.tree_leaves(want), strict=True
    ):
        np.testing.assert_array_equal(got_leaf, want_leaf)
    table = pq.read_table(path)
    old = table.drop([c for c in table.column_names if c.startswith("signal_")])
    v2 = tmp_path / "v2.parquet"
    pq.write_table(old.replace_schema_metadata({b"drivesim.schema_version": b"2"}), v2)
    assert ScenarioStore(v2).load(1).scenario.signal is None
    assert ScenarioStore(v2).read_batch([0, 1])[0].signal is None


def test_store_pages_dictionary_only_for_repeated_strings(tmp_path):
    path = tmp_path / "s.parquet"
    write_store(path, [generate("highway", i) for i in range(6)])
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1  # 4,096 rows per row group by default
    columns = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
        for i in range(meta.num_columns)
    }
    dictionary = {"RLE_DICTIONARY", "PLAIN_DICTIONARY"}
    for name in ("family", "source"):
        assert dictionary & set(columns[name].encodings), name
    for name in ("name", "agents_x", "road_centers"):
        assert not dictionary & set(columns[name].encodings), name
    assert {c.compression for c in columns.values()} == {"LZ4"}
