"""MOBIL lane changes (Kesting, Treiber, Helbing 2007): the rule and the engine's decisions
against a float64 NumPy transcription (tests/core/mobil_reference.py), the lateral path, a
cut-in that makes the IDM ego brake, and exactness against brute force with changes going on."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.bench.fidelity import batch_counts, delivered_traces
from drivesim.core import mobil
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import reset, simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import IDM_DEFAULTS, IDMParams, LaneChangeConfig, MOBILParams, SimConfig, replace
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate
from tests.core import mobil_reference as ref
from tests.core.builders import batch, make_scenario, straight_lanes

LANES = LaneChangeConfig()
CONFIG = SimConfig(num_steps=60, lane_changes=LANES, search=SearchPlan(window=12))
W = 3.6


def test_rule_is_the_published_formula():
    rng = np.random.default_rng(0)
    acc = [rng.uniform(-6.0, 2.0, 500) for _ in range(6)]
    p, b_safe, thr = rng.uniform(0, 1, 500), rng.uniform(1, 6, 500), rng.uniform(0, 0.4, 500)
    safe, incentive, change = (np.asarray(v) for v in mobil.mobil_rule(*acc, p, b_safe, thr))
    c, c_new, n, n_new, o, o_new = acc
    expected = c_new - c + p * ((n_new - n) + (o_new - o))
    np.testing.assert_allclose(incentive, expected, rtol=1e-12)
    assert np.array_equal(safe, n_new >= -b_safe)
    assert np.array_equal(change, (n_new >= -b_safe) & (expected > thr))
    assert change.any() and (~change).any() and (~safe).any()


def _traffic(seed: int, n: int = 6, lanes: int = 3):
    """Random agents on ``lanes`` straight lanes, spaced >= 12 m along each lane, with random
    IDM and MOBIL parameters per agent; (host scenario, ref.Traffic)."""
    rng = np.random.default_rng(seed)
    lane = rng.integers(0, lanes, n)
    x = np.zeros(n)
    for k in range(lanes):
        idx = np.flatnonzero(lane == k)
        x[idx] = 100.0 + np.cumsum(rng.uniform(12.0, 45.0, len(idx)))
    y = lane * W + rng.uniform(-0.3, 0.3, n)
    v = rng.uniform(10.0, 30.0, n)
    idm = {k: np.full(n, val) for k, val in IDM_DEFAULTS.items()}
    idm["v0"] = rng.uniform(20.0, 36.0, n)
    idm["T"] = rng.uniform(1.0, 2.0, n)
    mob = {
        "politeness": rng.uniform(0.0, 1.0, n),
        "b_safe": rng.uniform(1.0, 5.0, n),
        "threshold": rng.uniform(0.0, 0.3, n),
    }
    sc = make_scenario(
        np.stack([x, y], -1),
        0.0,
        v,
        lane,
        straight_lanes(lanes, W, 3000.0),
        [W] * lanes,
        ego=0,
        idm=IDMParams(**{k: val.astype(np.float32) for k, val in idm.items()}),
    )
    sc = replace(
        sc, mobil=MOBILParams(**{k: v.astype(np.float32) for k, v in mob.items()}, enabled=np.ones(n, bool))
    )
    f32 = lambda q: np.asarray(q, np.float32).astype(np.float64)  # noqa: E731  (the engine's inputs)
    traffic = ref.Traffic(
        x=f32(x),
        y=f32(y),
        v=f32(v),
        length=np.full(n, 4.5),
        lane=lane.copy(),
        idm={k: f32(val) for k, val in idm.items()},
        mobil={k: f32(val) for k, val in mob.items()},
        enabled=np.arange(n) != 0,
        lanes=lanes,
        width=W,
    )
    return sc, traffic


@partial(jax.jit, static_argnames="config")
def _decide(sc, config):
    agents = reset(sc, config).agents
    ids = agents.agent_id
    out = mobil.decide(agents, sc.road, jnp.asarray(10), config.dt)
    back = jnp.argsort(ids)
    shift = mobil.lane_row(out.lane, "shift")
    target = mobil.lane_row(out.lane, "target").astype(jnp.int32)
    return jnp.where(shift != 0.0, target, out.route)[back]


def test_decisions_match_the_numpy_reference():
    agreed = changed = 0
    for seed in range(40):
        sc, traffic = _traffic(seed)
        got = np.asarray(_decide(jax.tree_util.tree_map(jnp.asarray, sc), CONFIG))
        want, margin = ref.decisions(traffic)
        clear = margin > 1e-3
        assert np.array_equal(got[clear], want[clear]), (seed, got, want, margin)
        agreed += int(clear.sum())
        changed += int(np.sum(clear & (want != traffic.lane)))
    assert agreed > 150 and changed > 10, (agreed, changed)


def test_no_change_into_or_out_of_an_unusable_lane():
    """With lane 2 of 3 marked invalid, nobody targets it and its agents keep their lane,
    while lanes 0 and 1 still trade agents (the same traffic with every lane valid too)."""
    moved = {True: 0, False: 0}
    for seed in range(20):
        sc, traffic = _traffic(seed)
        for valid in (True, False):
            road = replace(sc.road, lane_valid=np.array([True, True, valid]))
            got = np.asarray(_decide(jax.tree_util.tree_map(jnp.asarray, replace(sc, road=road)), CONFIG))
            changed = got != traffic.lane
            if not valid:
                assert not np.any(changed & ((got == 2) | (traffic.lane == 2))), (seed, got, traffic.lane)
            moved[valid] += int(np.sum(changed & (got < 2) & (traffic.lane < 2)))
    assert moved[False] > 3 and moved[True] > 3, moved


TRAJ = dataclasses.replace(CONFIG, num_steps=80)


def _only_agent_one_changes(sc):
    n = len(sc.agents.x)
    full = lambda v: np.full(n, v, np.float32)  # noqa: E731
    enabled = np.arange(n) == 1
    return replace(sc, mobil=MOBILParams(full(0.3), full(4.0), full(0.1), enabled))


def _lateral_case():
    """Agent 1 (lane 0, 25 m/s) closes on a slower car (agent 2); lane 1 is free; the ego
    (agent 0) is far behind."""
    xy = [(100.0, 0.0), (300.0, 0.0), (345.0, 0.0)]
    sc = make_scenario(
        xy, 0.0, [25.0, 25.0, 20.0], [0, 0, 0], straight_lanes(2, W, 3000.0), [W, W], ego=0, episode_length=80
    )
    return _only_agent_one_changes(sc)


def _cut_in_case():
    """The ego (lane 0, 20 m/s) has a free lane ahead; agent 1 in lane 1, 25 m ahead, closes
    on a slower car (agent 2) and cuts in in front of the ego."""
    xy = [(100.0, 0.0), (125.0, W), (165.0, W)]
    sc = make_scenario(
        xy, 0.0, [20.0, 24.0, 18.0], [0, 1, 1], straight_lanes(2, W, 3000.0), [W, W], ego=0, episode_length=80
    )
    return _only_agent_one_changes(sc)


@pytest.fixture(scope="module")
def runs():
    cases = batch([_lateral_case(), _cut_in_case()])
    with_mobil = jax.device_get(simulate_trajectory(cases, idm_policy(), TRAJ))
    without = jax.device_get(
        simulate_trajectory(cases, idm_policy(), dataclasses.replace(TRAJ, lane_changes=None))
    )
    return with_mobil, without


def test_lane_change_follows_the_lateral_path(runs):
    (metrics, traj), _ = runs
    y = np.asarray(traj.y[0, :, 1], np.float64)
    t0 = LANES.decide_every  # the first decision runs after step decide_every - 1
    assert abs(y[t0 - 2]) < 0.05, "no move before the decision"
    d0 = -W + y[t0 - 1]
    steps = np.arange(len(y)) + 1  # trajectory entry k is the state at step k + 1
    age = (steps - t0) * TRAJ.dt
    path = W + np.asarray(mobil.path_offset(np.float32(d0), np.float32(age), np.float32(LANES.duration_s)))
    later = steps >= t0
    assert np.max(np.abs(y[later] - path[later])) < 0.6, np.round(y - path, 2)
    cross = int(np.argmax(y > 0.5 * W)) + 1
    assert t0 + 10 <= cross <= t0 + 35, cross  # half way about half the duration in
    done = steps >= t0 + LANES.duration_s / TRAJ.dt + 10  # (the slow car is ahead in lane 0 by then)
    assert np.all(np.abs(y[done] - W) < 0.15) and y.max() < W + 0.3
    assert not bool(metrics.ego_collided[0]) and int(metrics.agents_collided[0]) == 0


def test_cut_in_makes_the_idm_ego_brake(runs):
    (metrics, traj), (_m0, traj0) = runs
    changer_y = np.asarray(traj.y[1, :, 1])
    assert changer_y[-1] < 0.3, "the agent moved into the ego's lane"
    ego_acc = np.diff(np.asarray(traj.speed[1, :, 0], np.float64)) / TRAJ.dt
    ego_acc0 = np.diff(np.asarray(traj0.speed[1, :, 0], np.float64)) / TRAJ.dt
    assert ego_acc0.min() > 0.0, "without lane changes the ego's lane stays free"
    assert ego_acc.min() < -0.5, ego_acc.min()
    assert not bool(metrics.ego_collided[1]) and int(metrics.agents_collided[1]) == 0


def _highway(count: int, steps: int):
    cfg = FamilyConfig(num_agents=32, steps=steps)
    return pad_and_stack([generate("highway", i, cfg).scenario for i in range(count)], num_agents=32)


def test_exact_against_brute_force_with_lane_changes():
    config = dataclasses.replace(CONFIG, num_steps=40)
    scenarios = _highway(4, 40)
    _win, got, flag = delivered_traces(scenarios, idm_policy(), config)
    total = batch_counts(got, np.ones(4, bool))
    switches = (np.abs(np.diff(np.asarray(got.d), axis=1)) > 0.5 * W) & np.asarray(got.valid)[:, 1:]
    assert switches.sum() >= 8, "lanes were changed"
    assert total.leader_relations > 1000 and total.borderline < 0.01 * total.leader_relations
    assert (total.leader_misses, total.leader_false, total.collision_misses, total.collision_false) == (
        0,
        0,
        0,
        0,
    )
    assert total.pair_count_errors == 0


def test_batch_of_one_is_bit_identical_with_lane_changes():
    config = dataclasses.replace(CONFIG, num_steps=20)
    scenarios = _highway(3, 20)
    many = jax.device_get(simulate(scenarios, idm_policy(), config))
    one = jax.device_get(simulate(jax.tree_util.tree_map(lambda v: v[1:2], scenarios), idm_policy(), config))
    for name in ("progress_m", "min_ttc_s", "max_jerk", "min_road_edge_distance_m", "window_overflow"):
        assert np.asarray(getattr(one, name))[0].tobytes() == np.asarray(getattr(many, name))[1].tobytes(), (
            name
        )


def test_bad_mobil_parameters_are_named():
    from drivesim.core.validate import ScenarioError, validate_scenario

    sc = _cut_in_case()
    bad = replace(sc, mobil=replace(sc.mobil, b_safe=np.full(3, -1.0, np.float32)))
    with pytest.raises(ScenarioError, match="b_safe"):
        validate_scenario(bad)
    validate_scenario(sc)


@pytest.mark.parametrize("case", [0, 1], ids=["lateral", "cut_in"])
def test_rollout_matches_the_lane_changing_reference(runs, case):
    (metrics, traj), _ = runs
    scenario = (_lateral_case, _cut_in_case)[case]()
    got = ref.lane_changing_rollout(scenario, idm_policy(), TRAJ)
    n = scenario.num_agents
    assert np.abs(np.diff(got.y, axis=0)).sum() > 3.0, "the reference changed lanes too"
    for name in ("x", "y", "heading", "speed"):
        np.testing.assert_allclose(
            np.asarray(getattr(traj, name))[case, :, :n],
            getattr(got, name),
            rtol=1e-4,
            atol=1e-3,
            err_msg=name,
        )
    for name in ("ego_collided", "collision_pairs", "agents_collided", "steps"):
        assert np.asarray(getattr(metrics, name))[case] == got.metrics[name], name
    np.testing.assert_allclose(
        np.asarray(metrics.min_ttc_s)[case], got.metrics["min_ttc_s"], rtol=1e-4, atol=2e-3
    )
