"""Agents on bent routes (drivesim.core.bends): their pairs are searched directly, so merge
ramps and turning routes keep the sorted window for the straight routes and stay exact.

Checked against the float64 all-pairs reference of drivesim.bench.fidelity; a direct search
broken on purpose misses what the reference finds; too many bent agents fall back; a
collision with a bent agent beyond the window is found without the fallback."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.bench.fidelity import batch_counts, delivered_traces
from drivesim.core import bends
from drivesim.core.policies import CONSTANT, idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import IDM_DEFAULTS, IDMParams, SimConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

from .builders import make_scenario

STEPS = 30
CONFIG = SimConfig(num_steps=STEPS, policy=CONSTANT)  # the constant ego runs into traffic
EXACT = (0, 0, 0, 0)


def _batch(family: str, ids, agents: int = 32):
    cfg = FamilyConfig(num_agents=agents, steps=STEPS)
    return pad_and_stack([generate(family, i, cfg).scenario for i in ids], num_agents=agents)


def _errors(c):
    return (c.leader_misses, c.leader_false, c.collision_misses, c.collision_false)


@pytest.fixture(scope="module")
def turns():
    return _batch("intersection_turns", range(6))


@pytest.mark.parametrize("family", ["intersection_turns", "merge"])
def test_bent_routes_are_exact_and_mostly_without_the_fallback(family, turns):
    batch = turns if family == "intersection_turns" else _batch(family, range(6))
    _win, got, flag = delivered_traces(batch, None, CONFIG)
    c = batch_counts(got, batch.valid)
    assert c.leader_relations > 1000, c
    assert _errors(c) == EXACT and c.pair_count_errors == 0, c
    assert flag.sum() <= 2, flag  # without the direct search every scenario fell back
    old = jax.device_get(simulate(batch, None, CONFIG.with_search(bend_capacity=0)))
    assert np.asarray(old.window_overflow).sum() > flag.sum()


def test_a_broken_direct_search_is_caught_by_the_reference(turns, monkeypatch):
    # bent agents no longer look for their own leaders: the window alone misses them
    def blind(a, proj, z, extra):
        n = a.x.shape[0]
        return jnp.full(n, jnp.inf), jnp.full(n, -1, jnp.int32), jnp.zeros(n), jnp.zeros(n)

    monkeypatch.setattr(bends, "_own_leaders", blind)
    broken = CONFIG.with_search(bend_capacity=31)  # a config not compiled before
    win, _got, _flag = delivered_traces(turns, None, broken)
    assert batch_counts(win, turns.valid).leader_misses > 0


def test_too_many_bent_agents_fall_back_exactly(turns):
    small = CONFIG.with_search(bend_capacity=1)
    _win, got, flag = delivered_traces(turns, None, small)
    assert flag.sum() >= 4, flag  # more than one turning agent in most scenarios
    assert _errors(batch_counts(got, turns.valid)) == EXACT


def _stalled_on_ramp_case():
    """The constant-speed ego (x = 70 m, 10 m/s) drives into a car stalled where a ramp (a
    bent route) joins its lane; eight cars ahead of the ego on its lane put the stalled car,
    whose route is a group of its own, nine places after the ego in the sorted order."""
    lane = [[0.0, 0.0], [400.0, 0.0], [400.0, 0.0]]  # straight, padded by its last point
    ramp = [[40.0, -30.0], [100.0, 0.0], [400.0, 0.0]]
    centers = np.array([lane, ramp])
    xy = [(70.0, 0.0)] + [(110.0 + 12.0 * k, 0.0) for k in range(8)] + [(100.0, 0.0)]
    speed = [10.0] * 9 + [0.0]
    idm = {k: np.full(10, v, np.float32) for k, v in IDM_DEFAULTS.items()}
    idm["v0"][9] = 0.01  # it stays where it stalled
    routes = [0] * 9 + [1]
    return make_scenario(xy, [0.0] * 10, speed, routes, centers, [3.6, 3.6], ego=0, idm=IDMParams(**idm))


def test_a_collision_with_a_bent_agent_beyond_the_window_is_found_directly():
    batch = pad_and_stack([_stalled_on_ramp_case()] * 2, num_agents=16)
    got = jax.device_get(simulate(batch, None, CONFIG))
    ref = jax.device_get(simulate(batch, None, CONFIG.with_search(neighbours="all_pairs")))
    assert not np.asarray(got.window_overflow).any(), "no fallback: the direct search found the pair"
    assert bool(got.ego_collided[0]) and int(got.collided_with[0]) == 9
    for name in ("collision_step", "collided_with", "agents_collided", "collision_pairs", "min_ttc_s"):
        assert np.asarray(getattr(got, name)).tobytes() == np.asarray(getattr(ref, name)).tobytes(), name


def test_idm_results_equal_the_fallback_bit_for_bit(turns):
    got = jax.device_get(simulate(turns, idm_policy(), dataclasses.replace(CONFIG, policy=None)))
    ref = jax.device_get(
        simulate(turns, idm_policy(), SimConfig(num_steps=STEPS, search=SearchPlan(neighbours="all_pairs")))
    )
    for name in ("progress_m", "min_ttc_s", "max_jerk", "collision_step", "min_road_edge_distance_m"):
        assert np.asarray(getattr(got, name)).tobytes() == np.asarray(getattr(ref, name)).tobytes(), name


@pytest.mark.parametrize("bad", [-1, "big", True, 2.5])
def test_bend_capacity_is_checked(bad):
    with pytest.raises(ValueError, match="bend_capacity"):
        SimConfig(search=SearchPlan(bend_capacity=bad))
