"""Waymo Open Motion scenarios (GPUDrive JSON): the real files as the dataset describes them,
re-centred coordinates, a campaign over them, and hostile files as one error each."""

from __future__ import annotations

import json

import numpy as np
import pytest

from drivesim.core.types import CYCLIST, PEDESTRIAN, VEHICLE
from drivesim.scenarios.sources import ScenarioError
from drivesim.scenarios.womd import LANE_WIDTH_M, load_womd, read_womd

# file -> (vehicles, pedestrians, cyclists, lanes) as published with the data
REAL = {
    "tfrecord-00000-of-01000_4.json": (68, 12, 1, 37),
    "tfrecord-00000-of-01000_325.json": (54, 8, 0, 61),
    "tfrecord-00002-of-01000_407.json": (15, 0, 0, 76),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_file_reads_every_object_with_its_kind_and_box(womd_dir, name):
    raw = json.loads((womd_dir / name).read_text())
    record, info = read_womd(womd_dir / name)
    sc = record.scenario
    vehicles, pedestrians, cyclists, lanes = REAL[name]
    kinds = np.asarray(sc.agents.kind)
    assert (kinds == VEHICLE).sum() == vehicles and (kinds == PEDESTRIAN).sum() == pedestrians
    assert (kinds == CYCLIST).sum() == cyclists and info.left_out == 0
    assert info.map_counts["lane"] == lanes and sum(info.map_counts.values()) == len(raw["roads"])
    sdc = raw["objects"][raw["metadata"]["sdc_track_index"]]
    assert int(sc.ego_index) == 0
    assert sc.agents.length[0] == pytest.approx(sdc["length"]) and sc.agents.width[0] == pytest.approx(
        sdc["width"]
    )
    # re-centred on the ego's start (rounded to 1 m): offsets exact, float32 precision kept
    first = next(t for t, ok in enumerate(sdc["valid"]) if ok)
    origin = np.round([sdc["position"][first]["x"], sdc["position"][first]["y"]])
    assert np.hypot(sc.agents.x[0], sc.agents.y[0]) < 1.0
    logged = np.asarray(sc.log.xy)[:, 0]
    want = np.array([[p["x"], p["y"]] for p in sdc["position"]]) - origin
    ok = np.asarray(sc.log.valid)[:, 0]
    np.testing.assert_allclose(logged[ok], want[ok], atol=2e-6)
    assert np.all(np.asarray(sc.road.widths)[: lanes // 2] > 0)
    assert record.family == "womd" and record.name == raw["scenario_id"]
    edges = info.map_counts["road_edge"]  # the note names what the engine does not get
    assert record.note.startswith("left out: ") and f"{edges} road edges" in record.note


def test_a_campaign_replays_the_recorded_traffic(womd_dir, tmp_path):
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig
    from drivesim.pipeline.results import query

    bad = tmp_path / "bad.json"
    bad.write_text('{"objects": [], "roads": [], "metadata": {"sdc_track_index": 3}}')
    small = womd_dir / "tfrecord-00002-of-01000_407.json"  # one program: 15 agents
    config = CampaignConfig(
        sources=(f"womd:{small}", f"womd:{bad}"), count=1, num_steps=40, out=str(tmp_path / "c")
    )
    result = run_campaign(config)
    assert result.done == 2 and result.failed == 1
    rows = query(
        tmp_path / "c", "SELECT name, status, error, log_div_mean, family FROM results ORDER BY name"
    ).to_pylist()
    ok = [r for r in rows if r["status"] == "ok"]
    assert [r["name"] for r in ok] == [json.loads(small.read_text())["scenario_id"]]
    assert all(r["family"] == "womd" and r["log_div_mean"] is not None for r in ok)
    failed = [r for r in rows if r["status"] == "failed"]
    assert "bad.json" in failed[0]["error"] and "metadata.sdc_track_index" in failed[0]["error"]


def _write(tmp_path, doc) -> object:
    path = tmp_path / "x.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _small(womd_dir) -> dict:
    return json.loads((womd_dir / "tfrecord-00002-of-01000_407.json").read_text())


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(objects="nope"), "field objects"),
        (lambda d: d["metadata"].update(sdc_track_index=999), "metadata.sdc_track_index"),
        (lambda d: d["objects"][1].update(length="long"), "objects[1].length"),
        (lambda d: d["objects"][1]["heading"].pop(), "objects[1].heading"),
        (lambda d: d["objects"][1].update(type="ufo"), "objects[1].type"),
        (lambda d: d["objects"][2]["position"][0].update(x=1e300), "objects[2].position[0].x"),
    ],
)
def test_hostile_files_are_one_error_naming_the_field(womd_dir, tmp_path, edit, field):
    doc = _small(womd_dir)
    for obj in doc["objects"]:
        obj["valid"] = [True] * len(obj["valid"])  # every step read, the edits included
    edit(doc)
    with pytest.raises(ScenarioError) as err:
        load_womd(_write(tmp_path, doc))
    assert field in str(err.value) and "x.json" in str(err.value)


@pytest.mark.parametrize("text", ["[1, 2]", '{"objects": [NaN]}', "not json", '{"a": 1'])
def test_not_a_scenario_object_is_one_error(tmp_path, text):
    with pytest.raises(ScenarioError, match="x.json"):
        load_womd(_write(tmp_path, text))


def test_lanes_get_the_documented_width_and_successors(womd_dir):
    from drivesim.scenarios.womd import SUCCESSOR_GAP_M, _lanes

    doc = _small(womd_dir)
    lanes = _lanes(doc["roads"], np.zeros(2), lambda f, r: (_ for _ in ()).throw(AssertionError(f)))
    assert {lane.width for lane in lanes} == {LANE_WIDTH_M}
    by_id = {lane.id: lane for lane in lanes}
    joined = [(a, by_id[s]) for a in lanes for s in a.successors]
    assert joined and all(np.hypot(*(b.center[0] - a.center[-1])) <= SUCCESSOR_GAP_M for a, b in joined)


def test_import_writes_a_store_that_runs_like_the_files(womd_dir, tmp_path):
    import subprocess
    import sys

    from drivesim.scenarios.sources import StoreSource

    store = tmp_path / "w.parquet"
    small = womd_dir / "tfrecord-00002-of-01000_407.json"
    code = "from drivesim.cli import main; main()"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "import",
            "womd",
            str(small),
            str(tmp_path / "missing.json"),
            "--out",
            str(store),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "missing.json" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-c", code, "import", "womd", str(small), "--out", str(store)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "wrote 1 scenarios" in proc.stdout, proc.stderr
    stored = StoreSource(store).load(0).scenario
    direct = load_womd(small).scenario
    np.testing.assert_array_equal(stored.log.xy, direct.log.xy)
    assert int(stored.scenario_id) == int(direct.scenario_id)
