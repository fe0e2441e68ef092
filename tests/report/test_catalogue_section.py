"""The dashboard's Catalogue section: heatmaps equal to a direct computation from the results
of a real catalogue campaign; boundary cases, pooling, bins and line charts on a constructed
results table; no section without catalogue rows; every plot drawn in chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from report_browser import render

from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import CampaignConfig, write_config
from drivesim.report.catalogue import BINS, load_catalogue
from drivesim.report.dashboard import write_dashboard
from drivesim.report.replay import locate
from drivesim.scenarios.catalogue import FAMILIES, point_name

SPEC = "catalogue:lead_brake?gap=2:40:3,decel=3:9:3"
SPEC_SCRIPT = re.compile(r'<script type="application/json" id="(plot-\d+)-spec">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def grid_campaign(tmp_path_factory) -> Path:
    """A real campaign: lead_brake over 3 gaps × 3 decelerations, constant ego, 40 steps, in
    batches of 8: the program of tests/pipeline/test_catalogue_campaign.py, so a run compiles
    it once for both (the run's persistent compilation cache)."""
    out = tmp_path_factory.mktemp("catalogue") / "grid"
    config = CampaignConfig(
        sources=(SPEC,), policy="constant", num_steps=40, batch_size=8, window_batches=3, out=str(out)
    )
    assert run_campaign(config).done == 9
    return out


def _figures(html: str) -> dict[str, dict]:
    """Plot specs of a page by title text."""
    specs = (json.loads(body) for _, body in SPEC_SCRIPT.findall(html))
    return {spec["layout"]["title"]["text"]: spec for spec in specs}


def _param(names: list[str], name: str) -> np.ndarray:
    return np.array([float(re.search(rf"[?,]{name}=([^,]+)", n).group(1)) for n in names])


def test_grid_heatmaps_equal_the_results(grid_campaign, tmp_path):
    page = write_dashboard(grid_campaign, tmp_path / "dash.html")
    html = page.read_text(encoding="utf-8")
    assert '<section id="catalogue"><h2>Catalogue</h2>' in html and '<a href="#catalogue">' in html
    table = results.results_table(grid_campaign).to_pylist()
    names = [r["name"] for r in table]
    gap, decel = _param(names, "gap"), _param(names, "decel")
    hit = np.array([r["ego_collided"] for r in table], dtype=float)
    ttc = np.array([r["min_ttc_s"] for r in table], dtype=float)
    gaps, decels = np.unique(gap), np.unique(decel)
    expected_rate = [[hit[(decel == d) & (gap == g)].mean() for g in gaps] for d in decels]
    figures = _figures(html)
    rate = figures["lead_brake: collision rate over gap × decel"]["data"][0]
    assert rate["type"] == "heatmap" and rate["x"] == gaps.tolist() and rate["y"] == decels.tolist()
    assert rate["z"] == expected_rate
    assert 0 < np.mean(expected_rate) < 1  # the grid crosses the boundary
    median = figures["lead_brake: median min TTC (s) over gap × decel"]["data"][0]["z"]
    for j, d in enumerate(decels):
        for i, g in enumerate(gaps):
            cell = ttc[(decel == d) & (gap == g) & np.isfinite(ttc)]
            assert median[j][i] == (pytest.approx(np.median(cell)) if cell.size else None)
    # every listed boundary case collided and names a neighbour that did not
    (fmap,) = load_catalogue(grid_campaign)
    hits = {(g, d): h for g, d, h in zip(gap, decel, hit, strict=True)}
    for case in fmap.boundary:
        g, d = case["params"]["gap"], case["params"]["decel"]
        assert hits[(g, d)] == 1.0
        along, values = case["safe"][0].split("=")
        safe = [float(v) for v in values.split(" and ")]
        assert all(hits[(v, d) if along == "gap" else (g, v)] == 0.0 for v in safe)
    assert fmap.boundary and f"--scenario {fmap.boundary[0]['scenario_id']}" in html


def _row(family: str, values: dict[str, float], sid: int, policy: int, hit: bool, ttc: float) -> dict:
    params = {p.name: values.get(p.name, p.default) for p in FAMILIES[family].params}
    return dict(
        scenario_id=sid,
        family=family,
        source="catalogue",
        name=point_name(family, params),
        num_agents=2,
        size_class=8,
        policy_id=policy,
        policy=("careful", "bold")[policy],
        status="ok",
        ego_collided=hit,
        min_ttc_s=ttc,
    )


def _brake_hit(policy: int, gap: float, decel: float, t_brake: float) -> bool:
    """The constructed pattern: collides below a gap that grows with decel (more for the bold
    policy and the earlier brake)."""
    return gap < 5 * decel + 10 * policy - 5 * (t_brake - 1)


GAPS, DECELS, T_BRAKES = (2.0, 10.0, 20.0, 30.0), (3.0, 6.0, 9.0), (1.0, 2.0)


def _constructed_rows(rng: np.random.Generator) -> list[dict]:
    rows, sid = [], 0
    for gap in GAPS:
        for decel in DECELS:
            for t_brake in T_BRAKES:
                for policy in (0, 1):
                    hit = _brake_hit(policy, gap, decel, t_brake)
                    values = dict(gap=gap, decel=decel, t_brake=t_brake)
                    rows.append(_row("lead_brake", values, sid, policy, hit, 0.0 if hit else gap / 10))
                sid += 1
    for tta in (-2.0, -1.0, 0.0, 1.0, 2.0):
        rows.append(_row("crossing_pedestrian", dict(tta=tta), sid, 0, abs(tta) < 1.5, 1.0 + tta))
        sid += 1
    for _ in range(60):
        values = dict(gap=round(rng.uniform(5, 40), 3), dv=round(rng.uniform(-10, 0), 3))
        rows.append(_row("cut_in", values, sid, 0, values["gap"] < 15, values["gap"] / 5))
        sid += 1
    failed = _row("cut_in", dict(gap=99.0), sid, 0, True, 0.0)
    rows.append(failed | dict(status="failed", ego_collided=None, min_ttc_s=None))
    rows.append(_row("lead_brake", {}, sid + 1, 0, True, 0.0) | dict(source="synthetic", family="highway"))
    return rows


def _write_results(root: Path, rows: list[dict]) -> Path:
    (root / "results").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=results.SCHEMA), root / "results" / "part-00000000.parquet"
    )
    return root


