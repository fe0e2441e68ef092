"""The neighbour and road-edge searches a batch gets where SimConfig leaves them to the
platform (``neighbours="auto"``, ``edge_search="auto"``, the defaults).

Every choice is exact: the window search is proven exact per step, and a scenario it cannot
prove is simulated again with all pairs. On the CPU they give the same metrics bit for bit
(tests/core/test_search_choice.py); GPU programs are not covered by that guarantee
(drivesim.parallel.determinism). They differ in speed:

- On the CPU a step costs its work. The sorted-window search with its exact fallback does
  O(N K) work per agent-step against all pairs' O(N^2): all pairs took 1.5x the time at 32
  agents and 3.8x at 128 (BENCHMARKS.md, "GPU: the exact engine on one H200", its CPU table).
- On an accelerator, at the batch sizes drivesim runs, a step costs the latency of its
  kernels more than their work: at 32 agents all pairs, with no proof, direct searches or
  fallback (a whole serial rollout of the flagged scenarios), ran 1.3-2.7x faster than the
  window search on an H200; from 64 agents on the window search was faster (BENCHMARKS.md,
  "GPU: the platform's searches").

``resolved`` is read when a batch's program is built (its platform is JAX's default backend
then), so a configuration means the same on every machine and in every campaign ledger.
"""

from __future__ import annotations

import dataclasses

import jax

from drivesim.core.types import SimConfig

# Most agent slots per scenario for which "auto" takes all pairs on an accelerator; above it
# the window search (O(N K) per agent, against all pairs' O(N^2)).
ACCELERATOR_ALL_PAIRS_AGENTS = 32


def neighbour_search(config: SimConfig, agents: int, platform: str | None = None) -> str:
    """SimConfig.neighbours for scenarios of ``agents`` slots on ``platform`` (None: JAX's
    default backend): "auto" is "window" on the CPU, "all_pairs" on an accelerator up to
    ACCELERATOR_ALL_PAIRS_AGENTS agents."""
    if config.neighbours != "auto":
        return config.neighbours
    on_cpu = (platform or jax.default_backend()) == "cpu"
    return "window" if on_cpu or agents > ACCELERATOR_ALL_PAIRS_AGENTS else "all_pairs"


def resolved(config: SimConfig, agents: int, platform: str | None = None) -> SimConfig:
    """``config`` with "auto" searches replaced by the platform's: :func:`neighbour_search`,
    and every lane's road edges where the neighbours come from all pairs (nothing is left to
    prove, so no fallback runs), each corner against its own route elsewhere."""
    found = neighbour_search(config, agents, platform)
    edge_search = config.edge_search
    if edge_search == "auto":
        edge_search = "all_lanes" if found == "all_pairs" else "own_route"
    if (found, edge_search) == (config.neighbours, config.edge_search):
        return config
    return dataclasses.replace(config, neighbours=found, edge_search=edge_search)
