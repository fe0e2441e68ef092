"""Campaigns over a scenario store: the columnar loader gives the record loader's results
bit for bit, and a corrupt row becomes a failed row with its reason."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pipeline_helpers import small_config

from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.columnar import ColumnarPlanner, planner_for
from drivesim.pipeline.plan import Planner, PlanSettings
from drivesim.scenarios.sources import MixedSource, StoreSource
from drivesim.scenarios.store import write_store
from drivesim.scenarios.synthetic import FamilyConfig, generate

COUNT = 40


def _store(tmp_path, nan_at=()):
    """A store of COUNT highway scenarios of 6..30 agents (size classes 8, 16, 32), 10 steps;
    rows ``nan_at`` get a NaN x after writing (a damaged file)."""
    records = [generate("highway", i, FamilyConfig(max_agents=30, steps=10)) for i in range(COUNT)]
    path = tmp_path / "store.parquet"
    write_store(path, records, row_group_size=16)
    if nan_at:
        table = pq.read_table(path)
        xs = table.column("agents_x").to_pylist()
        for row in nan_at:
            xs[row][0] = float("nan")
        k = table.schema.get_field_index("agents_x")
        table = table.set_column(k, table.schema.field(k), pa.array(xs, pa.list_(pa.float32())))
        pq.write_table(table, path)
    return path


def _same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema and got.num_rows == want.num_rows
    for name in got.column_names:
        a, b = got.column(name), want.column(name)
        if pa.types.is_floating(a.type):
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=name)
        else:
            assert a.equals(b), f"column {name} differs"


def test_columnar_loader_equals_record_loader(tmp_path):
    path = _store(tmp_path)
    settings = PlanSettings(batch_size=8, window=24, padded_batch=8, loader_threads=2)
    assert isinstance(planner_for(StoreSource(path), tmp_path, settings, range(COUNT)), ColumnarPlanner)
    assert type(planner_for(MixedSource([StoreSource(path)]), tmp_path, settings, range(COUNT))) is Planner
    fast = run_campaign(small_config(tmp_path / "fast", sources=()), source=StoreSource(path))
    slow = run_campaign(small_config(tmp_path / "slow", sources=()), source=MixedSource([StoreSource(path)]))
    assert fast.done == slow.done == COUNT and fast.failed == 0
    got, want = results.results_table(tmp_path / "fast"), results.results_table(tmp_path / "slow")
    assert sorted(set(got.column("size_class").to_pylist())) == [8, 16, 32]
    _same(got, want)


def test_corrupt_row_is_a_failed_row(tmp_path):
    path = _store(tmp_path, nan_at=(5,))
    result = run_campaign(small_config(tmp_path / "run", sources=()), source=StoreSource(path))
    assert result.done == COUNT and result.failed == 1
    table = results.query(
        tmp_path / "run", "SELECT scenario_id, status, error FROM results WHERE status = 'failed'"
    )
    rows = table.to_pylist()
    assert [r["scenario_id"] for r in rows] == [5]
    assert "non-finite" in rows[0]["error"] and "agents.x" in rows[0]["error"]
