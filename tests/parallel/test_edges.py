"""The road-edge search (core.edges): each agent's corners against its own route, the ego and
the few agents near their corridor's edge against every lane. Its metrics equal those of every
corner against every lane bit for bit, also where more agents are near an edge than it
measures (those scenarios are simulated again, the fallback's second round), on one device
and on eight."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from drivesim.core import edges, traced_cache
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import SimConfig
from drivesim.parallel.executor import Executor, ExecutorConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

STEPS = 30
OWN = SimConfig(
    num_steps=STEPS, search=SearchPlan(edge_search="own_route")
)  # "auto" takes every lane with all pairs
EVERY = SimConfig(num_steps=STEPS, search=SearchPlan(edge_search="all_lanes"))
SHIFT = 1.6  # [m] sideways, towards the left of the agent's heading


def _shifted(batch, rows: dict[int, np.ndarray]):
    """``batch`` with the agents ``rows[b]`` (bool (N,)) of scenario b moved SHIFT to their left."""
    ag = batch.agents
    x, y = np.array(ag.x), np.array(ag.y)
    for b, moved in rows.items():
        h = np.asarray(ag.heading[b])
        x[b] = np.where(moved, x[b] - SHIFT * np.sin(h), x[b])
        y[b] = np.where(moved, y[b] + SHIFT * np.cos(h), y[b])
    return dataclasses.replace(batch, agents=dataclasses.replace(ag, x=x, y=y))


@pytest.fixture(scope="module")
def drifting():
    """8 highway scenarios of 16 agents: 0 and 5 with every non-ego agent shifted (more near an
    edge than the capacity), 2 with one agent of its leftmost lane shifted, the rest as generated."""
    cfg = FamilyConfig(num_agents=16, steps=STEPS)
    batch = pad_and_stack([generate("highway", 40 + i, cfg).scenario for i in range(8)], num_agents=16)
    valid, ego = np.asarray(batch.agents.valid), np.asarray(batch.ego_index)
    others = valid & (np.arange(16)[None, :] != ego[:, None])
    h, x, y = (np.asarray(v[2]) for v in (batch.agents.heading, batch.agents.x, batch.agents.y))
    left = np.where(others[2], -x * np.sin(h) + y * np.cos(h), -np.inf)  # across the road
    one = np.arange(16) == np.argmax(left)  # on the leftmost lane: shifted off the road
    return _shifted(batch, {0: others[0], 5: others[5], 2: one})


def _host(metrics):
    return jax.tree_util.tree_map(np.asarray, metrics)


SKIP = ("window_overflow",)  # it records the fallback, which the two searches take differently


def test_own_route_equals_every_lane(drifting, fma_free, assert_bitwise):
    own = _host(simulate(drifting, idm_policy(), OWN))
    every = _host(simulate(drifting, idm_policy(), EVERY))
    assert_bitwise(own, every, SKIP)
    # more agents off the road than the capacity: only the fallback's second round gets them
    assert max(every.agents_offroad[[0, 5]]) > edges.capacity(16)
    assert every.agents_offroad[2] >= 1, "the one shifted agent must leave the road"
    assert set(np.flatnonzero(every.window_overflow)) <= set(np.flatnonzero(own.window_overflow))


def test_only_crowded_scenarios_are_simulated_again(drifting, fma_free, assert_bitwise):
    """With all pairs the window proves nothing, so the flag records the edges alone."""
    own = _host(simulate(drifting, idm_policy(), OWN.with_search(neighbours="all_pairs")))
    every = _host(simulate(drifting, idm_policy(), EVERY.with_search(neighbours="all_pairs")))
    assert_bitwise(own, every, SKIP)
    assert not every.window_overflow.any()
    assert sorted(np.flatnonzero(own.window_overflow)) == [0, 5]  # one agent near an edge fits


def test_eight_devices_rerun_their_own_crowded_scenarios(drifting, fma_free, assert_bitwise):
    every = _host(simulate(drifting, idm_policy(), EVERY))
    got = _host(Executor(ExecutorConfig(devices=8), OWN).simulate(drifting, idm_policy()))
    assert_bitwise(got, every, SKIP)


def test_no_capacity_reruns_every_scenario_near_an_edge(drifting, fma_free, assert_bitwise, monkeypatch):
    monkeypatch.setattr(edges, "capacity", lambda agents: 0)
    monkeypatch.setenv(traced_cache.ENV, "off")  # traced with the patch, kept nowhere
    config = dataclasses.replace(
        OWN.with_search(neighbours="all_pairs"), num_steps=STEPS - 1
    )  # traced with the patch
    got = _host(simulate(drifting, idm_policy(), config))
    want = _host(simulate(drifting, idm_policy(), config.with_search(edge_search="all_lanes")))
    assert_bitwise(got, want, SKIP)
    assert sorted(np.flatnonzero(got.window_overflow)) == [0, 2, 5]


def test_the_accelerators_capacity_on_the_cpu(drifting, fma_free, assert_bitwise, monkeypatch):
    """The program an accelerator runs on roads of many segments (all pairs, own routes, up to
    ACCELERATOR_CAPACITY near agents picked in one pass), traced here on the CPU."""
    monkeypatch.setattr(edges, "CPU_CAPACITY", edges.ACCELERATOR_CAPACITY)
    monkeypatch.setenv(traced_cache.ENV, "off")  # traced with the patch, kept nowhere
    assert edges.capacity(16, "cpu") == edges.capacity(16, "gpu") == 4
    config = dataclasses.replace(
        OWN.with_search(neighbours="all_pairs"), num_steps=STEPS - 2
    )  # traced with the patch
    got = _host(simulate(drifting, idm_policy(), config))
    want = _host(simulate(drifting, idm_policy(), config.with_search(edge_search="all_lanes")))
    assert_bitwise(got, want, SKIP)
    assert sorted(np.flatnonzero(got.window_overflow)) == [0, 5]


@pytest.mark.parametrize("cap", [0, 1, 2, 3, 4, 7])
def test_near_slots_are_the_first_near_agents(cap):
    rng = np.random.default_rng(cap)
    for share in (0.0, 0.1, 0.5, 1.0):
        near = rng.random(16) < share
        want = list(np.flatnonzero(near)[:cap]) + [16] * max(0, cap - int(near.sum()))
        assert list(np.asarray(edges._near_slots(jax.numpy.asarray(near), cap))) == want


def test_edge_search_is_checked():
    with pytest.raises(ValueError, match="SearchPlan.edge_search"):
        SimConfig(search=SearchPlan(edge_search="corners"))
