"""Road-user types: per-type collision metrics against a brute-force float64 all-pairs
computation from the simulated trajectory (window path and all-pairs fallback), leaders
found for pedestrians and cyclists, per-type kinematic limits, validation."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from drivesim.core.road_users import CYCLIST_LIMITS, PEDESTRIAN_LIMITS
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import CYCLIST, PEDESTRIAN, replace
from drivesim.core.validate import ScenarioError, validate_scenario

from . import builders
from .conftest import CONFIGS, STEPS
from .reference_boxes import box_corners, sat_separation


def brute_force_kind_metrics(scenario, traj) -> dict:
    """collided_with_kind, pedestrians_collided, cyclists_collided from the trajectory
    (S, N) in float64: every pair's boxes tested at every simulated step."""
    ag = scenario.agents
    n, ego = len(ag.x), int(scenario.ego_index)
    kind = np.asarray(ag.kind)
    hit_ever = np.zeros(n, bool)
    first_partner = -1
    for t in range(traj.x.shape[0]):
        corners = [
            box_corners(
                float(traj.x[t, i]), float(traj.y[t, i]), float(traj.heading[t, i]), ag.length[i], ag.width[i]
            )
            for i in range(n)
        ]
        partners = []
        for i in range(n):
            for j in range(i + 1, n):
                if traj.valid[t, i] and traj.valid[t, j] and sat_separation(corners[i], corners[j]) <= 0.0:
                    hit_ever[[i, j]] = True
                    partners += [j] if i == ego else [i] if j == ego else []
        if first_partner < 0 and partners:
            first_partner = min(partners)
    return dict(
        collided_with_kind=int(kind[first_partner]) if first_partner >= 0 else -1,
        pedestrians_collided=int(np.sum(hit_ever & (kind == PEDESTRIAN))),
        cyclists_collided=int(np.sum(hit_ever & (kind == CYCLIST))),
    )


def _check_against_brute_force(scenario, metrics, traj):
    n = scenario.num_agents
    cut = jax.tree_util.tree_map(lambda v: np.asarray(v)[:, :n], traj)
    expected = brute_force_kind_metrics(scenario, cut)
    got = {k: int(getattr(metrics, k)) for k in expected}
    assert got == expected


def test_kind_metrics_window_path_match_brute_force(core_runs):
    scenarios, metrics, traj = core_runs("constant")
    m = metrics["vru_hit"]
    assert not bool(m.window_overflow)
    _check_against_brute_force(scenarios["vru_hit"], m, traj["vru_hit"])
    # the ego hits the pedestrian first, then the cyclist riding ahead in its lane
    assert (int(m.collided_with_kind), int(m.pedestrians_collided), int(m.cyclists_collided)) == (1, 1, 1)
    assert int(m.agents_collided) == 3
    for name in ("crash", "highway4"):  # vehicles only: nothing counted per type
        assert int(metrics[name].pedestrians_collided) == int(metrics[name].cyclists_collided) == 0
    assert int(metrics["crash"].collided_with_kind) == 0 and int(metrics["highway4"].collided_with_kind) == -1


def test_kind_metrics_all_pairs_fallback_match_brute_force():
    """A junction zone of one agent cannot hold the ego and the pedestrian on the crosswalk,
    so the whole scenario runs again on the all-pairs path (core.exact / core.fallback)."""
    config = CONFIGS["constant"].with_search(window=1, junction_capacity=1, neighbours="window")
    scenario = builders.vru_hit_case()
    metrics, traj = jax.device_get(simulate_trajectory(builders.batch([scenario, scenario]), None, config))
    m = jax.tree_util.tree_map(lambda v: v[0], metrics)
    assert bool(m.window_overflow)
    _check_against_brute_force(scenario, m, jax.tree_util.tree_map(lambda v: v[0], traj))
    assert (int(m.collided_with_kind), int(m.pedestrians_collided), int(m.cyclists_collided)) == (1, 1, 1)


def test_vehicles_brake_for_a_crossing_pedestrian_and_a_cyclist(core_runs):
    """The leader search is spatial: a pedestrian whose centre is inside the ego's lane leads
    the ego (its route crosses the lane), and a cyclist leads the car behind it."""
    scenarios, metrics, traj = core_runs("idm")
    assert not bool(metrics["vru_street"].window_overflow)  # found by the sorted-window search
    tr = traj["vru_street"]
    speed = np.concatenate([scenarios["vru_street"].agents.speed[None], tr.speed[:, :4]])
    accel = np.diff(speed, axis=0) / CONFIGS["idm"].dt
    ped_in_lane = np.abs(tr.y[:, 3]) < 1.8  # the pedestrian's centre inside lane 0
    first = int(np.argmax(ped_in_lane))
    assert 0 < first < STEPS - 10
    assert accel[first + 1 : first + 10, 0].min() < -1.0  # the ego brakes once it is there
    assert speed[:, 0].min() < speed[0, 0] - 2.0  # 12 -> 9.8 m/s, then on once it has crossed
    assert accel[:, 1].min() < -0.5 and speed[-1, 1] < 0.8 * speed[0, 1]  # the car, behind the cyclist


def test_pedestrian_and_cyclist_kinematic_limits(core_runs):
    """vru_street asks for more than the limits: the pedestrian's IDM wants 4 m/s at 2 m/s^2,
    the cyclist's accelerates at 2.5 m/s^2."""
    scenarios, _metrics, traj = core_runs("idm")
    tr = traj["vru_street"]
    speed = np.concatenate([scenarios["vru_street"].agents.speed[None], tr.speed[:, :4]])
    accel = np.diff(speed, axis=0) / CONFIGS["idm"].dt
    ped, cyc = speed[:, 3], speed[:, 2]
    assert ped.max() == pytest.approx(PEDESTRIAN_LIMITS.max_speed, abs=1e-5)  # reached and held
    assert accel[:, 3].max() == pytest.approx(PEDESTRIAN_LIMITS.max_accel, abs=1e-3)
    assert accel[:, 2].max() <= CYCLIST_LIMITS.max_accel + 1e-3 and cyc.max() <= CYCLIST_LIMITS.max_speed


def test_unknown_kind_is_a_one_line_error_naming_the_field():
    sc = builders.vru_hit_case()
    bad = replace(sc, agents=replace(sc.agents, kind=np.array([0, 1, 7, 0], np.int32)))
    with pytest.raises(ScenarioError, match=r"agents\.kind.*unknown road-user type 7") as err:
        validate_scenario(bad, where="test.xml")
    assert "\n" not in str(err.value)
