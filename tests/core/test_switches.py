"""Search switches fixed when a program is built (drivesim.core.switches): the same metrics
bit for bit as the per-step conditionals, two conditionals fewer in the program; a search a
scenario needs but its program leaves out sends it to the exact fallback; every synthetic
family declares each search its scenarios need, and the bent-route search sized by the batch
sends a scenario with more agents on bent routes than its rows to the fallback."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from trace_count import conditionals

from drivesim.core import bends, neighbours, switches
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import rollout_batch, simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import SimConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.families import family
from drivesim.scenarios.synthetic import FamilyConfig, generate

STEPS = 12
CONFIG = SimConfig(
    num_steps=STEPS, search=SearchPlan(neighbours="window")
)  # switches are the window search's
AGENTS = 16
conditional = jax.jit(rollout_batch, static_argnames=("config", "devices", "searches", "exact"))


def _batch(name: str, count: int = 6):
    cfg = FamilyConfig(num_agents=AGENTS, steps=STEPS)
    return pad_and_stack([generate(name, i, cfg).scenario for i in range(count)], num_agents=AGENTS)


@pytest.mark.parametrize("name", ["merge", "intersection_turns"])
def test_fixed_switches_equal_the_conditionals(name, assert_bitwise):
    # stores through the identity reduction only: a store in a search's conditional takes
    # it anyway, the same store on a fixed path a conditional of its own (core.materialize)
    config = CONFIG.with_search(branch_stores=False)
    batch, policy = _batch(name), idm_policy()
    per_step = conditional.lower(batch, policy, config=config, exact=False).compile()
    fixed = simulate.lower(batch, policy, config).compile()  # the fast pass's program
    want, got = per_step(batch, policy), fixed(batch, policy)
    assert_bitwise(jax.device_get(got), jax.device_get(want))
    # two conditionals fewer: the zone's and the bent routes' in the step (reset searches
    # all pairs, under no switch)
    assert conditionals(fixed.as_text()) == conditionals(per_step.as_text()) - 2
    on = switches.of_batch(batch, config)
    assert (on.zone, on.bends) == family(name).SEARCHES
    assert isinstance(on.bend_rows, int) and 2 <= on.bend_rows < AGENTS  # sized by the batch


def test_a_search_left_out_sends_the_scenario_to_the_exact_fallback(assert_bitwise):
    batch, policy = _batch("intersection_turns"), idm_policy()
    want = jax.device_get(conditional(batch, policy, config=CONFIG))
    got = jax.device_get(conditional(batch, policy, config=CONFIG, searches=switches.fixed(False, False)))
    assert not np.asarray(want.window_overflow).any()
    assert np.asarray(got.window_overflow).all()  # every turning scenario needs both searches
    assert_bitwise(got, want, skip=("window_overflow",))


def test_more_bent_agents_than_the_search_has_rows_go_to_the_exact_fallback(assert_bitwise):
    batch, policy = _batch("merge"), idm_policy()
    want = jax.device_get(simulate(batch, policy, CONFIG))
    narrow = switches.fixed(False, True, most_bent=2)
    got = jax.device_get(conditional(batch, policy, config=CONFIG, searches=narrow))
    ramp = np.asarray(jax.vmap(lambda one: neighbours.route_layout(one, CONFIG))(batch).on_bent).sum(axis=1)
    assert not np.asarray(want.window_overflow).any()
    np.testing.assert_array_equal(np.asarray(got.window_overflow), ramp > 2)
    assert (ramp > 2).any() and (ramp <= 2).any()
    assert_bitwise(got, want, skip=("window_overflow",))


def test_switches_are_not_fixed_without_data_nor_on_the_all_pairs_path():
    batch = _batch("merge", count=2)
    seen = []
    jax.jit(lambda b: seen.append(switches.of_batch(b, CONFIG)) or b.valid)(batch)
    assert seen == [None]
    shapes = jax.tree_util.tree_map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype), batch)
    assert switches.of_batch(shapes, CONFIG) is None  # shapes only: lowered with per-step switches
    assert (
        switches.of_batch(batch, SimConfig(num_steps=STEPS, search=SearchPlan(neighbours="all_pairs")))
        is None
    )
    assert switches.unsearched(None, None, None) is None
    assert not switches.is_fixed(neighbours.SearchesOn(zone=np.bool_(True), bends=True))


@pytest.mark.parametrize("name", ["highway", "merge", "intersection", "intersection_turns"])
def test_every_family_declares_the_searches_its_scenarios_need(name):
    declared = family(name).SEARCHES
    for agents in (8, 32):
        cfg = FamilyConfig(min_agents=2, max_agents=agents, steps=STEPS)
        batch = pad_and_stack([generate(name, i, cfg).scenario for i in range(24)], num_agents=agents)
        need = switches.of_batch(batch, CONFIG)
        assert need is not None
        assert (need.zone <= declared[0]) and (need.bends <= declared[1]), (agents, need)
        most_bent = getattr(family(name), "most_bent", None)
        if need.bends and most_bent is not None:  # the declared bound covers the batch
            assert need.bend_rows <= bends.search_rows(most_bent(agents)), (agents, need)
