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
        xs = table.column("agents_x").to_pylist()  # each row's float32 bytes (store v4)
        for row in nan_at:
            xs[row] = np.float32(np.nan).tobytes() + xs[row][4:]
        k = table.schema.get_field_index("agents_x")
        table = table.set_column(k, table.schema.field(k), pa.array(xs, pa.large_binary()))
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
    _same(got, want)
    # several padding classes (a bucket that filled no batch is padded to the window's larger one)
    classes = set(got.column("size_class").to_pylist())
    assert classes <= {8, 16, 32} and len(classes) >= 2


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


def _damage(path, row: int, column: str, value) -> None:
    """Set ``column`` of store row ``row`` to ``value`` (a scalar column) or its first
    element to ``value`` (a float32 array column: binary in store v4, a list before), as a
    hostile editor of the file would."""
    table = pq.read_table(path)
    k = table.schema.get_field_index(column)
    values = table.column(column).to_pylist()
    if isinstance(values[row], bytes):
        values[row] = np.float32(value).tobytes() + values[row][4:]
    elif isinstance(values[row], list):
        values[row][0] = value
    else:
        values[row] = value
    table = table.set_column(k, table.schema.field(k), pa.array(values, table.schema.field(k).type))
    pq.write_table(table, path)


def test_rows_outside_the_physical_ranges_are_failed_rows(tmp_path):
    """Every source passes the same checks: a stored row with a NaN IDM speed, a position
    of 1e30 m, a negative lane width or an impossible agent count fails with the field named,
    and the other rows run."""
    path = _store(tmp_path)
    cases = {
        3: ("idm_v0", float("nan"), "idm.v0"),
        7: ("agents_x", 1e30, "agents.x"),
        11: ("road_widths", -3.0, "road.widths"),
        13: ("num_agents", 10**9, "num_agents"),
        17: ("num_agents", -5, "num_agents"),
    }
    for row, (column, value, _) in cases.items():
        _damage(path, row, column, value)
    result = run_campaign(small_config(tmp_path / "run", sources=()), source=StoreSource(path))
    assert result.done == COUNT and result.failed == len(cases)
    rows = results.query(
        tmp_path / "run", "SELECT scenario_id, error FROM results WHERE status = 'failed' ORDER BY 1"
    ).to_pylist()
    assert [r["scenario_id"] for r in rows] == sorted(cases)
    for r in rows:
        field = cases[r["scenario_id"]][2]
        assert f"field {field}" in r["error"] and str(path) in r["error"], r


def test_store_info_does_not_count_impossible_agent_counts(tmp_path):
    import subprocess
    import sys

    path = _store(tmp_path)
    _damage(path, 13, "num_agents", 10**9)
    _damage(path, 17, "num_agents", -5)
    proc = subprocess.run(
        [sys.executable, "-c", "from drivesim.cli import main; main()", "scenarios", "info", str(path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"highway: {COUNT - 2} scenarios, agents " in proc.stdout and "1000000000" not in proc.stdout
    assert "2 rows with an impossible agent count" in proc.stderr


def test_stored_ids_are_the_result_ids(tmp_path):
    """A store whose ids are 1000..: the results carry those ids on both loaders, failed rows
    included, and ``show --scenario`` finds a row by the id the results give it."""
    records = [generate("highway", 1000 + i, FamilyConfig(max_agents=30, steps=10)) for i in range(12)]
    path = tmp_path / "store.parquet"
    write_store(path, records, row_group_size=16)
    _damage(path, 4, "agents_x", float("nan"))
    for name, source in (("fast", None), ("slow", MixedSource([StoreSource(path)]))):
        run_campaign(small_config(tmp_path / name, sources=(f"store:{path}",)), source=source)
        rows = results.query(
            tmp_path / name, "SELECT scenario_id, status FROM results ORDER BY 1"
        ).to_pylist()
        assert [r["scenario_id"] for r in rows] == list(range(1000, 1012)), name
        assert [r["scenario_id"] for r in rows if r["status"] == "failed"] == [1004], name
    from drivesim.report.replay import locate

    assert locate(tmp_path / "fast", 1007).scenario_id == 1007


def test_a_repeated_stored_id_is_a_failed_row(tmp_path):
    """Two rows with one id would be two result rows with one scenario_id: the later row fails
    naming the earlier, on both loaders."""
    path = _store(tmp_path)
    _damage(path, 9, "scenario_id", 2)
    for name, source in (("fast", StoreSource(path)), ("slow", MixedSource([StoreSource(path)]))):
        result = run_campaign(small_config(tmp_path / name, sources=()), source=source)
        assert result.failed == 1, name
        rows = results.query(tmp_path / name, "SELECT scenario_id, status, error FROM results").to_pylist()
        assert sorted(r["scenario_id"] for r in rows if r["status"] == "ok") == [
            i for i in range(COUNT) if i != 9
        ]
        failed = [r for r in rows if r["status"] == "failed"]
        assert failed[0]["scenario_id"] == 2 and "also row 2" in failed[0]["error"], failed


def test_window_rows_read_as_far_as_each_batch_reaches(tmp_path):
    """WindowRows holds every row of batch k at ``position - first``, reads each row group
    once, and lets go of the row groups no later batch needs."""
    from drivesim.pipeline.columnar import WindowRows, plan_window
    from drivesim.scenarios.store import ScenarioStore

    records = [generate("highway", i, FamilyConfig(max_agents=30, steps=10)) for i in range(COUNT)]
    path = tmp_path / "store.parquet"
    write_store(path, records, row_group_size=5)
    store = ScenarioStore(path)
    start, stop = 3, COUNT - 2
    batches = plan_window(store.bucket_keys().stacked()[start:stop], start, 4)
    rows = WindowRows(store, start, stop, batches)
    firsts, names = [], store.reader().read(columns=["name"]).column(0).to_pylist()
    for k, batch in enumerate(batches):
        table = rows.table(k)
        firsts.append(rows.first)
        got = table.column("name").to_pylist()
        assert [got[p - rows.first] for p in batch.positions] == [names[p] for p in batch.positions]
        assert rows.first + table.num_rows <= stop
    assert firsts == sorted(firsts) and firsts[0] == start
    full = [b for b in batches if len(b.positions) == 4]
    assert len(full) > 2 and firsts[len(full) - 1] > start  # the early row groups were let go
