"""Planning a synthetic campaign from ids alone: every position once, one family and size
class per batch, the same plan on every run (resume)."""

from __future__ import annotations

import numpy as np

from drivesim.pipeline.generated import GeneratedPlanner, make_planner
from drivesim.pipeline.plan import Planner, PlanSettings
from drivesim.scenarios.sources import SyntheticSource
from drivesim.scenarios.synthetic import FamilyConfig, generate


def _planner(tmp_path, count=300, batch=16):
    source = SyntheticSource(["highway", "merge"], count, 3, config=FamilyConfig(seed=3, steps=10))
    settings = PlanSettings(batch_size=batch, window=batch * 4, padded_batch=batch, loader_threads=1)
    return make_planner(source, tmp_path, settings, range(count)), source


def test_plan_groups_by_family_and_size_class(tmp_path):
    planner, source = _planner(tmp_path)
    assert isinstance(planner, GeneratedPlanner)
    seen, merged_batches = [], 0
    for _, start, stop in planner.windows():
        plan = planner.plan_window(start, stop)
        assert plan == planner.plan_window(start, stop)  # a pure function of the window
        for batch in plan:
            assert batch.batch_id == min(batch.positions) and len(batch.positions) <= 16
            assert list(batch.positions) == sorted(batch.positions)
            work = planner.work(batch)
            # a remainder of the groups that filled no batch holds both families, else one
            merged = work.scenario.families == ("highway", "merge")
            assert merged or len({p % 2 for p in batch.positions}) == 1
            merged_batches += merged
            infos = work.infos.to_pylist()  # the info columns as an Arrow table
            assert [i["scenario_id"] for i in infos] == list(batch.positions)
            assert {i["size_class"] for i in infos} == {batch.size_class}
            assert all(i["num_agents"] <= batch.size_class for i in infos)
            names = [f"{source.families[p % 2]}-{p}" for p in batch.positions]
            assert [i["name"] for i in infos] == names
            assert [i["family"] for i in infos] == [source.families[p % 2] for p in batch.positions]
            assert work.scenario.scenario_id.shape == (16,) and work.scenario.size_class == batch.size_class
            seen += batch.positions
    assert sorted(seen) == list(range(300))
    assert merged_batches > 0
    # the host draw agrees with the generated scenario (spot check through the host path)
    batch = planner.plan_window(0, 64)[0]
    family = source.families[batch.positions[0] % 2]
    record = generate(family, batch.positions[0], source.config)
    assert record.num_agents == planner.work(batch).infos.column("num_agents")[0].as_py()


def test_host_path_on_request(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIVESIM_HOST_SYNTHETIC", "1")
    planner, _ = _planner(tmp_path)
    assert type(planner) is Planner
    np.testing.assert_equal(len(planner.windows()), 5)
