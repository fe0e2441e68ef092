"""The searches a batch gets where its SearchPlan leaves them to the platform
(``neighbours="auto"``, ``edge_search="auto"``, the capacities and cache blocks: the defaults).

Every choice is exact: the window search is proven exact per step, and a scenario it cannot
prove is simulated again with all pairs. On the CPU they give the same metrics bit for bit
(tests/core/test_search_choice.py); GPU programs are not covered by that guarantee
(drivesim.parallel.determinism). They differ in speed:

- On the CPU a step costs its work. The sorted-window search with its exact fallback does
  O(N K) work per agent-step against all pairs' O(N^2), so it is faster from 32 agents on,
  but at 8 agents, where K = 6 covers nearly every pair anyway, all pairs skip the window's
  proof and direct searches and run faster. Where a batch needs both direct searches (the
  junction zone and the bent routes: turning intersections), its window step carries both,
  their proof and a fallback, and all pairs are faster up to 32 agents too.
- On an accelerator, at the batch sizes drivesim runs, a step costs the latency of its
  kernels more than their work: up to 32 agents all pairs, with no proof, direct searches or
  fallback (a whole serial rollout of the flagged scenarios), run faster than the window
  search; from 64 agents on the window search is faster.
- On recorded maps (more than RECORDED_MAP_SEGMENTS lane segments: WOMD, Argoverse 2,
  CommonRoad) agents cross, turn and park across many bent lanes, the window was proven on
  none of the WOMD and AV2 files and on 2 of the 4 CommonRoad ones, and each unproven
  scenario ran a second time: all pairs from the start, on every platform.

``resolved`` is read when a batch's program is built (its platform is JAX's default backend
then), so a configuration means the same on every machine and in every campaign ledger.
"""

from __future__ import annotations

import dataclasses

import jax

from drivesim.core.types import SimConfig

# Most agent slots per scenario for which "auto" takes all pairs; above them the window search
# (O(N K) work per agent against all pairs' O(N^2)). On the CPU all pairs with each corner
# against its own route ran faster than the window search at 8 agents on the four synthetic
# families (benchmarks/engine_variants.py).
CPU_ALL_PAIRS_AGENTS = 8
# The same where the batch's fixed switches (core.switches) hold both the junction zone and
# the bent-route search. W32 turning intersections on the CPU: all pairs 0.89x the time of
# the window search, and half its compile (no direct searches, no fallback to compile); with
# one of the two (merge, the straight intersection) all pairs took 1.29 - 1.48x the time.
CPU_BOTH_SEARCHES_AGENTS = 32
ACCELERATOR_ALL_PAIRS_AGENTS = 32
# Road segments (lane slots x segments per lane) above which a road is a recorded map: "auto"
# takes all pairs whatever the agents (see above), and core.edge_cache keeps road-edge
# candidates per agent. Every synthetic family has fewer (the turning intersection 112).
RECORDED_MAP_SEGMENTS = 256
# Most road segments (lane slots x segments per lane) for which an accelerator's all-pairs
# path measures every corner against every lane; above, each corner against its own route
# (core.edges). On an H200 at 32 agents, every lane was 1.36x faster on merge (8 lanes of 3
# segments, where the own-route search flagged 12 of 4096 scenarios for the fallback), and
# the own-route search 1.13x faster on the turning intersection (16 routes of 7 segments).
ACCELERATOR_ALL_LANES_SEGMENTS = 32
# Agents per device per cache block where SearchPlan.block_agents is "auto" on CPU: the W32
# and W128 sweet spot on a 2-core CPU (benchmarks/engine.py; core.blocking).
CPU_BLOCK_AGENTS = 16384
# Real lane segments a recorded map's road-edge table keeps where SearchPlan.map_segments is
# "auto" (core.edge_cache.prepare): the files in shared/data hold 64 - 359 in 1,024 - 3,968
# padded slots; a map with more is simulated again with every slot.
MAP_SEGMENTS = 512


def on_cpu(platform: str | None = None) -> bool:
    """Whether ``platform`` (None: JAX's default backend) is the CPU; the platform-dependent
    choices (searches, fallback chunks, edge capacity, cache blocks) ask this."""
    return (platform or jax.default_backend()) == "cpu"


def both_searches(searches) -> bool:
    """Whether ``searches`` (core.neighbours.SearchesOn fixed as Python bools, or None)
    holds both the junction zone and the bent-route search."""
    return searches is not None and searches.zone is True and searches.bends is True


