"""The scenario viewer: collision found from the boxes, strict JSON, and in a real headless
chromium: frames render and moving the slider moves the boxes."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from report_browser import _run

from drivesim.core.types import Trajectory
from drivesim.report.viewer import ego_ttc, render, viewer_data, write_page
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
