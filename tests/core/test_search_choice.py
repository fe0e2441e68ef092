"""The platform's searches (drivesim.core.search_choice): "auto" is all pairs up to
CPU_ALL_PAIRS_AGENTS agents (CPU_BOTH_SEARCHES_AGENTS where a batch needs both direct
searches) and the window search above, each corner against its own route, on the CPU;
all pairs up to ACCELERATOR_ALL_PAIRS_AGENTS agents on accelerators, with every lane's
edges on roads of up to ACCELERATOR_ALL_LANES_SEGMENTS segments. The CPU's default program
above the limit is the explicit window program, and every platform's program gives the same
metrics bit for bit."""

from __future__ import annotations

import jax
import pytest

from drivesim.core import search_choice, switches
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import SimConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

STEPS = 12
AUTO = SimConfig(num_steps=STEPS)
WINDOW = SimConfig(num_steps=STEPS, search=SearchPlan(neighbours="window", edge_search="own_route"))
LIMIT = search_choice.ACCELERATOR_ALL_PAIRS_AGENTS
CPU_LIMIT = search_choice.CPU_ALL_PAIRS_AGENTS


def _searches(config: SimConfig) -> tuple[str, str]:
    return config.search.neighbours, config.search.edge_search


@pytest.mark.parametrize(
    ("config", "agents", "platform", "want"),
    [
        (AUTO, CPU_LIMIT + 1, "cpu", ("window", "own_route")),
        (AUTO, CPU_LIMIT, "cpu", ("all_pairs", "own_route")),
        (AUTO, 8, "gpu", ("all_pairs", "all_lanes")),
        (AUTO, LIMIT, "tpu", ("all_pairs", "all_lanes")),
        (AUTO, LIMIT + 1, "gpu", ("window", "own_route")),
        (AUTO.with_search(neighbours="window"), 8, "gpu", ("window", "own_route")),
        (AUTO.with_search(neighbours="all_pairs"), 128, "cpu", ("all_pairs", "own_route")),
        (AUTO.with_search(neighbours="all_pairs"), 128, "gpu", ("all_pairs", "all_lanes")),
        (AUTO.with_search(edge_search="own_route"), 8, "gpu", ("all_pairs", "own_route")),
        (AUTO.with_search(neighbours="window_only"), 8, "gpu", ("window_only", "own_route")),
    ],
)
def test_auto_is_the_platforms_search(config, agents, platform, want):
    assert _searches(search_choice.resolved(config, agents, platform)) == want


@pytest.mark.parametrize(
    ("segments", "platform", "want"),
    [
        (search_choice.ACCELERATOR_ALL_LANES_SEGMENTS, "gpu", "all_lanes"),
        (search_choice.ACCELERATOR_ALL_LANES_SEGMENTS + 1, "gpu", "own_route"),
        (16 * 7, "cpu", "own_route"),
    ],
)
def test_roads_of_many_segments_take_their_own_routes(segments, platform, want):
    config = search_choice.resolved(AUTO, CPU_LIMIT, platform, road_segments=segments)
    assert _searches(config) == ("all_pairs", want)
    turns = _batch("intersection_turns", count=2)
    assert turns.num_road_segments == 16 * 7  # route slots x segments of their 8 points
    assert _searches(search_choice.of_scenarios(AUTO, turns)) == ("window", "own_route")  # this CPU


def test_named_searches_are_left_as_they_are_and_every_auto_is_filled():
    plan = search_choice.resolved(WINDOW, 8, "gpu").search
    assert (plan.neighbours, plan.edge_search) == ("window", "own_route")
    assert (plan.junction_capacity, plan.bend_capacity, plan.block_agents) == (8, 16, None)
    cpu = search_choice.resolved(AUTO, 128, "cpu").search
    assert (cpu.neighbours, cpu.junction_capacity, cpu.bend_capacity, cpu.block_agents) == (
        "window",
        16,
        32,
        16384,
    )
    resolved = search_choice.resolved(AUTO, 128, "cpu")
    assert search_choice.resolved(resolved, 128, "cpu") is resolved  # a resolved plan is its own
    assert "auto" not in resolved.search.record().values()
    with pytest.raises(ValueError, match="SearchPlan.neighbours: expected auto"):
        SimConfig(search=SearchPlan(neighbours="grid"))
    assert resolved.search.map_segments == search_choice.MAP_SEGMENTS
    assert search_choice.resolved(AUTO.with_search(map_segments=None), 128, "cpu").search.map_segments is None
    with pytest.raises(ValueError, match="SearchPlan.map_segments: expected an int >= 1"):
        SearchPlan(map_segments=0)


def _batch(name: str, agents: int = 16, count: int = 5):
    cfg = FamilyConfig(num_agents=agents, steps=STEPS)
    return pad_and_stack([generate(name, i, cfg).scenario for i in range(count)], num_agents=agents)


def test_the_cpu_default_is_the_window_program_above_the_limit():
    batch, policy = _batch("highway"), idm_policy()
    text = lambda config: simulate.lower(batch, policy, config).as_text(debug_info=False)  # noqa: E731
    assert text(AUTO) == text(WINDOW)
    assert text(AUTO) != text(search_choice.resolved(AUTO, 16, "gpu"))
    small = _batch("highway", agents=CPU_LIMIT)
    pairs = WINDOW.with_search(neighbours="all_pairs")
    assert simulate.lower(small, policy, AUTO).as_text() == simulate.lower(small, policy, pairs).as_text()


@pytest.mark.parametrize("name", ["highway", "merge", "intersection_turns"])
def test_every_platforms_search_gives_the_same_metrics(name, assert_bitwise):
    """The program an accelerator runs by default, and the CPU's at 8 agents, run here on the
    CPU, against the CPU's window search."""
    batch, policy = _batch(name), idm_policy()
    accelerators = search_choice.resolved(AUTO, 16, "gpu", road_segments=batch.num_road_segments)
    want = jax.device_get(simulate(batch, policy, WINDOW))
    got = jax.device_get(simulate(batch, policy, accelerators))
    assert_bitwise(got, want, ("window_overflow",))
    assert not got.window_overflow.any()  # all pairs prove the neighbours, no step crowded an edge
    small = _batch(name, agents=CPU_LIMIT)
    want = jax.device_get(simulate(small, policy, WINDOW))
    assert_bitwise(jax.device_get(simulate(small, policy, AUTO)), want, ("window_overflow",))


def test_batches_that_need_both_direct_searches_take_all_pairs_on_the_cpu():
    """Turning intersections (the junction zone and the bent routes) take all pairs up to
    CPU_BOTH_SEARCHES_AGENTS on the CPU; one of the two searches, or more agents, keeps the
    window; accelerators are unchanged."""
    both_limit = search_choice.CPU_BOTH_SEARCHES_AGENTS
    found = lambda agents, zone, bends, platform="cpu": search_choice.neighbour_search(  # noqa: E731
        AUTO, agents, platform, searches=switches.fixed(zone, bends)
    )
    assert found(both_limit, True, True) == "all_pairs"
    assert (found(both_limit + 1, True, True), found(both_limit, True, False)) == ("window", "window")
    assert (found(both_limit, False, True), found(64, True, True, "gpu")) == ("window", "window")
    assert search_choice.neighbour_search(AUTO, both_limit, "cpu") == "window"  # switches not fixed
    batch, policy = _batch("intersection_turns"), idm_policy()
    pairs = WINDOW.with_search(neighbours="all_pairs")
    assert simulate.lower(batch, policy, AUTO).as_text() == simulate.lower(batch, policy, pairs).as_text()