def neighbour_search(
    config: SimConfig, agents: int, platform: str | None = None, road_segments: int = 1, searches=None
) -> str:
    """SearchPlan.neighbours for scenarios of ``agents`` slots and ``road_segments`` (lane
    slots x segments per lane) on ``platform`` (None: JAX's default backend): "auto" is
    "all_pairs" up to CPU_ALL_PAIRS_AGENTS agents on the CPU (CPU_BOTH_SEARCHES_AGENTS where
    the batch's fixed switches ``searches`` hold both direct searches) and
    ACCELERATOR_ALL_PAIRS_AGENTS on an accelerator, or on a road of more than
    RECORDED_MAP_SEGMENTS segments; "window" otherwise."""
    if config.search.neighbours != "auto":
        return config.search.neighbours
    if road_segments > RECORDED_MAP_SEGMENTS:
        return "all_pairs"
    limit = ACCELERATOR_ALL_PAIRS_AGENTS
    if on_cpu(platform):
        limit = CPU_BOTH_SEARCHES_AGENTS if both_searches(searches) else CPU_ALL_PAIRS_AGENTS
    return "all_pairs" if agents <= limit else "window"


def junction_capacity(config: SimConfig, agents: int) -> int:
    """SearchPlan.junction_capacity for scenarios of ``agents`` slots ("auto": 8 up to 32
    agents, 16 above; multiples of 8 vectorise best on the CPU)."""
    cap = config.search.junction_capacity
    return (8 if agents <= 32 else 16) if cap == "auto" else int(cap)


def bend_capacity(config: SimConfig, agents: int) -> int:
    """SearchPlan.bend_capacity for scenarios of ``agents`` slots ("auto": a quarter of the
    slots in multiples of 8, at least 16; 0 turns the search off)."""
    cap = config.search.bend_capacity
    return max(16, -(-agents // 32) * 8) if cap == "auto" else int(cap)


def map_segments(config: SimConfig) -> int | None:
    """SearchPlan.map_segments as core.edge_cache.prepare takes it ("auto": MAP_SEGMENTS)."""
    kept = config.search.map_segments
    return None if kept is None else MAP_SEGMENTS if kept == "auto" else int(kept)


def block_agents(block: int | str | None, platform: str | None = None) -> int | None:
    """Agents per device per cache block for SearchPlan.block_agents ``block`` on ``platform``:
    "auto" is CPU_BLOCK_AGENTS on the CPU and None (no blocking: accelerators want the
    largest batch) elsewhere."""
    if block == "auto":
        return CPU_BLOCK_AGENTS if on_cpu(platform) else None
    if isinstance(block, str):
        raise ValueError(f"block_agents: expected an int >= 1, 'auto' or None, got {block!r}")
    return block


def resolved(
    config: SimConfig, agents: int, platform: str | None = None, road_segments: int = 1, searches=None
) -> SimConfig:
    """``config`` with every "auto" of its SearchPlan replaced by the platform's choice for
    scenarios of ``agents`` slots and ``road_segments`` (lane slots x segments per lane)
    whose program fixes the switches ``searches`` (None: none fixed): the
    neighbour search (:func:`neighbour_search`); on an accelerator every lane's road edges
    where the neighbours come from all pairs and the road has at most
    ACCELERATOR_ALL_LANES_SEGMENTS segments (nothing is left to prove, so no fallback runs),
    each corner against its own route elsewhere (on the CPU every lane's edges cost more than
    the own-route search and its rare fallback); the capacities and cache blocks
    (:func:`junction_capacity`, :func:`bend_capacity`, MAP_SEGMENTS, :func:`block_agents`). The plan a
    program runs, as ledgers and benchmark records list it."""
    found = neighbour_search(config, agents, platform, road_segments, searches)
    edge_search = config.search.edge_search
    if edge_search == "auto":
        few = road_segments <= ACCELERATOR_ALL_LANES_SEGMENTS
        every_lane = found == "all_pairs" and few and not on_cpu(platform)
        edge_search = "all_lanes" if every_lane else "own_route"
    plan = config.search.replace(
        neighbours=found,
        edge_search=edge_search,
        junction_capacity=junction_capacity(config, agents),
        bend_capacity=bend_capacity(config, agents),
        map_segments=map_segments(config),
        block_agents=block_agents(config.search.block_agents, platform),
    )
    return config if plan == config.search else dataclasses.replace(config, search=plan)


def of_scenarios(config: SimConfig, scenarios, searches=None) -> SimConfig:
    """:func:`resolved` for a batch of Scenarios on JAX's default backend, its program's fixed
    switches ``searches`` (None: none fixed)."""
    segments = scenarios.num_road_segments
    return resolved(config, scenarios.num_agents, road_segments=segments, searches=searches)
