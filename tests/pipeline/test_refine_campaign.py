"""Refinement rounds run for real in one campaign directory: the red-light runner's simulated
boundary converges on the closed-form band edge, ids and names stay unique, a round
interrupted mid-way resumes to the same points, refined points are found for replay, and bad
options are one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pipeline_helpers import small_config

from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import read_config
from drivesim.pipeline.refinement import RefineSettings, refine_campaign
from drivesim.pipeline.results import query
from drivesim.scenarios.catalogue import param_sql

GRID = "catalogue:red_light_runner?tta=-2:1:4,speed=10:12:2"  # edges near tta = +-0.5 s


def edge(speed: float) -> float:
    """[s] the closed-form band edge (the boxes meet iff |tta| < edge), adv_speed 13.89 m/s."""
    return 3.15 / speed + 3.15 / 13.89


def _config(out):
    # batches of 4 in windows of 8 positions: rounds start inside planned windows and cross them
    return small_config(
        out, sources=(GRID,), policy="constant", num_steps=40, agents=None, batch_size=4, window_batches=2
    )


def _rows(directory) -> list[dict]:
    sql = (
        f"SELECT scenario_id, name, ego_collided, {param_sql('tta')} AS tta, {param_sql('speed')} AS speed "
        "FROM results ORDER BY scenario_id"
    )
    return query(directory, sql).to_pylist()


@pytest.fixture(scope="module")
def refined(tmp_path_factory):
    out = tmp_path_factory.mktemp("refined")
    run_campaign(_config(out))
    events = refine_campaign(out, RefineSettings(rounds=3), run_campaign)
    return out, events


def test_refined_boundary_converges_on_the_closed_form_band_edge(refined):
    out, events = refined
    firsts = [8, 8 + 9, 8 + 9 + events[1].points["red_light_runner"]]
    assert [(e.round, e.first) for e in events] == list(zip((1, 2, 3), firsts, strict=True))
    assert events[0].points == {"red_light_runner": 9}  # 2 split cells of 5 new points, 1 shared
    rows = _rows(out)
    total = 8 + sum(e.points["red_light_runner"] for e in events)
    assert [r["scenario_id"] for r in rows] == list(range(total))  # unique ids, none lost
    assert len({r["name"] for r in rows}) == total
    for speed in (10.0, 11.0, 12.0):  # the base speeds and the refined one between them
        for sign in (1.0, -1.0):
            side = sorted(
                (sign * r["tta"], r["ego_collided"])
                for r in rows
                if r["speed"] == speed and sign * r["tta"] >= 0
            )
            inside = max(t for t, hit in side if hit)
            outside = min(t for t, hit in side if not hit and t > inside)
            # the bracket is the grid spacing / 2^rounds wide and holds the edge (to within
            # that width: the engine checks overlaps every 0.1 s)
            assert outside - inside == pytest.approx(1.0 / 2**3)
            assert abs(0.5 * (inside + outside) - edge(speed)) < 1.0 / 2**3, (speed, sign, inside, outside)
    sources = read_config(out).sources
    assert sources[0] == GRID and [s.split("&round=")[1] for s in sources[1:]] == [
        f"{k}&first={f}" for k, f in zip((1, 2, 3), firsts, strict=True)
    ]


def test_refinement_rerun_resumes_and_a_new_round_count_extends(refined):
    out, _ = refined
    before = _rows(out)
    again = refine_campaign(out, RefineSettings(rounds=3), run_campaign)
    assert again == [] and _rows(out) == before  # nothing redone, nothing added
    with pytest.raises(ValueError, match="refined with ttc None"):
        refine_campaign(out, RefineSettings(rounds=3, ttc_s=1.0), run_campaign)
    # the run command of the base grid names the refined campaign in one line
    with pytest.raises(ValueError, match="grown by 3 more sources .* drivesim refine") as err:
        run_campaign(_config(out))
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_interrupted_round_resumes_to_the_same_points(refined, tmp_path):
    reference, _ = refined
    out = tmp_path / "killed"
    run_campaign(_config(out))
    calls = []

    class Killed(Exception):
        pass

    def run_killed_in_round_two(config):
        calls.append(len(config.sources))
        if len(config.sources) == 3:  # round 2: stop after its first batch

            def stop(event):
                if getattr(event, "kind", None) == "batch":
                    raise Killed

            return run_campaign(config, progress=stop)
        return run_campaign(config)

    with pytest.raises(Killed):
        refine_campaign(out, RefineSettings(rounds=3), run_killed_in_round_two)
    partial = _rows(out)
    assert 8 + 9 < len(partial) < 8 + 9 + 25  # round 2 partly done
    refine_campaign(out, RefineSettings(rounds=3), run_campaign)
    assert _rows(out) == _rows(reference)
    assert read_config(out).sources == read_config(reference).sources


def test_no_disagreeing_cell_adds_no_round(tmp_path):
    config = small_config(
        tmp_path,
        sources=("catalogue:red_light_runner?tta=-2:-1.5:2,speed=10",),
        policy="constant",
        num_steps=40,
        agents=None,
        batch_size=4,
    )
    run_campaign(config)
    assert refine_campaign(tmp_path, RefineSettings(rounds=2), run_campaign) == []
    assert read_config(tmp_path).sources == config.sources


def test_refined_points_are_found_for_replay(refined):
    from drivesim.report.replay import locate

    out, _ = refined
    rows = {r["scenario_id"]: r["name"] for r in _rows(out)}
    for scenario_id in (0, 7, 8, max(rows)):
        assert locate(out, scenario_id).name == rows[scenario_id]


def _drivesim(*args):
    code = "from drivesim.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_cli_bad_options_are_one_line_errors(refined, tmp_path):
    out, _ = refined
    for args, words in [
        (("--rounds", "0"), "--rounds 0: expected 1..10"),
        (("--ttc", "-1"), "--ttc -1.0: expected a positive number of seconds"),
        (("--rounds", "3", "--ttc", "2"), "was refined with ttc None (now 2.0)"),
    ]:
        bad = _drivesim("refine", str(out), *args)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        assert words in bad.stderr.splitlines()[-1]
    missing = _drivesim("refine", str(tmp_path / "none"))
    assert missing.returncode != 0 and len(missing.stderr.strip().splitlines()) == 1


def test_point_outcomes_per_policy_with_a_ttc_threshold(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from drivesim.pipeline import results
    from drivesim.pipeline.refinement import point_outcomes
    from drivesim.scenarios.catalogue import point_key

    def row(tta, policy, hit, ttc, status="ok"):
        name = f"red_light_runner?tta={tta:g},adv_speed=13.89,speed=10"
        return dict(
            scenario_id=int(tta * 10),
            family="red_light_runner",
            source="catalogue",
            name=name,
            policy_id=policy,
            status=status,
            ego_collided=hit,
            min_ttc_s=ttc,
        )

    rows = [row(0.0, 0, True, 0.0), row(0.0, 1, False, 1.5), row(1.0, 0, False, 3.0), row(1.0, 1, False, 9.0)]
    rows += [row(2.0, 0, None, None, status="failed"), row(2.0, 1, None, None, status="failed")]
    (tmp_path / "results").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=results.SCHEMA), tmp_path / "results" / "part-0.parquet")
    key = lambda tta: point_key([tta, 13.89, 10.0])  # noqa: E731
    assert point_outcomes(tmp_path, "red_light_runner", None) == {
        key(0.0): (True, False),
        key(1.0): (False, False),
        key(2.0): None,
    }
    assert point_outcomes(tmp_path, "red_light_runner", 2.0) == {
        key(0.0): (True, True),
        key(1.0): (False, False),
        key(2.0): None,
    }
