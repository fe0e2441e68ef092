"""The junction zone (drivesim.core.junction): crossing straight routes get their own
groups, and the zone around their crossings makes the search exact without all pairs.

Checked against the float64 all-pairs reference of drivesim.bench.fidelity; a zone shrunk
on purpose misses what the reference finds; a full zone falls back; the crossing geometry
against the closed form; highway scenarios give the same bits beside intersections."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.bench.fidelity import batch_counts, delivered_traces
from drivesim.core import exact, junction
from drivesim.core.policies import CONSTANT, idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import IDM_DEFAULTS, IDMParams, SimConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

from .builders import make_scenario

STEPS = 30
CONFIG = SimConfig(num_steps=STEPS, policy=CONSTANT)  # the constant ego runs into crossing traffic


def _batch(family: str, ids, agents: int = 32):
    cfg = FamilyConfig(num_agents=agents, steps=STEPS)
    return pad_and_stack([generate(family, i, cfg).scenario for i in ids], num_agents=agents)


@pytest.fixture(scope="module")
def junctions():
    return _batch("intersection", range(6))


def test_intersections_are_exact_without_the_all_pairs_fallback(junctions):
    _win, got, flag = delivered_traces(junctions, None, CONFIG)
    assert not flag.any(), "every intersection scenario is proven exact by the window and the zone"
    c = batch_counts(got, junctions.valid)
    assert c.leader_relations > 1000, c
    assert (c.leader_misses, c.leader_false, c.collision_misses, c.collision_false) == (0, 0, 0, 0), c
    assert c.pair_count_errors == 0


def test_a_shrunk_zone_is_caught_by_the_reference(junctions, monkeypatch):
    # the zone reaches only the crossing points themselves: cross-road leaders further out are missed
    monkeypatch.setattr(junction, "zone_radius", lambda geo, drift, widest, reach: geo.r0)
    shrunk = CONFIG.with_search(junction_capacity=15)  # a config not compiled before
    win, _got, _flag = delivered_traces(junctions, None, shrunk)
    c = batch_counts(win, junctions.valid)
    assert c.leader_misses > 0, c


def test_a_full_zone_falls_back_to_all_pairs(junctions):
    small = CONFIG.with_search(junction_capacity=1)
    _win, got, flag = delivered_traces(junctions, None, small)
    assert flag.sum() >= 3, flag  # scenarios with two agents in the zone at some step
    c = batch_counts(got, junctions.valid)
    assert (c.leader_misses, c.leader_false, c.collision_misses, c.collision_false) == (0, 0, 0, 0), c


def _stalled_car_case():
    """The constant-speed ego (x = 70 m, 10 m/s) drives into a car stalled where a crossing
    road (x = 100 m, along +y) meets its lane; eight cars ahead of the ego on its lane put
    the stalled car nine places after the ego in the sorted order, beyond the window."""
    centers = np.array([[[0.0, 0.0], [400.0, 0.0]], [[100.0, -200.0], [100.0, 200.0]]])
    xy = [(70.0, 0.0)] + [(110.0 + 12.0 * k, 0.0) for k in range(8)] + [(100.0, 0.0)]
    heading = [0.0] * 9 + [np.pi / 2]
    speed = [10.0] * 9 + [0.0]
    idm = {k: np.full(10, v, np.float32) for k, v in IDM_DEFAULTS.items()}
    idm["v0"][9] = 0.01  # it stays where it stalled
    return make_scenario(xy, heading, speed, [0] * 9 + [1], centers, [3.6, 3.6], ego=0, idm=IDMParams(**idm))


def test_a_crossing_collision_beyond_the_window_is_found_by_the_zone():
    batch = pad_and_stack([_stalled_car_case()] * 2, num_agents=16)
    config = SimConfig(num_steps=STEPS, policy=CONSTANT)
    got = jax.device_get(simulate(batch, None, config))
    ref = jax.device_get(simulate(batch, None, config.with_search(neighbours="all_pairs")))
    assert not np.asarray(got.window_overflow).any(), "no fallback: the zone found the pair"
    assert bool(got.ego_collided[0]) and int(got.collided_with[0]) == 9
    for name in ("collision_step", "collided_with", "agents_collided", "collision_pairs", "min_ttc_s"):
        assert np.asarray(getattr(got, name)).tobytes() == np.asarray(getattr(ref, name)).tobytes(), name


def _line(p, u, length=200.0):
    p, u = np.asarray(p, np.float32), np.asarray(u, np.float32)
    return np.stack([p - length * u, p + length * u, p + length * u])  # padded by the last point


def test_crossing_geometry_against_the_closed_form():
    angle = np.radians(60.0)
    east, slanted = (1.0, 0.0), (np.cos(angle), np.sin(angle))
    # two parallel lanes 3.5 m apart (y = 0, y = 3.5) crossed by a slanted road through (10, 0)
    centers = jnp.asarray(np.stack([_line((0, 0), east), _line((0, 3.5), east), _line((10, 0), slanted)]))
    ok = jnp.sum(jnp.square(centers[:, 1:] - centers[:, :-1]), axis=-1) > 1e-12
    lines = exact.route_lines(centers, ok)
    assert np.asarray(lines.crossing).tolist() == [
        [False, False, True],
        [False, False, True],
        [True, True, False],
    ]
    sep = exact.route_separation(lines)
    groups = exact.route_groups(sep, jnp.ones(3, bool), exact.GROUP_SEPARATION, lines.crossing)
    assert np.asarray(groups).tolist() == [0.0, 1.0, 2.0]
    geo = junction.crossings(lines, groups, jnp.ones(3, bool))
    # crossing points (10, 0) and (10 + 3.5 / tan 60, 3.5): centre halfway, r0 half their distance
    second = np.array([10.0 + 3.5 / np.tan(angle), 3.5])
    centre = (np.array([10.0, 0.0]) + second) / 2
    np.testing.assert_allclose([float(geo.centre_x), float(geo.centre_y)], centre, atol=1e-4)
    np.testing.assert_allclose(float(geo.r0), np.linalg.norm(second - centre), atol=1e-4)
    np.testing.assert_allclose(float(geo.sin_min), np.sin(angle), atol=1e-6)
    # a lane-change road is one group: nothing crosses between groups
    one = exact.route_groups(sep, jnp.ones(3, bool), np.inf, lines.crossing)
    assert float(junction.crossings(lines, one, jnp.ones(3, bool)).r0) == -np.inf


def test_highway_results_do_not_depend_on_intersections_in_the_batch():
    cfg = FamilyConfig(num_agents=32, steps=20)
    highway = [generate("highway", i, cfg).scenario for i in range(2)]
    crossing = [generate("intersection", i, cfg).scenario for i in range(2)]
    config = SimConfig(num_steps=20)
    alone = jax.device_get(
        simulate(pad_and_stack(highway + highway[:1], num_agents=32), idm_policy(), config)
    )
    mixed = jax.device_get(
        simulate(pad_and_stack(highway[:1] + crossing, num_agents=32), idm_policy(), config)
    )
    for name in ("progress_m", "min_ttc_s", "max_jerk", "min_road_edge_distance_m", "collision_step"):
        assert (
            np.asarray(getattr(alone, name))[0].tobytes() == np.asarray(getattr(mixed, name))[0].tobytes()
        ), name


@pytest.mark.parametrize("bad", [0, -3, "big", True])
def test_junction_capacity_is_checked(bad):
    with pytest.raises(ValueError, match="junction_capacity"):
        SimConfig(search=SearchPlan(junction_capacity=bad))


@pytest.mark.parametrize("slots", [8, junction.TRIANGLE_SLOTS, 40])  # both ways of counting
def test_members_are_the_first_slots_in_order(slots):
    rng = np.random.default_rng(slots)
    for capacity in (2, 5, slots):
        for _ in range(20):
            inside = rng.random(slots) < rng.uniform(0.0, 0.5)
            members, fits = junction.members(jnp.asarray(inside), capacity)
            want = np.flatnonzero(inside)[:capacity]
            want = np.concatenate([want, np.full(capacity - len(want), -1)])
            assert np.array_equal(np.asarray(members), want)
            assert bool(fits) == (inside.sum() <= capacity)
