"""``?ego=ID`` on recorded sources: the named agent drives as the ego (WOMD object id, AV2
track id), the dataset's own ego becomes traffic, the scenario's name and id say so, and a
wrong id or option is one error naming the field."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from drivesim.scenarios.registry import SourceContext, SourceSpecError, check_spec, open_spec, source_inputs
from drivesim.scenarios.sources import ScenarioError

WOMD_FILE = "tfrecord-00000-of-01000_325.json"


def _other_womd_vehicle(raw: dict) -> dict:
    """A vehicle other than the SDC that is valid at the first step."""
    sdc = raw["metadata"]["sdc_track_index"]
    return next(
        o for k, o in enumerate(raw["objects"]) if k != sdc and o["type"] == "vehicle" and o["valid"][0]
    )


def test_womd_ego_is_the_named_object_and_the_sdc_becomes_traffic(womd_dir):
    path = womd_dir / WOMD_FILE
    raw = json.loads(path.read_text())
    chosen = _other_womd_vehicle(raw)
    spec = f"womd:{path}?ego={chosen['id']}"
    check_spec(spec)
    assert source_inputs(spec) == ((str(path), "*.json"),)  # the option is not a path
    source = open_spec(spec, SourceContext())
    default = open_spec(f"womd:{path}", SourceContext()).load(0)
    record = source.load(0)
    sc = record.scenario
    assert source.name == spec and record.name == f"{raw['scenario_id']}?ego={chosen['id']}"
    assert int(sc.scenario_id) != int(default.scenario.scenario_id)
    assert int(sc.ego_index) == 0 and sc.agents.x.shape == default.scenario.agents.x.shape
    assert float(sc.agents.length[0]) == pytest.approx(chosen["length"])
    # re-centred on the chosen ego's start, rounded to 1 m
    assert np.hypot(float(sc.agents.x[0]), float(sc.agents.y[0])) < 1.0
    sdc = raw["objects"][raw["metadata"]["sdc_track_index"]]
    start = np.array([sdc["position"][0]["x"], sdc["position"][0]["y"]])
    origin = np.round([chosen["position"][0]["x"], chosen["position"][0]["y"]])
    xy = np.stack([np.asarray(sc.agents.x), np.asarray(sc.agents.y)], axis=1)
    assert np.min(np.linalg.norm(xy - (start - origin), axis=1)) < 1e-3  # the SDC is an agent


def test_av2_ego_is_the_named_track(av2_dir):
    path = next(av2_dir.glob("scenario_*.parquet"))
    table = pq.read_table(path)
    focal = table.column("focal_track_id")[0].as_py()
    vehicles = sorted(
        {
            t
            for t, k in zip(
                table.column("track_id").to_pylist(), table.column("object_type").to_pylist(), strict=True
            )
            if k == "vehicle" and t != focal
        }
    )
    chosen = vehicles[0]
    default = open_spec(f"av2:{av2_dir}", SourceContext()).load(0)
    record = open_spec(f"av2:{av2_dir}?ego={chosen}", SourceContext()).load(0)
    assert record.name.endswith(f"?ego={chosen}")
    assert int(record.scenario.scenario_id) != int(default.scenario.scenario_id)
    assert np.hypot(float(record.scenario.agents.x[0]), float(record.scenario.agents.y[0])) < 1.0
    assert record.scenario.agents.x.shape == default.scenario.agents.x.shape


@pytest.mark.parametrize(("kind", "field"), [("womd", "objects[].id"), ("av2", "track_id")])
def test_an_unknown_ego_id_is_one_error_naming_the_field(womd_dir, av2_dir, kind, field):
    where = womd_dir / WOMD_FILE if kind == "womd" else av2_dir
    source = open_spec(f"{kind}:{where}?ego=no-such-agent", SourceContext())
    with pytest.raises(ScenarioError, match=re.escape(f"field {field}: no ") + ".* has id 'no-such-agent'"):
        source.load(0)


@pytest.mark.parametrize("option", ["?color=red", "?ego=", "?ego"])
def test_an_unknown_option_is_refused_before_anything_runs(womd_dir, option):
    with pytest.raises(SourceSpecError, match=r"the one option is \?ego=ID"):
        check_spec(f"womd:{womd_dir}{option}")


@pytest.mark.parametrize("option", ["?ego=3,other.json", "?ego=1&x=2", "?ego=1?x"])
def test_an_ego_id_with_a_path_or_option_after_it_is_refused(womd_dir, option):
    with pytest.raises(SourceSpecError, match=r"one id, after the paths"):
        check_spec(f"womd:{womd_dir}{option}")