@pytest.fixture(scope="module")
def constructed(tmp_path_factory) -> tuple[Path, list[dict]]:
    rows = _constructed_rows(np.random.default_rng(0))
    return _write_results(tmp_path_factory.mktemp("constructed") / "camp", rows), rows


def _expected_boundary() -> set[tuple]:
    """(policy, gap, decel, t_brake) of every collided point with a safe grid neighbour."""
    axes = {"gap": GAPS, "decel": DECELS, "t_brake": T_BRAKES}
    found = set()
    for policy in (0, 1):
        for point in ((g, d, t) for g in GAPS for d in DECELS for t in T_BRAKES):
            if not _brake_hit(policy, *point):
                continue
            for k, values in enumerate(axes.values()):
                i = values.index(point[k])
                for j in (i - 1, i + 1):
                    if 0 <= j < len(values):
                        other = point[:k] + (values[j],) + point[k + 1 :]
                        if not _brake_hit(policy, *other):
                            found.add((policy, *point))
    return found


def test_constructed_boundary_pooling_bins_and_lines(constructed):
    root, rows = constructed
    maps = {m.family: m for m in load_catalogue(root)}
    assert sorted(maps) == ["crossing_pedestrian", "cut_in", "lead_brake"]  # not highway
    brake = maps["lead_brake"]
    assert [a.name for a in brake.axes] == ["gap", "decel"] and brake.pooled == ("t_brake",)
    assert brake.policies == ("careful [0]", "bold [1]") and brake.count.shape == (2, 3, 4)
    for policy in (0, 1):  # pooled over t_brake: the mean of its two values
        want = [[np.mean([_brake_hit(policy, g, d, t) for t in T_BRAKES]) for g in GAPS] for d in DECELS]
        assert brake.collision_rate[policy].tolist() == want
    listed = {
        (c["policy_id"], c["params"]["gap"], c["params"]["decel"], c["params"]["t_brake"])
        for c in brake.boundary
    }
    assert brake.boundary_total == len(_expected_boundary()) <= 20 and listed == _expected_boundary()
    # careful, gap 10, decel 3, t_brake 1: collides (10 < 15); gap 20 and t_brake 2 do not
    cases = {
        (c["policy_id"], c["params"]["gap"], c["params"]["decel"], c["params"]["t_brake"]): c
        for c in brake.boundary
    }
    assert brake.boundary_total == len(_expected_boundary()) <= 20 and set(cases) == _expected_boundary()
    assert cases[(0, 10.0, 3.0, 1.0)]["safe"] == ["gap=20", "t_brake=2"]
    cut_in = maps["cut_in"]
    assert all(a.binned for a in cut_in.axes) and cut_in.count.sum() == 60 and not cut_in.boundary
    gap = np.array([r["gap"] for r in _cut_in_values(rows)])
    lo, width = gap.min(), (gap.max() - gap.min()) / BINS
    bins = np.minimum(((gap - lo) / width).astype(int), BINS - 1)
    assert cut_in.count[0].sum(axis=0).tolist() == np.bincount(bins, minlength=BINS).tolist()
    walk = maps["crossing_pedestrian"]
    assert len(walk.axes) == 1 and walk.collision_rate[0, 0].tolist() == [0, 1, 1, 1, 0]
    assert [c["params"]["tta"] for c in walk.boundary] == [-1.0, 1.0]


