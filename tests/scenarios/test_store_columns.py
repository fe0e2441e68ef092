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
    fields = [f for f in st.schema() if not f.name.startswith("class_") and f.name in data]
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
