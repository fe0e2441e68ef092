"""The batch size: "auto" by the rule of drivesim.pipeline.batch_size, and never part of a
campaign's identity: a campaign stopped part way and resumed with another batch size ends
with every scenario once, each row bit-identical to an uninterrupted run's."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from pipeline_helpers import small_config

from drivesim.pipeline import batch_size, results
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.ledger import Ledger
from drivesim.scenarios.store import write_store
from drivesim.scenarios.synthetic import FamilyConfig, generate_positions


def _work(**changes) -> batch_size.Workload:
    values = dict(scenarios=10**6, agents=32, steps=80, platform="cpu", devices=8)
    return batch_size.Workload(**(values | changes))


def test_auto_is_a_second_of_device_time_and_an_eighth_of_the_campaign(monkeypatch):
    monkeypatch.setattr(batch_size, "usable_cores", lambda: 2)
    # CPU: 12e6 agent-steps/s per core x 2 cores / (32 x 80) = 9,375 -> 8,192
    assert batch_size.auto_batch_size(_work()) == 8192
    assert batch_size.auto_batch_size(_work(agents=128)) == 2048
    assert batch_size.auto_batch_size(_work(agents=None)) == 8192  # a mix: 32 agents assumed
    # one accelerator: 500e6 / 2,560 = 195,312 -> capped at 65,536
    assert batch_size.auto_batch_size(_work(platform="gpu", devices=1)) == batch_size.MAX_BATCH
    # a small campaign keeps 8 batches or more: 604 / 8 = 76 -> 128; never below 64
    assert batch_size.auto_batch_size(_work(scenarios=604)) == 128
    assert batch_size.auto_batch_size(_work(scenarios=10)) == batch_size.MIN_BATCH
    assert batch_size.resolve(1000, _work()) == 1000


class _Stop(Exception):
    pass


def _stop_after(batches: int):
    seen = []

    def progress(event):
        if event.kind == "batch":
            seen.append(event.batch_id)
            if len(seen) == batches:
                raise _Stop

    return progress


def _rows(directory) -> dict:
    table = results.results_table(directory)
    return {name: np.asarray(table.column(name)) for name in table.column_names if name != "batch_id"}


def _store(path, count: int) -> str:
    config = FamilyConfig(num_agents=16, steps=10)
    write_store(path, generate_positions(["highway"], count, config, 0))
    return f"store:{path}"


@pytest.mark.parametrize("source", ["synthetic", "store", "records", "older ledger"])
def test_resume_with_another_batch_size_gives_the_same_rows(tmp_path, monkeypatch, source):
    changes = {}
    if source == "store":
        changes = dict(sources=(_store(tmp_path / "s.parquet", 160),))
    if source == "records":  # the record-by-record planner
        monkeypatch.setenv("DRIVESIM_HOST_SYNTHETIC", "1")
    reference = small_config(tmp_path / "ref", **changes)
    run_campaign(reference)
    out = tmp_path / "c"
    with pytest.raises(_Stop):  # stopped inside its second window (windows of 3 batches of 8)
        run_campaign(small_config(out, **changes), progress=_stop_after(4))
    with Ledger(out) as ledger:
        begun = ledger.conn.execute("SELECT COUNT(*) FROM window_starts").fetchone()[0]
        assert begun >= 2
        if source == "older ledger":  # as a drivesim before window_starts left a run killed
            ledger.conn.execute("DELETE FROM window_starts")  # inside its last window:
            last = ledger.conn.execute("SELECT max(window_id) FROM windows").fetchone()[0]
            ledger.conn.execute("DELETE FROM windows WHERE window_id=?", (last,))  # begun, not planned
            identity = json.loads(ledger.meta()["identity"]) | {"batch_size": 8, "window_batches": 3}
            ledger.set_meta(identity=json.dumps(identity))
    result = run_campaign(dataclasses.replace(small_config(out, **changes), batch_size=20))
    assert result.done == 160 and result.failed == 0
    got, want = _rows(out), _rows(tmp_path / "ref")
    assert sorted(got["scenario_id"].tolist()) == list(range(160))  # each scenario once
    order_got, order_want = np.argsort(got["scenario_id"]), np.argsort(want["scenario_id"])
    for name, column in want.items():
        np.testing.assert_array_equal(got[name][order_got], column[order_want], err_msg=name)
    with Ledger(out) as ledger:
        sizes = {size for (size,) in ledger.conn.execute("SELECT batch_size FROM window_starts")}
    assert sizes == {8, 20}  # the windows begun before kept their batches of 8