def test_a_grid_axis_too_long_to_show_is_binned_and_keeps_its_boundary(tmp_path):
    # cut_out over 120 gaps (more than MAX_LEVELS values: shown in bins) x 2 speeds; collides
    # below 30 m at 10 m/s and below 60 m at 20 m/s
    gaps, rows = np.arange(8.0, 128.0), []
    for k, (gap, speed) in enumerate((g, v) for g in gaps for v in (10.0, 20.0)):
        hit = gap < 3 * speed
        rows.append(_row("cut_out", dict(gap=gap, speed=speed), k, 0, hit, 1.0))
    fmap = load_catalogue(_write_results(tmp_path / "camp", rows))[0]
    gap_axis = next(a for a in fmap.axes if a.name == "gap")
    assert len(gap_axis.levels) == BINS and gap_axis.binned and gap_axis.grid
    # along gap: 29 m at 10 m/s, 59 m at 20 m/s; along speed: 30..59 m at 20 m/s (10 m/s safe)
    assert fmap.boundary_total == 1 + 30
    assert all(c["params"]["gap"] in (29.0, 59.0) or c["params"]["speed"] == 20.0 for c in fmap.boundary)


def _cut_in_values(rows: list[dict]) -> list[dict]:
    found = []
    for r in rows:
        if r["family"] == "cut_in" and r["status"] == "ok":
            found.append({k: float(v) for k, v in re.findall(r"(\w+)=([^,]+)", r["name"].partition("?")[2])})
    return found


def test_no_catalogue_rows_no_section(tmp_path):
    rows = [_row("lead_brake", {}, 0, 0, False, 1.0) | dict(source="synthetic", family="highway")]
    html = write_dashboard(_write_results(tmp_path / "camp", rows)).read_text(encoding="utf-8")
    assert 'id="catalogue"' not in html and "Campaign outcomes" in html


@pytest.mark.slow
def test_catalogue_section_renders_in_chromium(constructed, chromium, tmp_path):
    page = write_dashboard(constructed[0], tmp_path / "dash.html")
    html = page.read_text(encoding="utf-8")
    kinds = {title.partition(":")[0]: spec["data"][0]["type"] for title, spec in _figures(html).items()}
    assert kinds["lead_brake"] == kinds["cut_in"] == "heatmap" and kinds["crossing_pedestrian"] == "scatter"
    assert html.count('class="data boundary"') == 2 and "sampled points have no grid neighbours" in html
    rendered = render(chromium, page.as_uri())
    assert rendered.errors == "", rendered.errors
    assert len(rendered.plots) == html.count('<div class="plot"') == int(rendered.plots_done)
    for plot_id, attrs in rendered.plots.items():
        assert attrs.get("data-rendered") == "ok" and int(attrs["data-points"]) >= 1, (plot_id, attrs)


