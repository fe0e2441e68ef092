"""Argoverse 2 scenarios: the real scenario as its files describe it, a campaign over it,
and hostile files as one error each."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from drivesim.core.types import CYCLIST, PEDESTRIAN, VEHICLE
from drivesim.scenarios.av2 import BOXES, KINDS, load_av2, map_path, read_av2
from drivesim.scenarios.sources import ScenarioError


@pytest.fixture(scope="module")
def scenario_file(av2_dir):
    return next(av2_dir.glob("scenario_*.parquet"))


def test_real_scenario_reads_every_track(scenario_file):
    table = pq.read_table(scenario_file)
    types = dict(
        zip(table.column("track_id").to_pylist(), table.column("object_type").to_pylist(), strict=True)
    )
    record, info = read_av2(scenario_file)
    sc = record.scenario
    agents = [t for t, k in types.items() if k in KINDS]
    assert sc.agents.x.shape == (len(agents),)
    assert sum(info.left_out.values()) == len(types) - len(agents)
    kinds = np.asarray(sc.agents.kind)
    want = [KINDS[types[t]] for t in agents]
    for kind in (VEHICLE, PEDESTRIAN, CYCLIST):
        assert (kinds == kind).sum() == want.count(kind)
    focal = table.column("focal_track_id")[0].as_py()
    assert types[focal] in KINDS and int(sc.ego_index) == 0
    assert (float(sc.agents.length[0]), float(sc.agents.width[0])) == pytest.approx(BOXES[types[focal]])
    rows = [r for r in table.to_pylist() if r["track_id"] == focal]
    first = min(rows, key=lambda r: r["timestep"])
    origin = np.round([first["position_x"], first["position_y"]])
    logged = np.asarray(sc.log.xy)[:, 0]
    for r in rows[:: max(1, len(rows) // 10)]:
        np.testing.assert_allclose(
            logged[r["timestep"]], [r["position_x"] - origin[0], r["position_y"] - origin[1]], atol=2e-5
        )
    assert info.map_counts["lane_segments"] == len(
        json.loads(map_path(scenario_file).read_text())["lane_segments"]
    )
    assert record.family == "av2" and record.name == table.column("scenario_id")[0].as_py()
    assert record.note == "left out: " + ", ".join(  # what the engine does not get
        [f"{n} {k} tracks" for k, n in sorted(info.left_out.items())]
        + ["2 drivable areas", f"{info.map_counts['pedestrian_crossings']} pedestrian crossings"]
    )


def test_a_campaign_replays_the_scenario(scenario_file, tmp_path):
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig
    from drivesim.pipeline.results import query

    config = CampaignConfig(sources=(f"av2:{scenario_file}",), count=1, num_steps=40, out=str(tmp_path / "c"))
    assert run_campaign(config).failed == 0
    rows = query(tmp_path / "c", "SELECT family, status, log_div_mean FROM results").to_pylist()
    assert rows == [{"family": "av2", "status": "ok", "log_div_mean": rows[0]["log_div_mean"]}]


def _copy(scenario_file, tmp_path, table=None, map_doc=None):
    path = tmp_path / scenario_file.name
    if table is None:
        shutil.copy(scenario_file, path)
    else:
        pq.write_table(table, path)
    target = map_path(path)
    if map_doc is None:
        shutil.copy(map_path(scenario_file), target)
    else:
        target.write_text(map_doc if isinstance(map_doc, str) else json.dumps(map_doc))
    return path


def _set(table: pa.Table, column: str, row: int, value) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    k = table.schema.get_field_index(column)
    return table.set_column(k, table.schema.field(k), pa.array(values, table.schema.field(k).type))


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: t.drop_columns(["heading"]), "field heading"),
        (lambda t: _set(t, "position_x", 3, float("nan")), "field position_x"),
        (lambda t: _set(t, "position_y", 3, 1e300), "field position_y"),
        (lambda t: _set(t, "timestep", 0, 10**9), "field timestep"),
        (lambda t: _set(t, "focal_track_id", 0, "nobody"), "field focal_track_id"),
    ],
)
def test_hostile_scenarios_are_one_error_naming_the_field(scenario_file, tmp_path, edit, field):
    path = _copy(scenario_file, tmp_path, table=edit(pq.read_table(scenario_file)))
    with pytest.raises(ScenarioError) as err:
        load_av2(path)
    assert field in str(err.value) and path.name in str(err.value)


@pytest.mark.parametrize("doc", ["not json", "[1]", '{"lane_segments": {"1": {"left_lane_boundary": 3}}}'])
def test_a_bad_or_missing_map_is_one_error_naming_it(scenario_file, tmp_path, doc):
    path = _copy(scenario_file, tmp_path, map_doc=doc)
    with pytest.raises(ScenarioError, match="log_map_archive"):
        load_av2(path)
    map_path(path).unlink()
    with pytest.raises(ScenarioError, match="log_map_archive"):
        load_av2(path)
