"""End-to-end campaigns on real devices, Parquet, DuckDB and SQLite (small workloads)."""

from __future__ import annotations

import json
import re
import sqlite3
import threading

import numpy as np
import pyarrow.parquet as pq
import pytest
from pipeline_helpers import COUNT, FaultySource, small_config

from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import read_config
from drivesim.pipeline.summary import campaign_summary


def test_every_scenario_once_and_ledger_done(campaign):
    out, result, _ = campaign
    table = results.results_table(out)
    ids = table.column("scenario_id").to_pylist()
    assert ids == list(range(COUNT))
    assert set(table.column("status").to_pylist()) == {"ok"}
    assert result.done == COUNT and result.failed == 0
    con = sqlite3.connect(out / "ledger.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = con.execute("SELECT batch_id, scenario_ids, status, shard FROM batches").fetchall()
    assert {r[2] for r in rows} == {"done"}
    planned = sorted(i for r in rows for i in json.loads(r[1]))
    assert planned == list(range(COUNT))
    for batch_id, _, _, shard in rows:
        assert (out / shard).is_file() and pq.read_table(out / shard).num_rows > 0
        assert shard.endswith(results.shard_name(batch_id))


def test_phases_recorded_per_batch(campaign):
    out, _, _ = campaign
    con = sqlite3.connect(out / "ledger.sqlite")
    phases = con.execute(
        "SELECT load_s, h2d_s, compute_s, d2h_s, write_s, num_scenarios FROM phases"
    ).fetchall()
    batches = con.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
    assert len(phases) == batches
    assert sum(p[5] for p in phases) == COUNT
    assert all(all(v is not None and v >= 0 for v in p) for p in phases)
    assert sum(p[2] for p in phases) > 0
    meta = dict(con.execute("SELECT key, value FROM meta"))
    assert {"jax_version", "device_count", "started_at", "finished_at"} <= set(meta)
    plans = json.loads(meta["search_plans"])  # the resolved SearchPlan of each compiled program shape
    assert plans and all("auto" not in plan.values() for plan in plans.values())
    # keyed by shape, and by the direct searches a generated batch's program fixes
    assert all(re.fullmatch(r"\d+x\d+( (zone|bends|zone\+bends|none))?", key) for key in plans), plans
    assert {plan["neighbours"] for plan in plans.values()} == {"window"}  # 16 agents on this CPU


def test_progress_events(campaign):
    _, _, events = campaign
    assert events[0].kind == "start" and events[-1].kind == "end"
    batches = [e for e in events if e.kind == "batch"]
    assert sum(e.num_scenarios for e in batches) == COUNT
    assert batches[-1].done == COUNT and all(e.phases is not None for e in batches)


def test_metrics_match_core_simulate(campaign):
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.core.types import SimConfig
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    out, _, _ = campaign
    ids = [3, 40, 77]
    batch = pad_and_stack(
        [generate("highway", i, FamilyConfig(num_agents=16, steps=10)).scenario for i in ids]
    )
    expected = simulate(batch, idm_policy(), SimConfig(num_steps=10))
    got = results.query(
        out,
        f"SELECT progress_m, ego_collided FROM results WHERE scenario_id IN {tuple(ids)}"
        " ORDER BY scenario_id",
    )
    np.testing.assert_allclose(
        got.column("progress_m").to_numpy(), np.asarray(expected.progress_m), rtol=1e-5
    )


def test_rerun_skips_done_batches(campaign):
    out, _, _ = campaign
    events = []
    again = run_campaign(read_config(out), progress=events.append)
    assert again.skipped == COUNT and not [e for e in events if e.kind == "batch"]
    assert results.query(out, "SELECT count(*) AS n FROM results").column("n")[0].as_py() == COUNT


def test_different_campaign_in_same_dir_is_refused(campaign):
    out, _, _ = campaign
    with pytest.raises(ValueError, match="count"):
        run_campaign(small_config(out, count=COUNT + 1))


def test_bad_scenarios_recorded_as_failed_and_campaign_goes_on(tmp_path):
    source = FaultySource(48, nan=[5, 40], broken=[17], crowded=[33])
    result = run_campaign(small_config(tmp_path, count=48), source=source)
    assert result.done == 48 and result.failed == 4
    failed = results.query(
        tmp_path, "SELECT scenario_id, error FROM results WHERE status='failed' ORDER BY scenario_id"
    ).to_pylist()
    assert [r["scenario_id"] for r in failed] == [5, 17, 33, 40]
    reasons = {r["scenario_id"]: r["error"] for r in failed}
    assert "malformed" in reasons[17] and "17" in reasons[17]
    assert "class" in reasons[33] and "200" in reasons[33]  # 200 agents: no size class fits
    assert "x" in reasons[5]
    ok = results.query(tmp_path, "SELECT count(*) AS n FROM results WHERE status='ok'").column("n")[0].as_py()
    assert ok == 44
    con = sqlite3.connect(tmp_path / "ledger.sqlite")
    assert sorted(r[0] for r in con.execute("SELECT scenario_id FROM failures")) == [5, 17, 33, 40]
    summary = campaign_summary(tmp_path)
    assert summary["policies"][0]["failed"] == 4


def test_sweep_gives_rows_per_scenario_and_policy(tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text("[[policy]]\nT = 1.0\nv0 = 25\n\n[[policy]]\nT = 2.0\n\n[[policy]]\n")
    run_campaign(small_config(tmp_path / "c", count=16, sweep=str(sweep)))
    table = results.query(
        tmp_path / "c",
        "SELECT policy_id, policy, count(*) AS n, avg(progress_m) AS p FROM results GROUP BY 1, 2 ORDER BY 1",
    ).to_pylist()
    assert [(r["policy_id"], r["n"]) for r in table] == [(0, 16), (1, 16), (2, 16)]
    assert table[0]["policy"] == "idm[T=1,v0=25]" and table[2]["policy"] == "idm"
    assert table[0]["p"] != table[1]["p"]


def test_no_threads_left_after_campaigns():
    assert [t.name for t in threading.enumerate() if t.name.startswith("drivesim-")] == []


def test_duckdb_relation_and_arrow(campaign):
    import duckdb

    out, _, _ = campaign
    con = duckdb.connect()
    rel = results.results_relation(out, con)
    assert rel.aggregate("count(*)").fetchall()[0][0] == COUNT
    assert results.results_table(out).num_rows == COUNT


def test_lane_changes_option_reaches_the_engine(tmp_path):
    """--lane-changes: the campaign's metrics equal core simulate with MOBIL on (and differ
    from the run without it), and a resume with the option off is refused."""
    import dataclasses

    from drivesim.core.policies import IDM, idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.pipeline.config import sim_config
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    config = small_config(tmp_path, count=8, num_steps=40, lane_changes=True)
    run_campaign(config)
    batch = pad_and_stack(
        [generate("highway", i, FamilyConfig(num_agents=16, steps=40)).scenario for i in range(8)]
    )
    with_changes = simulate(batch, idm_policy(), sim_config(config, IDM))
    without = simulate(batch, idm_policy(), sim_config(dataclasses.replace(config, lane_changes=False), IDM))
    got = results.query(tmp_path, "SELECT progress_m FROM results ORDER BY scenario_id").column("progress_m")
    np.testing.assert_array_equal(got.to_numpy(), np.asarray(with_changes.progress_m))
    assert not np.array_equal(np.asarray(with_changes.progress_m), np.asarray(without.progress_m))
    with pytest.raises(ValueError, match="lane_changes"):
        run_campaign(dataclasses.replace(config, lane_changes=False))
