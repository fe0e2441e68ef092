"""The campaign the cluster tests run, and exact comparison of result tables."""

from __future__ import annotations

import sqlite3

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from drivesim.pipeline import results
from drivesim.pipeline.config import CampaignConfig

OBJECT_STORE = 100 * 1024 * 1024  # bytes per Ray node (nothing large goes through it)
COUNT = 64  # 16-agent highway scenarios, 10 steps, batches of 8: 8 batches, one program


def cluster_config(out, workers: int = 2, **changes) -> CampaignConfig:
    values = dict(
        sources=("synthetic:highway",),
        count=COUNT,
        agents=16,
        num_steps=10,
        batch_size=8,
        window_batches=4,
        out=str(out),
        cluster="ray",
        workers=workers,
        stall_s=300.0,
    )
    values.update(changes)
    return CampaignConfig(**values)


def sorted_results(directory) -> pa.Table:
    """The results view without the columns that say where a row was computed."""
    table = results.results_table(directory).drop(["batch_id", "process_index"])
    return table.sort_by([("scenario_id", "ascending"), ("policy_id", "ascending")])


def assert_same_results(got_dir, want_dir, count: int = COUNT) -> None:
    """Every scenario exactly once, and every column bitwise equal (NaN == NaN)."""
    got, want = sorted_results(got_dir), sorted_results(want_dir)
    assert got.num_rows == want.num_rows == count
    assert pc.count_distinct(got.column("scenario_id")).as_py() == count
    assert got.schema == want.schema
    for name in got.column_names:
        a, b = got.column(name), want.column(name)
        if pa.types.is_floating(a.type):
            x, y = a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)
            bits = f"u{x.dtype.itemsize}"
            assert np.array_equal(x.view(bits), y.view(bits)), f"column {name} differs in its bits"
        else:
            assert a.equals(b), f"column {name} differs from the embedded run"


def batch_workers(directory) -> dict[int, str | None]:
    """{batch_id: worker} of the done batches."""
    con = sqlite3.connect(f"{directory}/ledger.sqlite")
    try:
        return dict(con.execute("SELECT batch_id, worker FROM batches WHERE status='done'"))
    finally:
        con.close()
