"""Columnar store reads: a batch of one bucket equals padding and stacking its records, many
threads read one store at once, and old (version 1) stores are refused or converted."""

from __future__ import annotations

import random
import threading

import jax
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from drivesim.scenarios import store as st
from drivesim.scenarios.batching import bucket_key, stack_bucket
from drivesim.scenarios.sources import ScenarioError
from drivesim.scenarios.store import ScenarioStore, convert_store, write_store
from drivesim.scenarios.synthetic import generate


def _records(count: int):
    return [generate(("highway", "merge", "intersection")[i % 3], i) for i in range(count)]


def assert_tree_equal(a, b):
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_batch_of_a_bucket_equals_stacked_records(tmp_path):
    records = _records(60)
    path = tmp_path / "s.parquet"
    write_store(path, records, row_group_size=7)
    store = ScenarioStore(path)
    keys = store.bucket_keys().stacked()
    assert keys.shape == (60, 4)
    buckets = np.unique(keys, axis=0)
    assert len(buckets) >= 3
    for key in buckets:
        positions = np.flatnonzero((keys == key).all(axis=1))
        scenario, infos = store.read_batch(positions, padded_batch=len(positions) + 3)
        want = stack_bucket(
            [records[p] for p in positions], bucket_key(records[positions[0]].scenario), len(positions) + 3
        )
        assert_tree_equal(scenario, want)
        assert infos.column("scenario_id").to_pylist() == positions.tolist()
        assert infos.column("name").to_pylist() == [records[p].name for p in positions]
        assert infos.column("num_agents").to_pylist() == [records[p].num_agents for p in positions]


def test_rows_of_different_buckets_are_refused(tmp_path):
    records = _records(12)
    path = tmp_path / "s.parquet"
    write_store(path, records)
    store = ScenarioStore(path)
    keys = store.bucket_keys().stacked()
    a = int(np.flatnonzero((keys != keys[0]).any(axis=1))[0])
    with pytest.raises(ScenarioError, match="different buckets"):
        store.read_batch([0, a])


def test_many_threads_read_one_store(tmp_path):
    """Loader threads share one ScenarioStore: every read returns its own row (a shared
    Parquet reader crashed, hung or returned another row group's rows here)."""
    records = _records(96)
    path = tmp_path / "s.parquet"
    write_store(path, records, row_group_size=8)
    store = ScenarioStore(path)
    keys = store.bucket_keys().stacked()
    errors: list[str] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(150):
                p = rng.randrange(len(store))
                if store.load(p).name != records[p].name:
                    errors.append(f"position {p}: wrong row")
                same = np.flatnonzero((keys == keys[p]).all(axis=1))
                _, infos = store.read_batch(same[:5])
                if infos.column("name").to_pylist() != [records[q].name for q in same[:5]]:
                    errors.append(f"batch at {p}: wrong rows")
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a reader thread hung"
    assert not errors, errors[:5]


def _write_version_1(path, records):
    """A store in the version-1 layout: unpadded rows, no class columns, none of the columns
    added in version 3 (road-user types, signals)."""
    v1 = [(p, d, s) for p, d, s in st.FIELDS if p != "agents.kind" and not p.startswith("signal.")]
    data = {n: [] for n, _ in st.META_COLUMNS} | {st.column_name(p): [] for p, _, _ in v1}
    for r in records:
        sc = r.scenario
        data["family"].append(r.family), data["source"].append(r.source), data["name"].append(r.name)
        data["num_agents"].append(sc.num_agents)
        data["num_lanes"].append(sc.road.widths.shape[0])
        data["num_points"].append(sc.road.centers.shape[1])
        data["log_steps"].append(None if sc.log is None else sc.log.valid.shape[0])
        for p, dtype, shape in v1:
            v = st.leaf(sc, p)
            value = None if v is None else np.asarray(v, dtype).reshape(-1).tolist()
            data[st.column_name(p)].append(np.asarray(v, dtype).item() if shape == () else value)
    fields = [f for f in st.schema(version=1) if not f.name.startswith("class_") and f.name in data]
    schema = pa.schema(fields, metadata={st.VERSION_KEY: b"1"})
    pq.write_table(pa.table(data, schema=schema), path)


def test_version_1_store_refused_in_one_line_and_converted(tmp_path):
    records = _records(9)
    old, new = tmp_path / "old.parquet", tmp_path / "new.parquet"
    _write_version_1(old, records)
    with pytest.raises(ScenarioError, match="drivesim scenarios convert") as info:
        ScenarioStore(old)
    assert "\n" not in str(info.value) and str(old) in str(info.value)
    assert convert_store(old, new) == 9
    store = ScenarioStore(new)
    for i, record in enumerate(records):
        got = store.load(i)
        assert got.name == record.name
        assert_tree_equal(got.scenario, record.scenario)


def test_write_batch_rows_round_trip(tmp_path):
    records = [generate("highway", i) for i in range(4)]
    key = bucket_key(records[0].scenario)
    same = [r for r in records if bucket_key(r.scenario) == key] or records[:1]
    stacked = stack_bucket(same, key)
    path = tmp_path / "b.parquet"
    with st.StoreWriter(path) as writer:
        writer.write_batch(stacked, "highway", "synthetic")
    store = ScenarioStore(path)
    assert len(store) == len(same)
    scenario, _ = store.read_batch(np.arange(len(same)))
    assert_tree_equal(scenario, stacked)


def test_convert_command(tmp_path):
    from typer.testing import CliRunner

    from drivesim.cli import app

    old, new = tmp_path / "old.parquet", tmp_path / "new.parquet"
    _write_version_1(old, _records(3))
    res = CliRunner().invoke(app, ["scenarios", "convert", str(old), "--out", str(new)])
    assert res.exit_code == 0, res.output
    assert len(ScenarioStore(new)) == 3
    res = CliRunner().invoke(app, ["run", "--source", f"store:{old}", "--out", str(tmp_path / "r")])
    assert res.exit_code != 0


