"""Road-edge candidates kept per agent on large maps: each agent's off-road test reads the
``CANDIDATES`` lane segments nearest a reference point instead of every lane, and a bound
proves when the others cannot change its answer.

On recorded maps (hundreds of lanes of tens of segments) many agents sit near the edge of
their own route's corridor: parked cars at the kerb, vehicles in driveways, turning ones
between lanes (up to 42 per step in a WOMD file against the 2 that core.edges measures
against every lane per step). Each was a scenario simulated again with every corner against
every lane. Here each agent keeps, from a reference point q (its position at the start, or
where it was last measured against every lane), the segments of largest depth bound
``w / 2 - dist(q, segment)`` and ``bound``, the largest bound of the segments left out. A
segment left out has, at a corner p, depth ``w / 2 - dist(p, segment) <= bound + |p - q|``
(triangle inequality), so a corner is

- on the road when a candidate covers it (depth >= ON_MARGIN);
- off the road when no candidate does (depth < -ON_MARGIN) and ``bound + |p - q|`` is below
  -OFF_MARGIN (the margins cover float32 rounding of distances of a few hundred metres);
- undecided otherwise.

An agent with a corner surely off, or every corner surely on, is decided; the undecided ones
go to core.edges' every-lane slots, and each agent measured there gets its candidates again
at its current position. The answer (off or not) is the every-lane one whenever the step is
certified; the ego's exact distance is measured against every lane as before.

Each agent's candidates are ROWS rows of SortedAgents (``edges``), moved with the agent by
the sort like its other rows (a gather of each step's columns was slower on the CPU). Maps
of at most core.search_choice.RECORDED_MAP_SEGMENTS lane segments (every synthetic family)
keep none (None): their every-lane test is already small. Every function works on one scenario.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from drivesim.core import road
from drivesim.core.search_choice import RECORDED_MAP_SEGMENTS
from drivesim.core.types import Array, replace

CANDIDATES = 32  # segments kept per agent
ON_MARGIN = 1e-3  # [m] depth of a candidate that proves a corner on the road
OFF_MARGIN = 1e-2  # [m] how far below 0 the bound must be to prove a corner off it
THRESHOLD_SPAN = 200.0  # [m] below the largest depth bound where the bisection starts
THRESHOLD_STEPS = 12  # bisection steps: the threshold within 200 / 2^12 m, about 5 cm
FIELDS = ("ax", "ay", "ux", "uy", "length", "ok")  # then the half width: 7 rows


ROWS = 7 * CANDIDATES + 3  # an agent's candidates (7 fields x CANDIDATES), bound, ref_x, ref_y


def prepare(area: road.Drivable, capacity: int | None) -> tuple[road.Drivable, Array]:
    """``area`` (core.road.Drivable of one scenario) with its real segments laid out as rows
    (``flat``, (7, K)) where the map keeps candidates, a recorded map (more than
    core.search_choice.RECORDED_MAP_SEGMENTS lane segment slots, a static shape test), and
    whether they all fit, () bool. K = ``capacity`` (SearchPlan.map_segments; None: every
    slot) or the slots if fewer: the real segments of valid lanes in slot order, then empty
    ones (never near a point). A map with more real segments is flagged (fits False): its
    scenario is simulated again with every slot (core.fallback.exact_config). Unchanged, and
    fits, on a smaller map."""
    segments, lanes = area.seg.ax.shape[-2:]
    if segments * lanes <= RECORDED_MAP_SEGMENTS:
        return area, jnp.ones((), bool)
    every = _flat_segments(area)  # (7, M)
    slots = every.shape[1]
    size = slots if capacity is None else min(int(capacity), slots)
    real = ((area.seg.ok > 0) & area.lane_valid).reshape(-1)
    index = jnp.nonzero(real, size=size, fill_value=slots)[0]
    empty = jnp.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -jnp.inf], jnp.float32)[:, None]  # ok = 0
    flat = jnp.take(jnp.concatenate([every, empty], axis=1), index, axis=1)
    fits: Array = jnp.sum(real.astype(jnp.int32)) <= size
    return replace(area, flat=flat), fits


def _flat_segments(area: road.Drivable) -> Array:
    """(7, M) every segment slot of ``area`` (fields (S, L)): FIELDS, then half the lane's
    width, -inf where the lane is not valid."""
    half = jnp.where(area.lane_valid, 0.5 * area.widths, -jnp.inf)
    rows = [getattr(area.seg, name) for name in FIELDS] + [jnp.broadcast_to(half, area.seg.ax.shape)]
    return jnp.stack([row.reshape(-1) for row in rows])


def _depths(px: Array, py: Array, seg: Array) -> Array:
    """Depth [m] ``w / 2 - dist`` of points (...) in each segment's corridor; ``seg`` (7, ...)
    rows broadcasting against the points. The distance is core.road.segment_dist2's, as the
    every-lane test takes it."""
    ax, ay, ux, uy, length, ok, half = seg
    return half - jnp.sqrt(road.segment_dist2(px - ax, py - ay, ux, uy, length, ok))


def _bounds(qx: Array, qy: Array, segments: Array) -> Array:
    """(n, M) depth bounds of every segment at reference points (n,); NaN as -inf."""
    ub = _depths(qx[:, None], qy[:, None], segments[:, None, :])
    return jnp.where(jnp.isnan(ub), -jnp.inf, ub)


def _taken(ub: Array, index: Array, segments: Array) -> tuple[Array, Array]:
    """seg (n, 7, CANDIDATES) of the segments at ``index`` (n, CANDIDATES) and bound (n,),
    the largest of ``ub`` (n, M) over the segments not taken."""
    rows = jnp.arange(ub.shape[0])[:, None]
    taken = jnp.zeros(ub.shape, bool).at[rows, index].set(True)
    bound = jnp.max(jnp.where(taken, -jnp.inf, ub), axis=1)
    seg = jnp.take(segments, index, axis=1)  # (7, n, CANDIDATES)
    return jnp.swapaxes(seg, 0, 1), bound


def _largest(qx: Array, qy: Array, segments: Array) -> tuple[Array, Array]:
    """Candidates of reference points (n,) at the start: the CANDIDATES segments of largest
    depth bound (``lax.top_k``; in the time loop it cost about 1 ms per call on the CPU, a
    sort of every segment); seg (n, 7, CANDIDATES) and bound (n,)."""
    ub = _bounds(qx, qy, segments)
    return _taken(ub, jax.lax.top_k(ub, CANDIDATES)[1], segments)


def _candidates(qx: Array, qy: Array, segments: Array) -> tuple[Array, Array]:
    """Candidates of reference points (n,) in the time loop: seg (n, 7, CANDIDATES) and
    bound (n,). They are the segments whose depth bound reaches a threshold found by
    bisection (at most CANDIDATES of them, the threshold within THRESHOLD_SPAN /
    2^THRESHOLD_STEPS of the CANDIDATES-th largest bound; unused slots repeat segment 0);
    ``bound`` is the largest over the segments not taken, so the proof never depends on
    the threshold."""
    ub = _bounds(qx, qy, segments)
    hi = jnp.max(ub, axis=1)
    lo = hi - THRESHOLD_SPAN
    for _ in range(THRESHOLD_STEPS):
        mid = 0.5 * (lo + hi)
        few = jnp.sum((ub >= mid[:, None]).astype(jnp.int32), axis=1) <= CANDIDATES
        hi, lo = jnp.where(few, mid, hi), jnp.where(few, lo, mid)
    index = jax.vmap(lambda row: jnp.nonzero(row, size=CANDIDATES, fill_value=0)[0])(ub >= hi[:, None])
    return _taken(ub, index, segments)


def _rows(seg: Array, bound: Array, x: Array, y: Array) -> Array:
    """(ROWS, n) agents' rows: candidates seg (n, 7, CANDIDATES), then bound, x, y (n,)."""
    n = bound.shape[0]
    return jnp.concatenate([seg.reshape(n, 7 * CANDIDATES).T, jnp.stack([bound, x, y])], axis=0)


