"""Catalogue families simulated for real: scripted adversaries against the constant-speed and
the IDM ego; grid order and size; one-line errors naming the family and the parameter."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from drivesim.core.policies import default_policy_params
from drivesim.core.search_plan import SearchPlan
from drivesim.core.trajectory import rollout_trajectory
from drivesim.core.types import CYCLIST, PEDESTRIAN, VEHICLE, SimConfig
from drivesim.pipeline.policy_names import policy_named
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.catalogue import FAMILIES, CatalogueError, CatalogueSource, make_record
from drivesim.scenarios.registry import SourceContext, SourceSpecError, check_spec, open_spec
from drivesim.scenarios.synthetic import FamilyConfig

STEPS = 80
# cyclist_ahead: the boxes (car 1.8 m wide, cyclist 0.6 m) overlap laterally iff |lat_offset| < BAND
CYCLIST_BAND = 0.5 * (1.8 + 0.6)
# red_light_runner at its defaults (both at 13.89 m/s): the boxes meet iff |tta| < BAND
RUNNER_BAND = 2 * (0.5 * 4.5 + 0.5 * 1.8) / 13.89
# amber_light at its defaults (13.89 m/s, ITE amber): the constant ego's front reaches the
# line dist / speed after the amber onset, so it runs the red iff dist / speed > amber
AMBER, AMBER_SPEED = FAMILIES["amber_light"].params[2].default, 13.89
# occluded_pedestrian at its defaults (ego 11.11 m/s, walk 1.39 m/s): the pedestrian's box is
# in the ego's path (|y| < 0.9 + 0.25 m) from 1.1 m to 3.4 m past the parked car's face, so
# from 1.1 / walk to 3.4 / walk after the step-out; the ego's box spans the pedestrian's x
# from tta - 0.25 / speed to tta + 4.75 / speed after it. They meet iff tta is in the band.
OCCLUDED_BAND = (1.1 / 1.39 - 4.75 / 11.11, 3.4 / 1.39 + 0.25 / 11.11)
CASES = {
    "brake_short": ("lead_brake", dict(gap=5.0, decel=9.0)),
    "brake_generous": ("lead_brake", dict(gap=40.0, decel=9.0)),
    "ped_tta0": ("crossing_pedestrian", dict(tta=0.0)),
    "ped_tta5": ("crossing_pedestrian", dict(tta=5.0)),
    "occluded_before": ("occluded_pedestrian", dict(tta=OCCLUDED_BAND[0] - 0.15)),
    "occluded_early": ("occluded_pedestrian", dict(tta=OCCLUDED_BAND[0] + 0.15)),
    "occluded_late": ("occluded_pedestrian", dict(tta=OCCLUDED_BAND[1] - 0.15)),
    "occluded_after": ("occluded_pedestrian", dict(tta=OCCLUDED_BAND[1] + 0.15)),
    "occluded_default": ("occluded_pedestrian", {}),
    "cut_in": ("cut_in", dict(gap=10.0, dv=-5.0)),
    "cut_out": ("cut_out", dict(gap=30.0)),
    "runner_tta0": ("red_light_runner", dict(tta=0.0)),
    "runner_inside": ("red_light_runner", dict(tta=RUNNER_BAND - 0.15)),
    "runner_outside": ("red_light_runner", dict(tta=RUNNER_BAND + 0.15)),
    "runner_before": ("red_light_runner", dict(tta=-RUNNER_BAND - 0.15)),
    "runner_fast_ego": ("red_light_runner", dict(tta=-0.5, speed=25.0, adv_speed=5.0)),
    "cyclist_inside": ("cyclist_ahead", dict(lat_offset=CYCLIST_BAND - 0.1)),
    "cyclist_outside": ("cyclist_ahead", dict(lat_offset=-CYCLIST_BAND - 0.1)),
    "amber_clears": ("amber_light", dict(dist=AMBER_SPEED * (AMBER - 0.15))),
    "amber_late": ("amber_light", dict(dist=AMBER_SPEED * (AMBER + 0.15))),
    "amber_far": ("amber_light", dict(dist=80.0)),
    "amber_near": ("amber_light", dict(dist=5.0)),
}


@functools.cache
def _simulate(policy: str):
    """Metrics (B,) and trajectories (B, S, N) of every case under ``policy`` (exact
    all-pairs neighbours: rollout_trajectory has no window fallback)."""
    records = [make_record(f, v, STEPS) for f, v in CASES.values()]
    batch = pad_and_stack([r.scenario for r in records], num_agents=8)
    config = SimConfig(
        num_steps=STEPS, policy=policy_named(policy), search=SearchPlan(neighbours="all_pairs")
    )
    run = jax.jit(jax.vmap(lambda sc, p: rollout_trajectory(sc, p, config), in_axes=(0, None)))
    metrics, traj = jax.device_get(run(batch, default_policy_params(config)))
    return {name: k for k, name in enumerate(CASES)}, metrics, traj


def _case(policy: str, name: str):
    index, metrics, traj = _simulate(policy)
    k = index[name]
    ego_speed = np.concatenate([[make_record(*CASES[name]).scenario.agents.speed[0]], traj.speed[k, :, 0]])
    return jax.tree_util.tree_map(lambda a: a[k], metrics), np.diff(ego_speed) / 0.1


def test_lead_brake_constant_ego_collides_idm_ego_brakes():
    m, _ = _case("constant", "brake_short")
    assert bool(m.ego_collided) and int(m.collided_with) == 1
    m, accel = _case("idm", "brake_short")
    assert accel.min() < -1.0
    m, accel = _case("idm", "brake_generous")
    assert not bool(m.ego_collided)
    assert accel[:5].min() > 0.0  # free road at first: the IDM ego speeds up ...
    assert accel[10:].min() < -2.0  # ... and brakes hard once the lead brakes (t_brake = 1 s)
    m, _ = _case("constant", "brake_generous")
    assert bool(m.ego_collided)  # the constant ego reaches the stopped lead within 8 s


def test_crossing_pedestrian_time_to_arrival():
    m, _ = _case("constant", "ped_tta0")
    assert bool(m.ego_collided) and int(m.collided_with) == 1
    assert int(m.collided_with_kind) == PEDESTRIAN and int(m.pedestrians_collided) == 1
    m, _ = _case("constant", "ped_tta5")
    assert not bool(m.ego_collided)
    assert int(m.collided_with_kind) == -1 and int(m.pedestrians_collided) == 0
    m, accel = _case("idm", "ped_tta0")
    assert not bool(m.ego_collided) and accel.min() < -1.0


def test_occluded_pedestrian_collides_exactly_inside_the_closed_form_band():
    for name in ("occluded_early", "occluded_late", "occluded_default"):
        m, _ = _case("constant", name)
        assert bool(m.ego_collided) and int(m.collided_with) == 2, name  # slot 2: the pedestrian
        assert int(m.pedestrians_collided) == 1, name
    for name in ("occluded_before", "occluded_after"):
        m, _ = _case("constant", name)
        assert not bool(m.ego_collided), name
    m, accel = _case("idm", "occluded_default")  # the IDM ego brakes once the pedestrian is in its lane
    assert not bool(m.ego_collided) and accel.min() < -1.0
    assert int(m.agents_offroad) == 2  # the parked car and the waiting pedestrian, off the road


def test_cyclist_ahead_collides_inside_the_lateral_band_at_the_closing_time():
    m, _ = _case("constant", "cyclist_inside")
    assert bool(m.ego_collided) and int(m.collided_with_kind) == CYCLIST and int(m.cyclists_collided) == 1
    # defaults: gap 20 m closed at 13.89 - 4.17 m/s: the boxes touch at 2.058 s (step index 20)
    assert int(m.collision_step) == int(np.ceil(20.0 / (13.89 - 4.17) / 0.1)) - 1
    m, _ = _case("constant", "cyclist_outside")  # passes 0.1 m to the cyclist's left
    assert not bool(m.ego_collided) and int(m.cyclists_collided) == 0
    m, accel = _case("idm", "cyclist_inside")  # the IDM ego brakes and follows the cyclist
    assert not bool(m.ego_collided) and accel.min() < -1.0
    sc = make_record("cyclist_ahead", {}, STEPS).scenario
    assert list(sc.agents.kind) == [VEHICLE, CYCLIST]


def test_red_light_runner_collides_exactly_inside_the_closed_form_band():
    for name in ("runner_tta0", "runner_inside"):
        m, _ = _case("constant", name)
        assert bool(m.ego_collided) and int(m.collided_with) == 1, name
    for name in ("runner_outside", "runner_before"):
        m, _ = _case("constant", name)
        assert not bool(m.ego_collided), name
        assert int(m.agents_offroad) == 0, name  # the crossing road is drivable
    # a fast ego and a slow runner: band (3.15 / 25 + 3.15 / 5) = 0.756 s covers tta = -0.5
    m, _ = _case("constant", "runner_fast_ego")
    assert bool(m.ego_collided)


def test_red_light_runner_has_the_ego_on_green_and_the_runner_on_red():
    from drivesim.core.signals import RED, phase

    sc = make_record("red_light_runner", {}, STEPS).scenario
    rows = np.stack(
        [np.asarray(getattr(sc.signal, k)) for k in ("line_s", "cycle", "offset", "green", "amber")]
    )
    for t in np.arange(STEPS) * 0.1:
        light = np.asarray(phase(rows, np.float32(t)))
        assert light[0] == 0 and light[1] == RED  # ego green, runner red
    assert np.isfinite(sc.signal.line_s[0]) and np.isinf(sc.signal.line_s[1])
    for name in ("runner_outside", "runner_before"):  # green: the ego never runs a red
        assert not bool(_case("constant", name)[0].red_light_violation)


def test_amber_light_constant_ego_runs_red_exactly_outside_the_closed_form_band():
    assert not bool(_case("constant", "amber_clears")[0].red_light_violation)
    assert bool(_case("constant", "amber_late")[0].red_light_violation)
    assert bool(_case("constant", "amber_far")[0].red_light_violation)
    # IDM ego: 80 m > v^2 / (2 b) = 57.8 m, so it stops (before the line); 5 m: it goes and clears
    index, metrics, traj = _simulate("idm")
    for name in ("amber_far", "amber_near"):
        assert not bool(metrics.red_light_violation[index[name]]), name
    sc = make_record(*CASES["amber_far"], STEPS).scenario
    front = traj.x[index["amber_far"], :, 0] + 0.5 * 4.5
    line_x = sc.signal.line_s[0] - 100.0  # lane 0 starts at x = -100 m
    assert front.max() < line_x and traj.speed[index["amber_far"], -1, 0] < 0.5 * AMBER_SPEED  # braking


def test_cut_in_and_cut_out():
    m, _ = _case("constant", "cut_in")
    assert bool(m.ego_collided) and int(m.collided_with) == 1
    m, accel = _case("idm", "cut_in")
    assert not bool(m.ego_collided) and accel[20:].min() < -1.0  # brakes for the cut-in
    m, _ = _case("constant", "cut_out")
    assert bool(m.ego_collided) and int(m.collided_with) == 2  # the revealed stopped car
    assert int(m.agents_collided) == 2  # the leader itself cleared the stopped car
    m, _ = _case("idm", "cut_out")
    assert not bool(m.ego_collided)


def test_logs_cover_the_episode_and_match_the_parameters():
    sc = make_record("lead_brake", dict(gap=12.0, speed=10.0, decel=5.0, t_brake=1.0), steps=50).scenario
    assert sc.log.xy.shape == (51, 2, 2) and sc.log.valid[:, 1].all() and not sc.log.valid[:, 0].any()
    assert list(sc.log.replay) == [False, True] and int(sc.ego_index) == 0
    bumper_gap = sc.agents.x[1] - sc.agents.x[0] - 0.5 * (sc.agents.length[0] + sc.agents.length[1])
    assert bumper_gap == pytest.approx(12.0)
    speed = sc.log.speed[:, 1]
    assert speed[10] == pytest.approx(10.0) and speed[30] == pytest.approx(0.0, abs=1e-5)
    assert speed[20] == pytest.approx(5.0, abs=1e-4)  # 1 s of braking at 5 m/s^2


def test_grid_order_size_and_names():
    source = CatalogueSource("cut_in?dv=-10:0:3,gap=5:40:8", steps=20)
    assert len(source) == 24
    points = [source.grid.point(p) for p in range(len(source))]
    # C order over the declared parameters (gap, dv, lateral, speed), whatever the spec order
    assert [p["gap"] for p in points[:4]] == [5.0, 5.0, 5.0, 10.0]
    assert [p["dv"] for p in points[:4]] == [-10.0, -5.0, 0.0, -10.0]
    assert {p["lateral"] for p in points} == {2.0} and points[-1]["gap"] == 40.0
    record = source.load(4)
    assert record.name == "cut_in?gap=10,dv=-5,lateral=2,speed=20" and record.scenario_id == 4
    assert record.family == "cut_in" and record.scenario.log.xy.shape[0] == 21
    opened = open_spec("catalogue:lead_brake?gap=2:40:20", SourceContext(family=FamilyConfig(steps=30)))
    assert len(opened) == 20 and opened.steps == 30
    for name in FAMILIES:
        assert len(CatalogueSource(name)) == 1


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("catalogue:cut_in?gap=nan", ["cut_in", "gap", "finite"]),
        ("catalogue:cut_in?gap=500", ["cut_in", "gap=500", "outside"]),
        ("catalogue:cut_in?gapp=5", ["cut_in", "unknown parameter 'gapp'"]),
        ("catalogue:cut_in?gap=5:40:0", ["cut_in", "gap", "COUNT"]),
        ("catalogue:lead_brake?decel=fast", ["lead_brake", "decel", "not a number"]),
        ("catalogue:cutin", ["unknown family 'cutin'", "cut_in"]),
        ("catalogue:cut_in?dv=-25,speed=20", ["cut_in", "dv=-25", "-speed (-20)"]),
        ("catalogue:cut_in?dv=-12:0:3,speed=10:20:3", ["cut_in", "dv=-12", "-speed (-10)"]),
        ("catalogue:cut_in?dv=-12:0,speed=10:20&samples=5", ["cut_in", "dv=-12", "reverse"]),
        # samples
        ("catalogue:cut_in?gap=5:40", ["cut_in", "gap", "START:STOP:COUNT", "&samples=N"]),
        ("catalogue:cut_in?gap=5:40:8&samples=10", ["cut_in", "gap", "LO:HI"]),
        ("catalogue:cut_in?gap=40:5&samples=10", ["cut_in", "gap", "LO < HI"]),
        ("catalogue:cut_in?gap=5:400&samples=10", ["cut_in", "gap=400", "outside"]),
        ("catalogue:cut_in?gap=nan:5&samples=10", ["cut_in", "gap", "finite"]),
        ("catalogue:cut_in?gapp=5:40&samples=10", ["cut_in", "unknown parameter 'gapp'"]),
        ("catalogue:cut_in?gap=5:40&samples=0", ["cut_in", "samples=0", "outside"]),
        ("catalogue:cut_in?gap=5:40&samples=ten", ["cut_in", "samples", "not an integer"]),
        ("catalogue:cut_in?gap=5:40&sample=10", ["cut_in", "unknown option 'sample=10'"]),
        ("catalogue:cut_in?gap=5:40&samples=1&samples=2", ["cut_in", "samples given twice"]),
        ("catalogue:cut_in?gap=5&samples=10", ["cut_in", "needs a range NAME=LO:HI"]),
        ("catalogue:lead_brake?gap=5.1234561:5.1234569&samples=3", ["lead_brake", "gap", "significant"]),
    ],
)
def test_bad_parameters_fail_with_one_line(spec, words):
    with pytest.raises(SourceSpecError) as err:
        check_spec(spec)
    message = str(err.value)
    assert "\n" not in message and all(w in message for w in words), message
    with pytest.raises(CatalogueError):
        CatalogueSource(spec.partition(":")[2])


def test_cross_parameter_error_names_family_and_parameter():
    with pytest.raises(CatalogueError, match=r"catalogue cut_in: parameter dv=-25 .*-speed"):
        make_record("cut_in", dict(dv=-25.0, speed=20.0))
    check_spec("catalogue:cut_in?dv=-20:0:3,speed=20:30:2")  # the lowest corner reaches 0 exactly
