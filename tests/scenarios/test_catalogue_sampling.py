"""Random sampling of a catalogue family (``NAME=LO:HI,...&samples=N``): the same point at a
position whatever the order of loading, within range, exact in its name (its one-line errors
are in test_catalogue.py's table of bad specs). Host only: nothing is simulated."""

from __future__ import annotations

import duckdb
import numpy as np

from drivesim.scenarios.catalogue import CatalogueSource, Sampling, param_sql
from drivesim.scenarios.registry import SourceContext, check_spec, open_spec

SPEC = "cut_in?gap=5:40,dv=-10:0&samples=500"


def _points(source: CatalogueSource, positions) -> list[dict[str, float]]:
    return [source.grid.point(p) for p in positions]


def test_position_decides_the_point_whatever_the_order():
    ahead = CatalogueSource(SPEC, seed=7)
    assert isinstance(ahead.grid, Sampling) and len(ahead) == 500
    forward = _points(ahead, range(500))
    backward = _points(CatalogueSource(SPEC, seed=7), range(499, -1, -1))[::-1]
    assert forward == backward
    # the spec's order of parameters does not matter; the seed does
    assert _points(CatalogueSource("cut_in?dv=-10:0,gap=5:40&samples=500", seed=7), [3, 250]) == [
        forward[3],
        forward[250],
    ]
    other = _points(CatalogueSource(SPEC, seed=8), range(10))
    assert all(a["gap"] != b["gap"] for a, b in zip(forward, other, strict=False))
    # sampling one more parameter leaves the others' draws as they were
    more = _points(CatalogueSource("cut_in?gap=5:40,dv=-10:0,lateral=1:3&samples=500", seed=7), range(20))
    assert [p["gap"] for p in more] == [p["gap"] for p in forward[:20]]
    assert len({p["lateral"] for p in more}) == 20


def test_samples_are_in_range_spread_and_exact_in_their_name():
    source = CatalogueSource(SPEC, seed=0)
    points = _points(source, range(500))
    gap = np.array([p["gap"] for p in points])
    dv = np.array([p["dv"] for p in points])
    assert gap.min() >= 5.0 and gap.max() <= 40.0 and dv.min() >= -10.0 and dv.max() <= 0.0
    assert abs(gap.mean() - 22.5) < 2.0 and np.histogram(gap, bins=5, range=(5, 40))[0].min() > 70
    assert abs(np.corrcoef(gap, dv)[0, 1]) < 0.15
    assert {p["lateral"] for p in points} == {2.0} and {p["speed"] for p in points} == {20.0}
    record = source.load(17)
    assert record.scenario_id == 17 and record.family == "cut_in" and record.source == "catalogue"
    names = [source.load(p).name for p in range(0, 500, 50)]
    read = duckdb.sql(
        f"SELECT {param_sql('gap')} AS gap, {param_sql('dv')} AS dv FROM (SELECT unnest(?) AS name)",
        params=[names],
    ).fetchall()
    assert read == [(points[p]["gap"], points[p]["dv"]) for p in range(0, 500, 50)]
    assert "500 samples (gap 5..40, dv -10..0), seed 0" in source.describe()


def test_bounds_with_more_digits_stay_inside_the_range():
    source = CatalogueSource("lead_brake?gap=5.1234549:5.1234999&samples=200")
    gaps = [p["gap"] for p in _points(source, range(200))]
    assert min(gaps) >= 5.1234549 and max(gaps) <= 5.1234999
    assert all(float(f"{g:g}") == g for g in gaps)  # the name's %g reads back the value


def test_registry_opens_with_the_campaign_seed():
    spec = "catalogue:lead_brake?gap=2:40,decel=1:9&samples=30"
    check_spec(spec)
    opened = open_spec(spec, SourceContext(seed=11))
    assert len(opened) == 30 and opened.grid.seed == 11
    assert opened.grid.point(4) == CatalogueSource(spec.partition(":")[2], seed=11).grid.point(4)
