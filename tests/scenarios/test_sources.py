"""Scenario sources, validation errors and the scenario CLI commands."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from typer.testing import CliRunner

from drivesim.cli import app
from drivesim.core.types import replace
from drivesim.core.validate import validate_scenario
from drivesim.scenarios.sources import (
    CommonRoadSource,
    MixedSource,
    ScenarioError,
    StoreSource,
    SyntheticSource,
    parse_source,
    parse_sources,
)
from drivesim.scenarios.synthetic import generate


def test_synthetic_source_positions():
    src = SyntheticSource(["highway", "merge", "intersection"], count=7, seed=2, first_id=100)
    assert len(src) == 7
    rec = src.load(4)
    assert rec.family == "merge" and rec.scenario_id == 104
    assert "100..106" in src.describe()
    with pytest.raises(IndexError):
        src.load(7)
    with pytest.raises(ValueError, match="unknown synthetic family"):
        SyntheticSource(["roundabout"], 3, 0)


def test_parse_sources_mixed(tmp_path, commonroad_dir):
    from drivesim.scenarios.store import write_store

    store = tmp_path / "s.parquet"
    write_store(store, [generate("intersection", i) for i in range(3)])
    src = parse_sources(["synthetic:highway,merge", f"commonroad:{commonroad_dir}", f"store:{store}"], 5, 0)
    assert isinstance(src, MixedSource) and len(src) == 5 + 4 + 3
    assert src.load(6).family == "commonroad" and src.load(10).family == "intersection"
    assert isinstance(parse_source(f"store:{store}", 0, 0), StoreSource)
    replay = parse_source(f"commonroad:replay:{commonroad_dir}", 0, 0)
    assert isinstance(replay, CommonRoadSource) and replay.config.replay
    with pytest.raises(ValueError, match="unknown kind"):
        parse_source("carla:x", 1, 0)
    with pytest.raises(ScenarioError, match="no such file"):
        parse_source("commonroad:/nonexistent/dir", 1, 0)


def test_load_many_equals_load_bit_for_bit(tmp_path, commonroad_dir):
    import jax

    from drivesim.scenarios.sources import ScenarioSource

    bad = tmp_path / "bad.xml"
    bad.write_text("<commonRoad>")
    src = MixedSource(
        [
            SyntheticSource(["highway", "merge", "intersection"], count=70, seed=3, first_id=5),
            CommonRoadSource([commonroad_dir, bad]),
        ]
    )
    positions = [69, 0, 70, 4, 74, 1, 68, 2, *range(5, 66, 3)]  # out of order, both parts, a bad file
    many = src.load_many(positions)
    assert len(many) == len(positions) and isinstance(many[4], ScenarioError) and "bad.xml" in str(many[4])
    for position, got in zip(positions, many, strict=True):
        if position == 74:
            continue
        want = src.load(position)
        assert (got.name, got.family, got.scenario_id) == (want.name, want.family, want.scenario_id)
        for a, b in zip(
            jax.tree_util.tree_leaves(got.scenario), jax.tree_util.tree_leaves(want.scenario), strict=True
        ):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert ScenarioSource.load_many(src, [0, 74])[0].name == src.load(0).name
    with pytest.raises(IndexError):
        src.load_many([0, 75])
    one = SyntheticSource(["merge"], count=150, seed=1)  # one family past a block: three calls
    for position, got in zip(range(150), one.load_many(range(150)), strict=True):
        if position % 37 == 0 or position in (63, 64, 128):
            want = one.load(position)
            for a, b in zip(
                jax.tree_util.tree_leaves(got.scenario), jax.tree_util.tree_leaves(want.scenario), strict=True
            ):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_bad_commonroad_file_in_source_is_a_scenario_error(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<commonRoad")
    src = CommonRoadSource([tmp_path])
    with pytest.raises(ScenarioError) as info:
        src.load(0)
    assert info.value.path == str(bad)
    err = pickle.loads(pickle.dumps(info.value))  # crosses process boundaries intact
    assert (err.path, err.field, err.reason) == (info.value.path, info.value.field, info.value.reason)


def test_validate_scenario_errors():
    sc = generate("highway", 2).scenario
    validate_scenario(sc)
    ag = sc.agents
    cases = {
        "agents.y": replace(sc, agents=replace(ag, y=np.where(np.arange(len(ag.y)) == 1, np.inf, ag.y))),
        "ego_index": replace(sc, ego_index=np.asarray(len(ag.x), np.int32)),
        "agents.valid": replace(sc, agents=replace(ag, valid=np.zeros_like(ag.valid))),
        "agents.speed": replace(sc, agents=replace(ag, speed=ag.speed[:-1])),
        "agents.route": replace(sc, agents=replace(ag, route=ag.route + 50)),
    }
    for field, bad in cases.items():
        with pytest.raises(ScenarioError) as info:
            validate_scenario(bad, where="somewhere.parquet#7")
        assert info.value.field == field and info.value.path == "somewhere.parquet"
        assert info.value.scenario_id == "7"
    big = generate("highway", 0).scenario
    from drivesim.scenarios.batching import pad_scenario

    with pytest.raises(ScenarioError, match="too many agents"):
        validate_scenario(pad_scenario(big, 129, 5, 2))


def test_cli_generate_import_info(tmp_path, commonroad_dir):
    runner = CliRunner()
    out = tmp_path / "gen.parquet"
    args = ["scenarios", "generate", "merge,intersection", "--count", "6", "--out", str(out), "--seed", "4"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    store = StoreSource(out)
    assert len(store) == 6 and store.load(1).family == "intersection"
    cr = tmp_path / "cr.parquet"
    bad = tmp_path / "bad.xml"
    bad.write_text("<notCommonRoad/>")
    res = runner.invoke(app, ["import", "commonroad", str(commonroad_dir), str(bad), "--out", str(cr)])
    assert res.exit_code == 1 and "4 scenarios" in res.output and "bad.xml" in res.output
    assert len(StoreSource(cr)) == 4
    res = runner.invoke(app, ["scenarios", "info", str(cr)])
    assert res.exit_code == 0 and "commonroad: 4 scenarios" in res.output
    classes = [line for line in res.output.splitlines() if line.startswith("  size class ")]
    assert classes and sum(int(line.rsplit(": ", 1)[1].split()[0]) for line in classes) == 4
    assert all("log " in line for line in classes)  # imported logs are replayed
    res = runner.invoke(app, ["scenarios", "info", str(out)])
    assert res.exit_code == 0 and "intersection: " in res.output and "merge: " in res.output
    assert "  size class " in res.output


def test_cli_help_text():
    runner = CliRunner()
    for args in (["import", "commonroad"], ["scenarios", "generate"], ["scenarios", "info"]):
        res = runner.invoke(app, [*args, "--help"])
        assert res.exit_code == 0 and len(res.output) > 100
    import typer.main

    group = typer.main.get_command(app)
    for name in ("import", "scenarios"):
        for sub in group.commands[name].commands.values():
            assert sub.help, sub.name
            assert all(p.help for p in sub.params if p.name != "help"), sub.name


def test_cli_imports_a_map_alone_with_its_generated_traffic(tmp_path):
    """A map without obstacles or planning problem goes into a store without a log and reads
    back as the same scenario (scenarios.map_traffic)."""
    from scenario_xml_cases import PROBLEM, document

    from drivesim.scenarios.commonroad import load_commonroad

    path = tmp_path / "map.xml"
    path.write_text(document("").replace(PROBLEM, ""))
    store = tmp_path / "map.parquet"
    res = CliRunner().invoke(app, ["import", "commonroad", str(path), "--out", str(store)])
    assert res.exit_code == 0, res.output
    assert "agents, no log" in res.output
    stored, direct = StoreSource(store).load(0).scenario, load_commonroad(path).scenario
    assert stored.log is None and int(stored.episode_length) == 80
    np.testing.assert_array_equal(stored.agents.x, direct.agents.x)
    np.testing.assert_array_equal(stored.agents.speed, direct.agents.speed)
