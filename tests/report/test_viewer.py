"""The scenario viewer: collision found from the boxes, strict JSON, road-user types in the
page data (original agent order, through a real campaign's replay too), lanes clipped to the
view, and in a real headless chromium: frames render, moving the slider moves the boxes,
pedestrians are discs and cyclists capsules with their legend and tooltips."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from report_browser import _run

from drivesim.core.road_users import CYCLIST_SIZE, PEDESTRIAN_SIZE
from drivesim.core.types import CYCLIST, PEDESTRIAN, Trajectory, replace
from drivesim.report.viewer import ego_ttc, page_data, render, viewer_data, write_page
from drivesim.scenarios.synthetic import FamilyConfig, generate

STEPS = 30


def _rear_end():
    """A real synthetic highway scenario whose ego is driven (by hand, in NumPy) into the
    agent ahead of it: the ego closes 20 m at 10 m/s relative speed."""
    scenario = generate("highway", 5, FamilyConfig(num_agents=8, seed=0)).scenario
    a = scenario.agents
    n, ego = a.x.shape[0], int(scenario.ego_index)
    other = next(i for i in range(n) if i != ego)
    heading = np.full((STEPS, n), float(a.heading[ego]))
    direction = np.array([np.cos(heading[0, 0]), np.sin(heading[0, 0])])
    start = np.array([a.x[ego], a.y[ego]]) + 20.0 * direction
    t = np.arange(1, STEPS + 1)[:, None] * 0.1
    x = np.tile(np.asarray(a.x, float), (STEPS, 1)) + 5.0 * t * direction[0]
    y = np.tile(np.asarray(a.y, float), (STEPS, 1)) + 5.0 * t * direction[1]
    x[:, other], y[:, other] = (
        start[0] + 5.0 * t[:, 0] * direction[0],
        start[1] + 5.0 * t[:, 0] * direction[1],
    )
    x[:, ego] = a.x[ego] + 15.0 * t[:, 0] * direction[0]
    y[:, ego] = a.y[ego] + 15.0 * t[:, 0] * direction[1]
    # move the remaining agents far away so only ``other`` can be hit
    for i in range(n):
        if i not in (ego, other):
            x[:, i] += 500.0 + 10 * i
    speed = np.full((STEPS, n), 5.0)
    speed[:, ego] = 15.0
    valid = np.tile(np.asarray(a.valid, bool), (STEPS, 1))
    traj = Trajectory(x=x, y=y, heading=heading, speed=speed, valid=valid)
    return scenario, traj, ego, other


def test_collision_and_hit_agent_found_from_boxes():
    scenario, traj, ego, other = _rear_end()
    data = viewer_data(scenario, traj)
    gap = 20.0 - (scenario.agents.length[ego] + scenario.agents.length[other]) / 2
    expected = int(np.ceil(gap / 1.0 - 1e-9))  # 10 m/s closing = 1 m per frame
    assert abs(data.collision_frame - expected) <= 1
    assert data.hit == other
    ttc = ego_ttc(data)
    assert ttc[1] == pytest.approx((gap - 1.0) / 10.0, rel=0.05)  # frame 1: 1 m closed
    assert ttc[data.collision_frame] == 0.0


def test_page_is_strict_json_and_escaped():
    scenario, traj, _, _ = _rear_end()
    html = render(scenario, traj, title="<script>alert(1)</script>", info={"x": float("nan")})
    payload = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
    data = json.loads(payload)  # strict JSON: NaN/Inf would not parse with parse_constant below
    json.loads(payload, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert len(data["frames"]["x"]) == STEPS + 1
    assert data["info"]["x"] is None
    assert "<script>alert(1)</script>" not in html


def _dom(chromium, url: str) -> str:
    proc = _run(chromium, ["--virtual-time-budget=3000", "--dump-dom", url])
    assert "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.slow
def test_viewer_in_chromium_slider_moves_boxes(chromium, tmp_path, artifacts_dir):
    scenario, traj, ego, other = _rear_end()
    page = write_page(render(scenario, traj, title="rear end"), tmp_path / "viewer.html")
    doms = {k: _dom(chromium, f"{page.as_uri()}#step={k}") for k in (0, 25)}
    for k, dom in doms.items():
        errors = re.search(r'<pre id="js-errors">(.*?)</pre>', dom, re.S).group(1).strip()
        assert errors == ""
        body = re.search(r"<body([^>]*)>", dom).group(1)
        assert (
            'data-ready="ok"' in body and f'data-step="{k}"' in body and f'data-frames="{STEPS + 1}"' in body
        )
    points = {
        k: re.search(rf'<polygon id="agent-{ego}"[^>]*points="([^"]+)"', dom).group(1)
        for k, dom in doms.items()
    }
    assert points[0] != points[25]  # the slider moved the ego's box
    ego_x = {k: np.mean([float(p.split(",")[0]) for p in points[k].split()]) for k in points}
    assert ego_x[0] != ego_x[25]
    assert f'id="agent-{other}" class="agent hit"' in doms[0]
    crash = {k: re.search(r'<circle id="crash"[^>]*display="(\w+)"', dom).group(1) for k, dom in doms.items()}
    assert crash == {0: "none", 25: "inline"}
    write_page(page.read_text(), artifacts_dir / "viewer.html")


def _payload(html: str) -> dict:
    return json.loads(
        re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1)
    )


def _with_kinds(scenario, kinds: dict[int, int]):
    """``scenario`` with the agents of ``kinds`` {slot: kind} made pedestrians / cyclists of
    their default size."""
    a = scenario.agents
    kind, length, width = (np.array(v) for v in (a.kind, a.length, a.width))
    for i, k in kinds.items():
        kind[i] = k
        length[i], width[i] = PEDESTRIAN_SIZE if k == PEDESTRIAN else CYCLIST_SIZE
    return replace(scenario, agents=replace(a, kind=kind, length=length, width=width))


def _mixed():
    """The rear-end scenario with one pedestrian and one cyclist (neither the ego nor the agent
    it hits): (scenario, trajectory, ego, other, pedestrian slot, cyclist slot)."""
    scenario, traj, ego, other = _rear_end()
    ped, cyc = [i for i in range(scenario.agents.x.shape[0]) if i not in (ego, other)][:2]
    return _with_kinds(scenario, {ped: PEDESTRIAN, cyc: CYCLIST}), traj, ego, other, ped, cyc


def test_page_data_carries_kinds_in_agent_order():
    scenario, traj, ego, other, ped, cyc = _mixed()
    expected = [0] * scenario.agents.x.shape[0]
    expected[ped], expected[cyc] = 1, 2
    data = _payload(render(scenario, traj))
    assert data["kind"] == expected and data["kind_names"] == ["vehicle", "pedestrian", "cyclist"]
    assert data["kinds_present"] == ["vehicle", "pedestrian", "cyclist"]
    # only the types of agents valid at some frame are listed
    valid = np.array(traj.valid)
    valid[:, cyc] = False
    gone = replace(
        scenario,
        agents=replace(
            scenario.agents, valid=np.asarray(scenario.agents.valid) & (np.arange(len(expected)) != cyc)
        ),
    )
    data = page_data(gone, viewer_data(gone, replace(traj, valid=valid)))
    assert data["kind"] == expected and data["kinds_present"] == ["vehicle", "pedestrian"]
    plain, traj, _, _ = _rear_end()
    assert page_data(plain, viewer_data(plain, traj))["kinds_present"] == ["vehicle"]
    bad = replace(
        scenario, agents=replace(scenario.agents, kind=np.where(np.arange(len(expected)) == ped, 7, expected))
    )
    with pytest.raises(
        ValueError, match=rf"agents.kind: agent {ped} has road-user type 7, not one of 0 vehicle"
    ):
        viewer_data(bad, traj)


def test_long_straight_lane_crossing_the_view_is_drawn():
    # a two-point lane whose ends lie 1 km outside the view still crosses it
    scenario, traj, _, _ = _rear_end()
    centers = np.array(scenario.road.centers, float)
    y = float(scenario.agents.y[int(scenario.ego_index)])
    centers[0] = [-1000.0, y]
    centers[0, 1:] = [1000.0, y]
    road = replace(scenario.road, centers=centers)
    data = page_data(replace(scenario, road=road), viewer_data(scenario, traj))
    assert {
        "c": [[-1000.0, round(y, 2)], [1000.0, round(y, 2)]],
        "w": round(float(road.widths[0]), 2),
    } in data["lanes"]


@pytest.mark.slow
def test_viewer_in_chromium_draws_pedestrians_and_cyclists(chromium, tmp_path, artifacts_dir):
    scenario, traj, ego, other, ped, cyc = _mixed()
    scenario = _with_kinds(scenario, {ego: CYCLIST})  # a cyclist ego stays the ego
    html = render(scenario, traj, title="road users")
    data = _payload(html)
    page = write_page(html, tmp_path / "viewer.html")
    k = 10
    dom = _dom(chromium, f"{page.as_uri()}#step={k}")
    assert re.search(r'<pre id="js-errors">(.*?)</pre>', dom, re.S).group(1).strip() == ""
    assert f'data-step="{k}"' in dom
    disc = re.search(rf'<circle id="agent-{ped}"([^>]*)>(.*?)</circle>', dom, re.S)
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', disc.group(1)))
    assert attrs["class"] == "agent" and attrs["data-kind"] == "pedestrian"
    assert float(attrs["r"]) == max(PEDESTRIAN_SIZE) / 2
    b = data["bounds"]
    assert float(attrs["cx"]) == pytest.approx(data["frames"]["x"][k][ped] - b[0], abs=0.006)
    assert float(attrs["cy"]) == pytest.approx(b[3] - data["frames"]["y"][k][ped], abs=0.006)
    assert f"<title>agent {ped} · pedestrian</title>" in disc.group(2)
    for i, cls, kind, corners, title in (
        (cyc, "agent", "cyclist", 6, f"agent {cyc} · cyclist"),
        (ego, "agent ego", "cyclist", 6, f"agent {ego} · cyclist · ego"),
        (other, "agent hit", "vehicle", 4, f"agent {other} · vehicle · hit by the ego"),
    ):
        shape = re.search(
            rf'<polygon id="agent-{i}" class="{cls}" data-kind="{kind}"([^>]*)>(.*?)</polygon>', dom, re.S
        )
        assert shape is not None, (i, cls, kind)
        points = re.search(r'points="([^"]+)"', shape.group(1)).group(1).split()
        assert len(points) == corners and f"<title>{title}</title>" in shape.group(2)
        if kind == "cyclist":  # the capsule's first point is its front tip, half a length ahead
            x, y, h = (data["frames"][f][k][i] for f in "xyh")
            tip = (x + data["length"][i] / 2 * np.cos(h) - b[0], b[3] - y - data["length"][i] / 2 * np.sin(h))
            assert [float(v) for v in points[0].split(",")] == pytest.approx(tip, abs=0.006)
    assert dom.count('class="halo"') == 3  # the pedestrian and both cyclists
    legend = re.search(r'<p class="legend" id="kinds">(.*?)</p>', dom, re.S).group(1)
    names = re.findall(r"</svg>(\w+) \((\w+)\)</span>", legend)
    assert names == [("vehicle", "blue"), ("pedestrian", "green"), ("cyclist", "purple")]
    write_page(html, artifacts_dir / "viewer_road_users.html")


@pytest.mark.slow
def test_replayed_campaign_page_carries_the_stored_kinds(tmp_path):
    """A store scenario with a pedestrian and a cyclist, run as a real campaign and shown
    with ``drivesim show``: the page's kinds are the stored ones, in the stored agent order
    (the shapes of tests/pipeline's small campaigns: 16-agent highway, 10 steps, batches of 8)."""
    from typer.testing import CliRunner

    from drivesim.cli import app
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig
    from drivesim.scenarios.store import write_store

    record = generate("highway", 5, FamilyConfig(num_agents=16, steps=10))
    n, ego = record.scenario.agents.x.shape[0], int(record.scenario.ego_index)
    others = [i for i in range(n) if i != ego]
    ped, cyc = others[-1], others[len(others) // 2]  # away from the first slots
    record = replace(record, scenario=_with_kinds(record.scenario, {ped: PEDESTRIAN, cyc: CYCLIST}))
    store = tmp_path / "mixed.parquet"
    write_store(store, [record])
    out = tmp_path / "camp"
    config = CampaignConfig(
        sources=(f"store:{store}",), num_steps=10, batch_size=8, window_batches=3, out=str(out)
    )
    assert run_campaign(config).done == 1
    page = tmp_path / "view.html"
    result = CliRunner().invoke(
        app, ["show", str(out), "--scenario", str(record.scenario_id), "--out", str(page)]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    data = _payload(page.read_text(encoding="utf-8"))
    stored = np.asarray(record.scenario.agents.kind).tolist()
    assert stored[ped] == PEDESTRIAN and stored[cyc] == CYCLIST
    assert data["kind"][:n] == stored and set(data["kind"][n:]) <= {0}  # padding slots after
    x0 = np.round(np.asarray(record.scenario.agents.x, float), 2).tolist()
    assert data["frames"]["x"][0][:n] == x0  # the kinds sit beside their own agents
    assert data["kinds_present"] == ["vehicle", "pedestrian", "cyclist"]
    assert data["length"][ped] == round(PEDESTRIAN_SIZE[0], 2) and data["width"][cyc] == round(
        CYCLIST_SIZE[1], 2
    )
