"""Fixed-time traffic signals: IDM agents at a red line, green, the amber rule, the
red_light_violation metric against a NumPy computation, batch-size identity, bad data."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import METRIC_NAMES, SimConfig, replace
from drivesim.core.validate import ScenarioError, validate_scenario

from . import builders

LONG = SimConfig(num_steps=150)  # 15 s
LINE_QUEUE, LINE_AMBER, LENGTH = 60.0, 100.0, 4.5


def _long_cases():
    green = builders.with_signal(builders.signal_queue_case(), LINE_QUEUE, offset=-1.0, green=50.0)
    cases = [builders.signal_queue_case(), green, builders.signal_amber_case()]
    return [replace(sc, episode_length=np.asarray(LONG.num_steps, np.int32)) for sc in cases]


@pytest.fixture(scope="module")
def long_run():
    cases = _long_cases()
    metrics, traj = jax.device_get(simulate_trajectory(builders.batch(cases), idm_policy(), LONG))
    return cases, metrics, traj


def _fronts(traj, b: int, n: int) -> np.ndarray:
    """(S, n) front-bumper arc lengths on the straight lane along +x (s = x)."""
    return np.asarray(traj.x)[b, :, :n] + 0.5 * LENGTH


def test_red_light_stops_idm_agents_before_the_line_then_green_releases_them(long_run):
    cases, _m, traj = long_run
    front = _fronts(traj, 0, cases[0].num_agents)
    speed = np.asarray(traj.speed)[0, :, : cases[0].num_agents]
    red_until = 100  # the plan turns green at 10 s = step 100
    assert np.all(front[:red_until] < LINE_QUEUE), "an agent passed the red line"
    first = front[red_until - 1].max()
    assert LINE_QUEUE - 2 * 2.0 - 1.0 < first < LINE_QUEUE  # queued within ~s0 of the line
    assert speed[red_until - 1, 0] < 0.05 and np.all(speed[red_until - 1] < 0.5), "queue not at rest on red"
    assert front[-1].max() > LINE_QUEUE, "the queue did not move off on green"


def test_green_light_lets_agents_pass(long_run):
    cases, _m, traj = long_run
    front = _fronts(traj, 1, cases[1].num_agents)
    assert np.all(front[-1] > LINE_QUEUE)
    assert np.asarray(traj.speed)[1, :, : cases[1].num_agents].min() > 5.0  # nobody braked to a stop


def test_amber_rule_goes_when_it_cannot_stop_and_stops_when_it_can(long_run):
    """At the onset of amber (1.05 s) agent 0 is 5 m from the line at 12 m/s: v^2/(2b) =
    43 m > 5 m, so it goes; the ego (75 m away) can stop, stops, and the agent behind it too.
    Red starts at 4.55 s, after agent 0 has crossed (no violation for anyone)."""
    cases, metrics, traj = long_run
    front = _fronts(traj, 2, cases[2].num_agents)
    onset = 10  # step at which the light turns amber
    v = 12.0
    s0_front = 80.0 + 0.5 * LENGTH + v * onset * 0.1
    assert v * v / (2 * 1.67) > LINE_AMBER - s0_front  # closed form: agent 0 cannot stop
    assert front[-1, 0] > LINE_AMBER and np.asarray(traj.speed)[2, :, 0].min() > 11.0
    assert np.all(front[:, 1:] < LINE_AMBER) and np.asarray(traj.speed)[2, -1, 1:].max() < 0.1
    assert not bool(metrics.red_light_violation[2])


def _violation_numpy(scenario, traj, b: int, dt: float) -> bool:
    """Independent check from a trajectory on a straight lane along +x: the ego's front
    bumper crossed its line during a step whose start time was in the red part of the plan."""
    e = int(scenario.ego_index)
    plan = scenario.signal
    line, cycle, offset = float(plan.line_s[e]), float(plan.cycle[e]), float(plan.offset[e])
    green, amber = float(plan.green[e]), float(plan.amber[e])
    length = float(scenario.agents.length[e])
    fronts = np.concatenate([[scenario.agents.x[e]], np.asarray(traj.x)[b, :, e]]) + 0.5 * length
    for k in range(len(fronts) - 1):
        u = (k * dt - offset) % cycle
        red = u >= green + amber
        if red and fronts[k] < line <= fronts[k + 1]:
            return True
    return False


def test_constant_ego_running_red_violates_and_on_green_does_not(core_runs):
    scenarios, metrics, traj = core_runs("constant")
    for name, expect in (("red_runner", True), ("green_runner", False)):
        sc = scenarios[name]
        got = bool(metrics[name].red_light_violation)
        one = jax.tree_util.tree_map(lambda v: v[None], traj[name])
        assert _violation_numpy(sc, one, 0, 0.1) is expect
        assert got is expect, name
        follower = np.asarray(traj[name].x)[:, 1] + 0.5 * LENGTH  # the IDM agent behind
        assert bool(follower.max() < 60.0) is expect  # stops on red, passes on green
    for name in ("crash", "highway4"):  # no signal rows: never a violation
        assert not bool(metrics[name].red_light_violation)


def test_signal_results_identical_in_batches_of_one_and_many():
    cases = _long_cases()
    config = SimConfig(num_steps=40)
    many = jax.device_get(simulate(builders.batch(cases), idm_policy(), config))
    for b, sc in enumerate(cases):
        one = jax.device_get(simulate(builders.batch([sc]), idm_policy(), config))
        for name in METRIC_NAMES:
            np.testing.assert_array_equal(getattr(one, name)[0], getattr(many, name)[b], err_msg=name)


@pytest.mark.parametrize(
    "field,value,words",
    [
        ("cycle", np.nan, "signal.cycle: NaN value"),
        ("cycle", 0.0, "signal.cycle: cycle length must be > 0"),
        ("green", -1.0, "signal.green: duration must be >= 0"),
        ("amber", 40.0, "signal.green: green + amber longer than the cycle"),
        ("line_s", np.nan, "signal.line_s: NaN value"),
        ("offset", np.inf, "signal.offset: non-finite"),
    ],
)
def test_bad_signal_data_is_a_one_line_error(field, value, words):
    sc = builders.signal_queue_case()
    values = np.array(getattr(sc.signal, field))
    values[2] = value
    bad = replace(sc, signal=replace(sc.signal, **{field: values}))
    with pytest.raises(ScenarioError) as err:
        validate_scenario(bad, where="lights.xml#7")
    message = str(err.value)
    assert (
        "\n" not in message
        and "scenario 7" in message
        and words.replace(": ", "") in message.replace(": ", "")
    )
