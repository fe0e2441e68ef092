"""Road edges of one step: the ego's signed edge distance and which agents have a box corner
off the drivable area, exact, without testing every corner against every lane.

The drivable area is the union of the lane corridors (core.road.edge_distance), so a corner
inside its own route's corridor is on the road whatever the other lanes are: the area's
signed distance is at least that corridor's depth. Each step

- every agent's four corners are measured against its own route only (S segments);
- the agents with a corner less than ``MARGIN`` inside that corridor (near a route's end,
  drifting) are the few whose corners are measured against every lane, up to
  :func:`capacity` of them;
- the ego's corners are always measured against every lane, for its exact
  ``min_road_edge_distance_m``.

A step with more such agents than the capacity is not certified, and the scenario is
simulated again with every corner against every lane (``SearchPlan.edge_search =
"all_lanes"``, core.fallback), so every result stays exact. With lane changes every
corner is measured against every lane (:func:`all_lanes`). Measured on the synthetic
families (64 scenarios x 80 steps, 32 and 128 agents), at most one agent per step was near
its corridor's edge, while the all-lanes search took most of a turning intersection's
window pass (benchmarks/edges.py). On large maps (recorded traffic) the agents near their
corridor's edge are many, and core.edge_cache decides most of them from a few candidate
segments each; the undecided ones take the every-lane slots. Every function works on one
scenario.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from drivesim.core import edge_cache, junction, road
from drivesim.core.materialize import materialize
from drivesim.core.observation import ego_values
from drivesim.core.search_choice import on_cpu
from drivesim.core.types import Array, SimConfig

MARGIN = 0.01  # [m] own-corridor depth below which an agent is measured against every lane


class EdgeSearch(NamedTuple):
    """ego_edge () float32: signed edge distance of the ego's worst corner (< 0: off-road);
    off (N,) bool: a present agent with a corner off the drivable area (the ego included);
    fits () bool: every agent near its own corridor's edge was measured (else not exact);
    candidates: the agents' core.edge_cache rows after the step (None on small maps)."""

    ego_edge: Array
    off: Array
    fits: Array
    candidates: Array | None = None


# Agents near their corridor's edge measured against every lane per step, by platform. On the
# CPU a step costs its work, and at most one agent per step was near (above). On an
# accelerator (where the own-route search runs only on roads of many segments,
# core.search_choice) a fallback chunk is a whole serial rollout: with 2, 3 of 4096
# turning-intersection scenarios fell back on an H200, with 4 none.
CPU_CAPACITY = 2
ACCELERATOR_CAPACITY = 4


def capacity(agents: int, platform: str | None = None) -> int:
    """Agents measured against every lane per step, besides the ego, for ``agents`` slots
    on ``platform`` (None: JAX's default backend)."""
    cap = CPU_CAPACITY if on_cpu(platform) else ACCELERATOR_CAPACITY
    return min(agents, cap)


def own_depth(a) -> Array:
    """(N,) smallest depth [m] of an agent's four corners inside its own route's corridor
    (segments clipped at the route's ends, as in core.road.edge_distance)."""
    cx, cy = road.box_corners(a.x, a.y, a.cos_h, a.sin_h, a.length, a.width)  # (N, 4)
    seg = a.seg  # (S, N)
    depths = []
    for corner in range(4):  # corners and segments unrolled (core.road.min_of)
        px = cx[:, corner] - seg.ax  # (S, N)
        py = cy[:, corner] - seg.ay
        dist2 = road.segment_dist2(px, py, seg.ux, seg.uy, seg.length, seg.ok)
        nearest = road.min_of(list(dist2))  # (N,)
        depths.append(0.5 * a.lane_width - jnp.sqrt(nearest))
    return road.min_of(depths)


def all_lanes(config: SimConfig) -> bool:
    """Whether every corner is measured against every lane in every step: with
    ``edge_search="all_lanes"``, and with lane changes (straight parallel lanes of few
    segments, where an agent changing lanes leaves its own corridor for the next one's)."""
    return config.search.edge_search == "all_lanes" or bool(config.lane_changes)


