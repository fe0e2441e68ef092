"""The neighbour and road-edge searches a batch gets where SimConfig leaves them to the
platform (``neighbours="auto"``, ``edge_search="auto"``, the defaults).

Every choice is exact: the window search is proven exact per step, and a scenario it cannot
prove is simulated again with all pairs. On the CPU they give the same metrics bit for bit
(tests/core/test_search_choice.py); GPU programs are not covered by that guarantee
(drivesim.parallel.determinism). They differ in speed:

- On the CPU a step costs its work. The sorted-window search with its exact fallback does
  O(N K) work per agent-step against all pairs' O(N^2), so it is faster from 32 agents on,
  but at 8 agents, where K = 6 covers nearly every pair anyway, all pairs skip the window's
  proof and direct searches and run faster.
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


def on_cpu(platform: str | None = None) -> bool:
    """Whether ``platform`` (None: JAX's default backend) is the CPU; the platform-dependent
    choices (searches, fallback chunks, edge capacity, cache blocks) ask this."""
    return (platform or jax.default_backend()) == "cpu"


def neighbour_search(
    config: SimConfig, agents: int, platform: str | None = None, road_segments: int = 1
) -> str:
    """SimConfig.neighbours for scenarios of ``agents`` slots and ``road_segments`` (lane
    slots x segments per lane) on ``platform`` (None: JAX's default backend): "auto" is
    "all_pairs" up to CPU_ALL_PAIRS_AGENTS agents on the CPU and ACCELERATOR_ALL_PAIRS_AGENTS
    on an accelerator, or on a road of more than RECORDED_MAP_SEGMENTS segments; "window"
    otherwise."""
    if config.neighbours != "auto":
        return config.neighbours
    if road_segments > RECORDED_MAP_SEGMENTS:
        return "all_pairs"
    limit = CPU_ALL_PAIRS_AGENTS if on_cpu(platform) else ACCELERATOR_ALL_PAIRS_AGENTS
    return "all_pairs" if agents <= limit else "window"


def resolved(
    config: SimConfig, agents: int, platform: str | None = None, road_segments: int = 1
) -> SimConfig:
    """``config`` with "auto" searches replaced by the platform's: :func:`neighbour_search`;
    on an accelerator every lane's road edges where the neighbours come from all pairs and
    the road has at most ACCELERATOR_ALL_LANES_SEGMENTS ``road_segments`` (lane slots x
    segments per lane; nothing is left to prove, so no fallback runs), each corner against
    its own route elsewhere (on the CPU every lane's edges cost more than the own-route
    search and its rare fallback)."""
    found = neighbour_search(config, agents, platform, road_segments)
    edge_search = config.edge_search
    if edge_search == "auto":
        few = road_segments <= ACCELERATOR_ALL_LANES_SEGMENTS
        every_lane = found == "all_pairs" and few and not on_cpu(platform)
        edge_search = "all_lanes" if every_lane else "own_route"
    if (found, edge_search) == (config.neighbours, config.edge_search):
        return config
    return dataclasses.replace(config, neighbours=found, edge_search=edge_search)


def of_scenarios(config: SimConfig, scenarios) -> SimConfig:
    """:func:`resolved` for a batch of Scenarios on JAX's default backend."""
    return resolved(config, scenarios.num_agents, road_segments=scenarios.num_road_segments)
