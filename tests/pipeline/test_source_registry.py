"""A user-registered source kind runs a real campaign; the demo data is found from the current
directory or $DRIVESIM_DATA, never relative to the package."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
from pipeline_helpers import small_config

from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.defaults import demo_sources
from drivesim.pipeline.results import results_table
from drivesim.pipeline.sources import DATA_ENV, find_shared_commonroad
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.registry import SourceContext, register_source
from drivesim.scenarios.sources import ScenarioSource

METRICS = ("ego_collided", "offroad", "progress_m", "min_ttc_s", "max_jerk", "num_agents")


class PickedSource(ScenarioSource):
    """``picked:ID[,ID...]``: the synthetic highway scenarios with these ids, in this order."""

    def __init__(self, arg: str, context: SourceContext):
        self.ids = [int(i) for i in arg.split(",")]
        self.config = context.family
        self.name = f"picked:{arg}"

    def __len__(self) -> int:
        return len(self.ids)

    def load(self, position: int) -> ScenarioRecord:
        from drivesim.scenarios.synthetic import generate

        self._check(position)
        return generate("highway", self.ids[position], self.config)


register_source("picked", PickedSource, usage="picked:ID[,ID...]")


def test_user_kind_runs_a_campaign(campaign, tmp_path):
    reference_dir, _, _ = campaign
    ids = [150, 7, 3, 42, 99]
    result = run_campaign(small_config(tmp_path / "picked", sources=(f"picked:{','.join(map(str, ids))}",)))
    assert result.done == len(ids) and result.failed == 0
    rows = results_table(tmp_path / "picked").to_pylist()
    assert sorted(r["scenario_id"] for r in rows) == sorted(ids)
    reference = {r["scenario_id"]: r for r in results_table(reference_dir).to_pylist()}
    for row in rows:  # host-generated records equal the campaign's on-device ones
        want = reference[row["scenario_id"]]
        assert all(np.isclose(row[k], want[k], rtol=1e-6) for k in METRICS), (row, want)
    with sqlite3.connect(tmp_path / "picked" / "ledger.sqlite") as db:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    inputs = json.loads(meta["inputs"])
    assert inputs[f"source picked:{','.join(map(str, ids))}"]["seed"] == 0  # no files: seed/count


def test_demo_data_from_cwd_then_drivesim_data(monkeypatch, tmp_path, commonroad_dir):
    assert find_shared_commonroad() == commonroad_dir.resolve()  # pytest runs in the project root
    monkeypatch.chdir(tmp_path)  # the package's own location is no longer a candidate
    monkeypatch.delenv(DATA_ENV, raising=False)
    assert find_shared_commonroad() is None
    specs, notes = demo_sources()
    assert len(specs) == 1 and specs[0].startswith("synthetic:") and DATA_ENV in notes[0]
    monkeypatch.setenv(DATA_ENV, str(commonroad_dir.parent))
    assert find_shared_commonroad() == commonroad_dir.resolve()
    specs, notes = demo_sources()
    assert specs[1] == f"commonroad:{commonroad_dir.resolve()}" and not notes
    assert find_shared_commonroad(root=commonroad_dir.parents[2] / "project") == commonroad_dir.resolve()
