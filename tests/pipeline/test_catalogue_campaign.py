"""A real campaign over a catalogue grid: parameters reach the results so DuckDB groups by
them, the grid's collision pattern is the physical one, and a rerun resumes."""

from __future__ import annotations

import subprocess
import sys

from pipeline_helpers import small_config

from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.results import query
from drivesim.scenarios.catalogue import param_sql
from drivesim.scenarios.catalogue.source import with_grid

SPEC = "catalogue:lead_brake?gap=2:40:5,decel=3:9:2"


def test_catalogue_grid_campaign_groups_by_parameters(tmp_path):
    config = small_config(tmp_path / "c", sources=(SPEC,), policy="constant", num_steps=40, agents=None)
    result = run_campaign(config)
    assert result.done == 10 and result.failed == 0
    sql = (
        f"SELECT {param_sql('decel')} AS decel, {param_sql('gap')} AS gap, bool_or(ego_collided) AS hit, "
        "count(*) AS n, min(family) AS family FROM results GROUP BY decel, gap ORDER BY decel, gap"
    )
    rows = query(tmp_path / "c", sql).to_pylist()
    assert [(r["decel"], r["gap"]) for r in rows] == [
        (d, g) for d in (3.0, 9.0) for g in (2.0, 11.5, 21.0, 30.5, 40.0)
    ]
    assert all(r["n"] == 1 and r["family"] == "lead_brake" for r in rows)
    for decel in (3.0, 9.0):
        hits = [r["hit"] for r in rows if r["decel"] == decel]
        assert hits[0] and not hits[-1]  # 2 m collides within 4 s, 40 m does not
        assert hits == sorted(hits, reverse=True)  # one boundary: collisions below a gap
    # the harder brake collides at a larger gap (its boundary is further out)
    safe = {d: min(r["gap"] for r in rows if r["decel"] == d and not r["hit"]) for d in (3.0, 9.0)}
    assert safe[9.0] > safe[3.0]
    # the view's typed params map gives the same values as the names
    typed = query(
        tmp_path / "c",
        "SELECT params['decel'] AS decel, params['gap'] AS gap, typeof(params['gap']) AS t, "
        "bool_or(ego_collided) AS hit FROM results GROUP BY ALL ORDER BY decel, gap",
    ).to_pylist()
    assert [(r["decel"], r["gap"], r["hit"]) for r in typed] == [
        (r["decel"], r["gap"], r["hit"]) for r in rows
    ]
    assert {r["t"] for r in typed} == {"DOUBLE"}
    again = run_campaign(config)  # same spec: resumes, nothing left to do
    assert again.done == 10 and again.skipped == 10


def _drivesim(*args):
    code = "from drivesim.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_cli_rejects_bad_catalogue_specs_in_one_line(tmp_path):
    out = str(tmp_path / "c")
    bad = _drivesim("run", "--source", "catalogue:cut_in", "--grid", "gap=500", "--out", out)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert "catalogue cut_in: parameter gap=500 outside [0.5, 100] m" in bad.stderr.splitlines()[-1]
    lonely = _drivesim("run", "--source", "synthetic:highway", "--grid", "gap=5:40:8", "--out", out)
    assert lonely.returncode == 2 and "needs a --source catalogue:FAMILY" in lonely.stderr
    assert not (tmp_path / "c").exists()  # nothing written


def test_with_grid_fills_only_catalogue_specs_without_a_grid():
    specs = ("synthetic:highway", "catalogue:cut_in", "catalogue:lead_brake?gap=5")
    assert with_grid(specs, "gap=1:2:2") == (
        "synthetic:highway",
        "catalogue:cut_in?gap=1:2:2",
        "catalogue:lead_brake?gap=5",
    )


def test_road_user_columns_reach_results_and_summary(tmp_path):
    """cyclist_ahead over its lateral offset: the constant-speed ego hits the cyclist iff
    |lat_offset| < 1.2 m; the per-type columns and the summary's road-user figures say so."""
    from drivesim.pipeline.summary import campaign_summary, road_users_table

    spec = "catalogue:cyclist_ahead?lat_offset=-0.5:1.5:5"
    config = small_config(tmp_path / "c", sources=(spec,), policy="constant", num_steps=40, agents=None)
    assert run_campaign(config).done == 5
    sql = (
        f"SELECT {param_sql('lat_offset')} AS lat_offset, ego_collided, collided_with_kind, "
        "cyclists_collided, pedestrians_collided FROM results ORDER BY lat_offset"
    )
    rows = query(tmp_path / "c", sql).to_pylist()
    assert [r["lat_offset"] for r in rows] == [-0.5, 0.0, 0.5, 1.0, 1.5]
    for r in rows:
        hit = abs(r["lat_offset"]) < 1.2
        assert r["ego_collided"] == hit and r["collided_with_kind"] == (2 if hit else -1)
        assert r["cyclists_collided"] == int(hit) and r["pedestrians_collided"] == 0
    (figures,) = campaign_summary(tmp_path / "c")["road_users"]
    assert figures["ego_hit_cyclist_rate"] == 0.8 and figures["cyclists_collided"] == 4
    assert figures["ego_hit_pedestrian_rate"] == 0.0 and figures["pedestrians_collided"] == 0
    assert road_users_table({"road_users": [figures]}) is not None
