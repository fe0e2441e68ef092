"""A window's buckets that fill no batch share one program: the demo's four CommonRoad files
(four buckets) run as one batch."""

from __future__ import annotations

import sqlite3

import numpy as np
from pipeline_helpers import small_config

from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign


def test_four_files_of_four_buckets_run_as_one_batch(tmp_path, commonroad_dir):
    spec = (f"commonroad:{commonroad_dir}",)
    merged = run_campaign(small_config(tmp_path / "merged", sources=spec))
    assert merged.done == 4 and merged.failed == 0
    with sqlite3.connect(tmp_path / "merged" / "ledger.sqlite") as con:
        batches = con.execute("SELECT size_class, scenario_ids FROM batches").fetchall()
        compiled = con.execute("SELECT count(*) FROM phases WHERE compile_s > 0").fetchone()[0]
    assert len(batches) == 1 and batches[0][0] == 32  # (16, 32 agents; 32, 128 lanes; ...) -> one
    assert compiled <= 1
    table = results.results_table(tmp_path / "merged").sort_by("scenario_id")
    assert set(table.column("size_class").to_pylist()) == {32}
    assert np.isfinite(table.column("log_div_mean").to_numpy()).all()
    # the rows are each file's own bits: tests/scenarios/test_padding_classes.py