def test_replay_finds_the_catalogue_scenario_of_its_own_source(tmp_path):
    # two catalogue sources number their scenarios alike: id 1 is gap 20 of lead_brake and
    # gap 10 of cut_in; the results row's name decides which one is replayed
    specs = ("catalogue:lead_brake?gap=10:30:3", "catalogue:cut_in?gap=5:15:3")
    root = tmp_path / "camp"
    root.mkdir()
    write_config(CampaignConfig(sources=specs, num_steps=20, out=str(root)), root)
    _write_results(root, [_row("cut_in", dict(gap=10.0), 1, 0, True, 0.0)])
    record = locate(root, 1)
    assert record.family == "cut_in" and record.name.startswith("cut_in?gap=10,")
    with pytest.raises(ValueError, match="scenario id 7 is not in the campaign's sources"):
        locate(root, 7)


RUNNER_GRID = "catalogue:red_light_runner?tta=-2:2:5,speed=10:20:3"


def _runner_hit(tta: float, speed: float) -> bool:
    """The red-light runner's closed-form band at adv_speed 13.89 m/s."""
    return abs(tta) < 3.15 / speed + 3.15 / 13.89


@pytest.fixture(scope="module")
def refined_campaign(tmp_path_factory) -> tuple[Path, list[dict]]:
    """Results of the runner's 5 x 3 grid and two refinement rounds (outcomes from the closed
    form), with the campaign.toml that numbers the rounds."""
    from drivesim.scenarios.catalogue import family, parse_grid
    from drivesim.scenarios.catalogue.refine import next_points, point_key, round_spec

    fam = family("red_light_runner")
    grid = parse_grid(fam.name, fam.params, RUNNER_GRID.partition("?")[2])
    points = [grid.point(p) for p in range(len(grid))]
    specs, outcomes = (
        [RUNNER_GRID],
        {point_key(p.values()): _runner_hit(p["tta"], p["speed"]) for p in points},
    )
    for number in (1, 2):
        new = next_points(grid, outcomes)
        specs.append(round_spec(fam.name, new, number, len(points), None))
        points += new
        outcomes |= {point_key(p.values()): _runner_hit(p["tta"], p["speed"]) for p in new}
    rows = [
        _row(fam.name, p, sid, 0, _runner_hit(p["tta"], p["speed"]), 1.0) | dict(policy="constant")
        for sid, p in enumerate(points)
    ]
    root = _write_results(tmp_path_factory.mktemp("refined") / "camp", rows)
    write_config(CampaignConfig(sources=tuple(specs), num_steps=20, out=str(root)), root)
    return root, rows


def test_refined_family_maps_its_base_grid_and_lists_the_finest_boundary(refined_campaign, tmp_path):
    root, rows = refined_campaign
    (fmap,) = load_catalogue(root)
    assert [a.levels for a in fmap.axes] == [(-2.0, -1.0, 0.0, 1.0, 2.0), (10.0, 15.0, 20.0)]
    assert fmap.count.sum() == 15 and fmap.refined is not None and fmap.refined.rounds == 2
    assert fmap.refined.points == len(rows) - 15 > 0
    refined = rows[15:]
    assert list(fmap.refined.x[0]) == [float(re.search(r"tta=([^,]+)", r["name"]).group(1)) for r in refined]
    assert list(fmap.refined.hit[0]) == [r["ego_collided"] for r in refined]
    # boundary over every point, the finest step first: a quarter of the tta spacing
    first = fmap.boundary[0]
    assert first["scenario_id"] >= 15 and _runner_hit(first["params"]["tta"], first["params"]["speed"])
    along, values = first["safe"][0].split("=")
    assert along == "tta" and abs(float(values) - first["params"]["tta"]) == pytest.approx(0.25)
    html = write_dashboard(root, tmp_path / "dash.html").read_text(encoding="utf-8")
    rate = _figures(html)["red_light_runner: collision rate over tta × speed"]["data"]
    assert [t["type"] for t in rate] == ["heatmap", "scatter"] and len(rate[1]["x"]) == fmap.refined.points
    assert "Refined near the boundary in 2 rounds" in html and "the finest first" in html


@pytest.mark.slow
def test_refined_markers_render_in_chromium(refined_campaign, chromium, tmp_path):
    page = write_dashboard(refined_campaign[0], tmp_path / "dash.html")
    rendered = render(chromium, page.as_uri())
    assert rendered.errors == "", rendered.errors
    assert rendered.plots and all(a.get("data-rendered") == "ok" for a in rendered.plots.values())