def _box_rows(a) -> list[Array]:
    """The rows [x, y, cos_h, sin_h, length, width] (N,) of SortedAgents ``a``'s boxes."""
    return [a.x, a.y, a.cos_h, a.sin_h, a.length, a.width]


def _box_edges(rows: list[Array], area: road.Drivable) -> Array:
    """Signed edge distance of boxes given as rows [x, y, cos_h, sin_h, length, width],
    each (K,), against every lane; (K,)."""
    x, y, cos_h, sin_h, length, width = rows
    return road.box_edge_distance(x, y, cos_h, sin_h, length, width, area)


def _every_lane(a, area: road.Drivable) -> tuple[Array, Array, Array | None]:
    """(off (N,) bool, fits (), candidate rows) with every corner against every lane."""
    edge = _box_edges(_box_rows(a), area)
    return a.valid & (edge < 0.0), jnp.ones((), bool), a.edges


def _own_route(a, area: road.Drivable) -> tuple[Array, Array, Array | None]:
    """(off (N,) bool, fits (), candidate rows) with each agent's corners against its own
    route and the agents near its edge (up to :func:`capacity`, the ego left out) against
    every lane; on a large map (``a.edges``, core.edge_cache) only those of the near agents
    their candidates leave undecided, whose candidates are then taken again where they are."""
    n = a.x.shape[0]
    cap = capacity(n)
    near = a.valid & ~a.is_ego & (own_depth(a) < MARGIN)
    sure_off: Array = jnp.zeros(n, bool)
    rows = a.edges
    if rows is not None:
        cx, cy = road.box_corners(a.x, a.y, a.cos_h, a.sin_h, a.length, a.width)
        sure_on, off_found = edge_cache.decide(cx, cy, rows)
        sure_off = near & off_found
        near = near & ~sure_on & ~sure_off
    near = materialize(near)  # read cap + 1 times
    slot = _near_slots(near, cap)
    picked = jnp.minimum(slot, n - 1)
    edge = _box_edges([v[picked] for v in _box_rows(a)], area)
    off_member = (slot < n) & (edge < 0.0)
    off = jnp.any((picked[:, None] == jnp.arange(n)[None, :]) & off_member[:, None], axis=0)
    if rows is not None:
        rows = edge_cache.refresh(rows, slot, a.x[picked], a.y[picked], area)
    return off | sure_off, jnp.sum(near.astype(jnp.int32)) <= cap, rows


def _near_slots(near: Array, cap: int) -> Array:
    """(cap,) int32 sorted slots of the first ``cap`` agents with ``near`` (N,) bool, in slot
    order (N: none). Up to 2, one minimum each (a cumulative sum is a slow reduce-window on
    XLA:CPU); above, in one pass (core.junction.members: one kernel on an accelerator, where
    each minimum would be a kernel of its own)."""
    n = near.shape[0]
    if cap > 2:
        members, _ = junction.members(near, cap)
        return jnp.where(members < 0, n, members)
    index = jnp.arange(n)
    slots: list[Array] = []
    for _ in range(cap):
        after = index > slots[-1] if slots else True
        slots.append(jnp.min(jnp.where(near & after, index, n)))
    return jnp.stack(slots) if slots else jnp.zeros(0, jnp.int32)


def search(a, area: road.Drivable, config: SimConfig, full_edges: Array | bool | None = None) -> EdgeSearch:
    """The step's EdgeSearch for SortedAgents ``a`` on the drivable ``area``
    (core.road.drivable). full_edges: an unbatched () bool that picks every lane for every
    corner under a real conditional (the exact fallback's second round, core.fallback),
    True: every lane, or None: as ``config`` says."""
    ego_edge = _box_edges([v[None] for v in ego_values(a.is_ego, _box_rows(a))], area)[0]
    if all_lanes(config) or full_edges is True:
        off, fits, rows = _every_lane(a, area)
    elif full_edges is None:
        off, fits, rows = _own_route(a, area)
    else:
        off, fits, rows = jax.lax.cond(full_edges, _every_lane, _own_route, a, area)
    off = off | (a.is_ego & a.valid & (ego_edge < 0.0))
    return EdgeSearch(ego_edge=ego_edge, off=off, fits=fits, candidates=rows)
