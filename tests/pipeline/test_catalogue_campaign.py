"""A real campaign over a catalogue grid: parameters reach the results so DuckDB groups by
them, the grid's collision pattern is the physical one, and a rerun resumes."""

from __future__ import annotations

from pipeline_helpers import small_config

from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.results import query
from drivesim.scenarios.catalogue import param_sql

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
    again = run_campaign(config)  # same spec: resumes, nothing left to do
    assert again.done == 10 and again.skipped == 10