def _as_version_3(new, old):
    """Rewrite a current store ``new`` in the version-3 layout (array columns as lists)."""
    table = pq.read_table(new)
    columns = {}
    for field in st.schema(version=3):
        col = table.column(field.name).combine_chunks()
        if pa.types.is_list(field.type):
            dtype = next(d for p, d, _ in st.FIELDS if st.column_name(p) == field.name)
            values, offsets, null = st.array_column(col, dtype)
            col = pa.ListArray.from_arrays(
                pa.array(offsets.astype(np.int32)), pa.array(values), mask=pa.array(null)
            )
        columns[field.name] = col
    pq.write_table(pa.table(columns, schema=st.schema(version=3)), old, row_group_size=7)


def test_version_3_list_store_reads_as_the_binary_one(tmp_path):
    """A version-3 store (list columns) reads, record by record and batch by batch, exactly as
    the version-4 store (binary columns) of the same records."""
    records = _records(24)
    new, old = tmp_path / "v4.parquet", tmp_path / "v3.parquet"
    write_store(new, records, row_group_size=5)
    _as_version_3(new, old)
    v3, v4 = ScenarioStore(old), ScenarioStore(new)
    assert (v3.version, v4.version) == (3, 4)
    assert pa.types.is_list(pq.read_schema(old).field("agents_x").type)
    assert pq.read_schema(new).field("agents_x").type == pa.large_binary()
    for i in range(len(records)):
        assert_tree_equal(v3.load(i).scenario, v4.load(i).scenario)
        assert_tree_equal(v4.load(i).scenario, records[i].scenario)
    keys = v4.bucket_keys().stacked()
    for key in np.unique(keys, axis=0):
        positions = np.flatnonzero((keys == key).all(axis=1))
        (a, ia), (b, ib) = (
            v3.read_batch(positions, len(positions) + 2),
            v4.read_batch(positions, len(positions) + 2),
        )
        assert_tree_equal(a, b)
        assert ia.equals(ib)


def _one_bucket(store) -> np.ndarray:
    keys = store.bucket_keys().stacked()
    return np.flatnonzero((keys == keys[0]).all(axis=1))


def test_batch_arrays_start_on_64_bytes(tmp_path):
    """Every decoded leaf starts on a 64-byte boundary (a CPU device_put shares it)."""
    path = tmp_path / "s.parquet"
    write_store(path, [generate("highway", i) for i in range(12)])
    positions = _one_bucket(ScenarioStore(path))
    scenario, _ = ScenarioStore(path).read_batch(positions, padded_batch=len(positions) + 3)
    for leaf in jax.tree_util.tree_leaves(scenario):
        assert leaf.ctypes.data % 64 == 0 and leaf.flags.c_contiguous and leaf.shape[0] == len(positions) + 3


def test_binary_row_of_the_wrong_length_is_an_error_naming_the_column(tmp_path):
    path = tmp_path / "s.parquet"
    write_store(path, [generate("highway", i) for i in range(12)])
    positions = _one_bucket(ScenarioStore(path))
    table = pq.read_table(path)
    k = table.schema.get_field_index("agents_speed")
    rows = [v.as_py() for v in table.column(k).combine_chunks()]
    rows[positions[-1]] = rows[positions[-1]][:-2]  # half a float32 short
    table = table.set_column(k, table.schema.field(k), pa.array(rows, pa.large_binary()))
    pq.write_table(table, path)
    store = ScenarioStore(path)
    with pytest.raises(ScenarioError) as info:
        store.read_batch(positions)
    assert info.value.field == "agents_speed"
    with pytest.raises(ScenarioError, match="do not fill") as info:
        store.load(int(positions[-1]))
    assert info.value.field == "agents_speed"
    store.load(int(positions[0]))  # the other rows of its row group still read


def test_logs_round_trip_in_binary_columns(tmp_path):
    """Rows with a log and rows without (null binary values) in one row group read back exactly,
    record by record and batch by batch."""
    from drivesim.core.types import LogTrajectory, replace
    from drivesim.scenarios.record import ScenarioRecord

    records = []
    for i in range(6):
        r, rng, t = generate("highway", i), np.random.default_rng(i), 30
        n = r.scenario.num_agents
        log = LogTrajectory(
            xy=rng.normal(size=(t, n, 2)).astype(np.float32),
            heading=rng.normal(size=(t, n)).astype(np.float32),
            speed=np.abs(rng.normal(size=(t, n))).astype(np.float32),
            valid=rng.random((t, n)) > 0.3,
            replay=rng.random(n) > 0.5,
        )
        sc = replace(r.scenario, log=log) if i % 2 else r.scenario
        records.append(ScenarioRecord(sc, r.family, r.source, r.name))
    path = tmp_path / "logs.parquet"
    write_store(path, records, row_group_size=4)
    store = ScenarioStore(path)
    for i, record in enumerate(records):
        assert_tree_equal(store.load(i).scenario, record.scenario)
    keys = store.bucket_keys().stacked()
    assert (keys[:, 3] >= 0).any() and (keys[:, 3] < 0).any()
    for key in np.unique(keys, axis=0):
        positions = np.flatnonzero((keys == key).all(axis=1))
        scenario, _ = store.read_batch(positions, len(positions) + 1)
        want = stack_bucket(
            [records[p] for p in positions], bucket_key(records[positions[0]].scenario), len(positions) + 1
        )
        assert_tree_equal(scenario, want)
