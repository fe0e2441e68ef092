"""CommonRoad traffic lights on a real file (USA_Peach-4_8_T-1, CommonRoad 2020a): the plan
read independently from the XML, the stop line at the end of the referencing lanelet, IDM
agents held on red, and one-line errors for bad light data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import numpy as np
import pytest

from drivesim.core import SimConfig, idm_policy, simulate_trajectory
from drivesim.core.search_plan import SearchPlan
from drivesim.core.signals import RED, phase
from drivesim.scenarios import geometry, pad_and_stack
from drivesim.scenarios.commonroad import ImportConfig, ScenarioError, load_commonroad

FILE = "USA_Peach-4_8_T-1.xml"
STEPS = 60


@pytest.fixture(scope="module")
def peach(commonroad_dir):
    path = commonroad_dir / FILE
    return path, load_commonroad(path, ImportConfig(replay=False)).scenario


def _xml_lights(path):
    """{light id: (durations [steps], colours, offset [steps])} and {lanelet id: (light ids,
    centre-line end point)}, straight from the XML."""
    root = ET.parse(path).getroot()
    lights = {}
    for tl in root.findall("trafficLight"):
        items = tl.findall("cycle/cycleElement")
        lights[tl.get("id")] = (
            [int(e.findtext("duration")) for e in items],
            [e.findtext("color") for e in items],
            int(tl.findtext("cycle/timeOffset") or 0),
        )
    lanelets = {}
    for ll in root.findall("lanelet"):
        refs = {r.get("ref") for r in ll.iter("trafficLightRef")}
        if refs:
            ends = [
                np.array([float(ll.findall(f"{side}/point")[-1].findtext(c)) for c in "xy"])
                for side in ("leftBound", "rightBound")
            ]
            lanelets[ll.get("id")] = (refs, 0.5 * (ends[0] + ends[1]))
    return lights, lanelets


def _arc(line: np.ndarray, point: np.ndarray) -> float:
    a, b = line[:-1], line[1:]
    seg = b - a
    l2 = np.maximum((seg * seg).sum(1), 1e-12)
    u = np.clip(((point - a) * seg).sum(1) / l2, 0, 1)
    j = int(np.argmin(np.linalg.norm(a + u[:, None] * seg - point, axis=1)))
    return float(geometry.arc_lengths(line)[j] + u[j] * np.sqrt(l2[j]))


def test_plans_and_stop_lines_match_the_xml(peach):
    path, sc = peach
    lights, lanelets = _xml_lights(path)
    plan = sc.signal
    lit = np.flatnonzero(np.isfinite(plan.line_s))
    assert len(lit) >= 2  # the agents on the signalled approach
    dt = 0.1  # the file's timeStepSize
    for i in lit:
        # which lanelet end is this agent's stop line at? (the one on its route, nearest)
        route = sc.road.centers[sc.agents.route[i]].astype(float)
        line_xy = np.asarray(geometry.point_along(route, np.array([plan.line_s[i]]))[0]).reshape(2)
        ends = {k: np.linalg.norm(v[1] - line_xy) for k, v in lanelets.items()}
        lanelet = min(ends, key=ends.get)
        assert ends[lanelet] < 0.5, "stop line not at the end of a lanelet with a traffic light"
        durations, colours, offset = lights[sorted(lanelets[lanelet][0])[0]]
        g = colours.index("green")
        assert plan.cycle[i] == pytest.approx(sum(durations) * dt)
        assert plan.green[i] == pytest.approx(durations[g] * dt)
        assert plan.amber[i] == pytest.approx(durations[g + 1] * dt if colours[g + 1] == "yellow" else 0.0)
        # commonroad-io: the light at time step t is cycle element at (t - timeOffset) mod cycle
        for step in (0, 25, 417, 590, 991):
            pos = (step - offset) % sum(durations)
            colour = colours[int(np.searchsorted(np.cumsum(durations), pos, side="right"))]
            rows = np.stack(
                [
                    np.asarray(getattr(plan, k))[i : i + 1]
                    for k in ("line_s", "cycle", "offset", "green", "amber")
                ]
            )
            got = int(phase(rows, np.float32(step * dt))[0])
            assert got == {"green": 0, "yellow": 1}.get(colour, RED), (i, step, colour)


def test_idm_agents_hold_at_red_on_the_real_file(peach):
    """The signalled approach is amber at t = 0 and red from 2 s: agents that can stop stop
    before their line; an agent that crosses does so while it could not have stopped."""
    _path, sc = peach
    config = SimConfig(num_steps=STEPS, search=SearchPlan(neighbours="all_pairs"))
    _m, traj = jax.device_get(simulate_trajectory(pad_and_stack([sc], num_agents=16), idm_policy(), config))
    plan = sc.signal
    stopped = 0
    for i in np.flatnonzero(np.isfinite(plan.line_s)):
        route = sc.road.centers[sc.agents.route[i]].astype(float)
        xy = np.stack([traj.x[0, :, i], traj.y[0, :, i]], -1)
        front = np.array([_arc(route, p) for p in xy]) + 0.5 * sc.agents.length[i]
        if front[-1] < plan.line_s[i]:
            stopped += 1
            assert traj.speed[0, -1, i] < 1.0  # held at the line
            assert plan.line_s[i] - front[-1] < 2 * 2.0 + 1.0
    assert stopped >= 2


def test_bad_light_data_is_a_one_line_error(peach, tmp_path):
    path, _sc = peach
    text = path.read_text()
    bad = tmp_path / "bad_light.xml"
    bad.write_text(text.replace("<duration>400</duration>", "<duration>-5</duration>", 1))
    with pytest.raises(
        ScenarioError, match=r"trafficLight\[id=\d+\]/cycle/cycleElement\[0\]/duration"
    ) as err:
        load_commonroad(bad)
    assert "\n" not in str(err.value)
    bad.write_text(text.replace("<color>green</color>", "<color>blue</color>", 1))
    with pytest.raises(ScenarioError, match="unknown colour 'blue'"):
        load_commonroad(bad)