def start(x: Array, y: Array, area: road.Drivable) -> Array | None:
    """(ROWS, N) candidate rows of agents at (x, y) (N,), or None on a map without
    ``flat`` segments (:func:`prepare`)."""
    if area.flat is None:
        return None
    x = jnp.where(jnp.isfinite(x), x, 0.0)
    y = jnp.where(jnp.isfinite(y), y, 0.0)
    seg, bound = _largest(x, y, area.flat)
    return _rows(seg, bound, x, y)


def decide(cx: Array, cy: Array, rows: Array) -> tuple[Array, Array]:
    """(on, off) (N,) bool for the box corners (cx, cy) (N, 4) of agents with candidate
    ``rows`` (ROWS, N): every corner surely on the road, some corner surely off. Compared as
    squared distances (no square root): a candidate covers a corner within ``w / 2 -
    ON_MARGIN`` of it, and none does beyond ``w / 2 + ON_MARGIN``."""
    n = rows.shape[1]
    ax, ay, ux, uy, length, ok, half = rows[: 7 * CANDIDATES].reshape(7, CANDIDATES, n)
    bound, ref_x, ref_y = rows[7 * CANDIDATES :]
    inner = jnp.where(half >= ON_MARGIN, jnp.square(half - ON_MARGIN), -1.0)
    outer = jnp.where(half > -jnp.inf, jnp.square(half + ON_MARGIN), -1.0)
    ons, offs = [], []
    for corner in range(4):  # corners and candidates unrolled (core.road.min_of)
        px, py = cx[:, corner], cy[:, corner]
        dist2 = road.segment_dist2(px[None] - ax, py[None] - ay, ux, uy, length, ok)  # (CANDIDATES, N)
        covered = functools.reduce(jnp.logical_or, list(dist2 <= inner))
        clear = functools.reduce(jnp.logical_and, list(dist2 > outer))
        dx, dy = px - ref_x, py - ref_y
        ons.append(covered)
        offs.append(clear & (bound + jnp.sqrt(dx * dx + dy * dy) < -OFF_MARGIN))
    return functools.reduce(jnp.logical_and, ons), functools.reduce(jnp.logical_or, offs)


def refresh(rows: Array, slots: Array, x: Array, y: Array, area: road.Drivable) -> Array:
    """``rows`` (ROWS, N) with the candidates of the agents in ``slots`` (k,) (N: none)
    taken again at (x, y) (k,) from the segments of ``area`` (:func:`prepare`d)."""
    assert area.flat is not None, "refresh: the area keeps no candidates (edge_cache.prepare)"
    seg, bound = _candidates(x, y, area.flat)
    return jnp.asarray(rows).at[:, slots].set(_rows(seg, bound, x, y), mode="drop")
