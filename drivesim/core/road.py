"""Road geometry: per-agent route segments, projection onto a route, drivable area.

Routes are polylines with P points (S = P - 1 segments). Before a rollout, each agent's
route is unpacked into :class:`RouteSegments` so that every step works on the agent's own
segments only (O(S) per agent, no gathers in the time loop). The first segment extends
backwards and the last real segment forwards without bound, so arc length keeps growing
past the ends of a route.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import jax
import jax.numpy as jnp

from drivesim.core import fold
from drivesim.core.types import Array, RoadMap, pytree_dataclass

_EPS = 1e-9
_UNROLLED_SEGMENTS = 16  # lanes of up to this many segments take their nearest one unrolled
MIN_SEGMENT = 1e-6  # [m] a segment longer than this is real, a shorter one padding


@pytree_dataclass
class RouteSegments:
    """Segments of routes; every field is (..., L, S) float32 for lanes and (..., S, N)
    for the agents' own routes (segment axis first).

    ax, ay: segment start; ux, uy: unit direction; length: segment length;
    s0: arc length at the start; lo, hi: clip range of the along-segment coordinate
    (-inf / +inf on the open ends); ok: 1.0 for real segments, 0.0 for padding.
    """

    ax: Array
    ay: Array
    ux: Array
    uy: Array
    length: Array
    s0: Array
    lo: Array
    hi: Array
    ok: Array


def lane_segments(centers: Array) -> RouteSegments:
    """Unpack lane polylines (..., L, P, 2) into RouteSegments with fields (..., L, S)."""
    a = centers[..., :-1, :]
    b = centers[..., 1:, :]
    dx = b[..., 0] - a[..., 0]
    dy = b[..., 1] - a[..., 1]
    length = jnp.sqrt(dx * dx + dy * dy)
    ok = length > MIN_SEGMENT
    safe = jnp.where(ok, length, 1.0)
    ux = jnp.where(ok, dx / safe, 1.0)
    uy = jnp.where(ok, dy / safe, 0.0)
    s0 = jnp.cumsum(length, axis=-1) - length
    num_segments = length.shape[-1]
    index = jnp.arange(num_segments)
    last_real = jnp.max(jnp.where(ok, index, 0), axis=-1, keepdims=True)
    lo = jnp.broadcast_to(jnp.where(index == 0, -jnp.inf, 0.0), length.shape)
    hi = jnp.where(index == last_real, jnp.inf, length)
    return RouteSegments(
        ax=a[..., 0],
        ay=a[..., 1],
        ux=ux,
        uy=uy,
        length=length,
        s0=s0,
        lo=lo,
        hi=hi,
        ok=ok.astype(length.dtype),
    )


def agent_segments(road: RoadMap, route: Array) -> RouteSegments:
    """Route segments for each agent, segment axis first: road (L, P, 2) and route (N,)
    int32 -> fields (S, N); a route that names no lane gets every field 0.

    Used once per rollout: one gather of the lanes' stacked fields (L, F, S) by route. A
    zero comes out as +0.0, as the one-hot products this replaced gave it.
    """
    return RouteSegments(**by_route(lane_segments(road.centers), route))


def by_route(lanes, route: Array) -> dict[str, Array]:
    """Each field of ``lanes`` (a pytree dataclass of fields (L, S)) picked per agent by
    ``route`` (N,) int32: fields (S, N), 0 where the route names no lane (one gather)."""
    names = list(lanes.__dataclass_fields__)
    stacked = jnp.stack([getattr(lanes, name) for name in names], axis=1)  # (L, F, S)
    num_lanes = stacked.shape[0]
    known = (route >= 0) & (route < num_lanes)
    picked = stacked[jnp.where(known, route, 0)]  # (N, F, S)
    picked = jnp.where(known[:, None, None] & (picked != 0.0), picked, 0.0)
    return {name: picked[:, i].T for i, name in enumerate(names)}


STORED = ("ax", "ay", "ux", "uy", "length", "s0")  # the fields route_rows stores, in order


def route_rows(seg: RouteSegments) -> Array:
    """Agents' route segments (fields (S, N)) as the (6 S + 1, N) float32 rows that move with
    the agents: the STORED fields, then each route's last real segment (-1: a route that
    matches no lane, every field 0). lo, hi and ok follow from these (:func:`from_rows`), so
    a permutation of the agents moves 6 S + 1 rows, not 9 S."""
    index = jnp.arange(seg.ok.shape[0], dtype=jnp.float32)[:, None]
    last = jnp.max(jnp.where(seg.ok > 0, index, 0.0), axis=0)
    last = jnp.where(seg.lo[0] == -jnp.inf, last, -1.0)  # a lane's first segment opens backwards
    return jnp.concatenate([getattr(seg, f) for f in STORED] + [last[None]], axis=0)


def from_rows(rows: Array) -> RouteSegments:
    """The RouteSegments (fields (S, N)) of :func:`route_rows`' rows (6 S + 1, N), the same
    bits as the segments packed: ok is length > MIN_SEGMENT (:func:`lane_segments`), lo -inf on the
    first segment, hi +inf on the last real one."""
    s = (rows.shape[0] - 1) // len(STORED)
    fields = {f: rows[i * s : (i + 1) * s] for i, f in enumerate(STORED)}
    last = rows[-1]
    index = jnp.arange(s, dtype=jnp.float32)[:, None]
    length = fields["length"]
    fields["ok"] = (length > MIN_SEGMENT).astype(jnp.float32)
    fields["lo"] = jnp.where((index == 0) & (last >= 0.0), -jnp.inf, 0.0)
    fields["hi"] = jnp.where(index == last, jnp.inf, length)
    return RouteSegments(**fields)


@pytree_dataclass
class Projection:
    """Projection of points onto their routes; fields (..., N) float32.

    s: arc length; d: signed lateral offset (left positive); tx, ty: unit tangent.
    """

    s: Array
    d: Array
    tx: Array
    ty: Array


def _first_pick(mask: Array, fields: tuple[Array, ...]) -> tuple[Array, ...]:
    """Each field (S, N) at the first True of ``mask`` (S, N) along the segment axis, +0.0
    where none is: a chain of selects, elementwise, so XLA:CPU runs it as vector code (a
    cumulative sum and a sum over the short segment axis are slow loops of their own there).
    Adding +0.0 turns a picked -0.0 into +0.0."""
    picked = []
    for field in fields:
        value = jnp.zeros(field.shape[1:], field.dtype)
        for k in reversed(range(field.shape[0])):
            value = jnp.where(mask[k], field[k], value)
        picked.append(value + 0.0)
    return tuple(picked)


def _at_first(mask: Array, fields: tuple[Array, ...]) -> tuple[Array, ...]:
    """Each field (S, N) at the first True of ``mask`` (S, N) along the segment axis, +0.0
    where none is: by :func:`_first_pick` on routes of 2 to _UNROLLED_SEGMENTS segments,
    folded pairwise on longer ones (core.fold.first_of: log2(S) elementwise steps; the sums
    weighted by the first True that it replaced were a slow loop each, and gave the same bits
    where the fields are finite, NaN where an entry not picked was NaN, as an absent agent's
    can be); a route of one segment: the field itself (a sum over the segment axis, +0.0 for
    -0.0)."""
    segments = mask.shape[0]
    if segments == 1:
        return tuple(jnp.sum(jnp.ones(mask.shape, jnp.float32) * field, axis=0) for field in fields)
    if segments <= _UNROLLED_SEGMENTS:
        return _first_pick(mask, fields)
    return fold.first_of(mask, fields)


def _nearest(values: Array, axis: int) -> Array:
    """Minimum over the segment ``axis`` of ``values``: unrolled (:func:`min_of`) for routes
    of up to _UNROLLED_SEGMENTS segments, folded pairwise (core.fold.minimum) on longer ones."""
    if values.shape[axis] > _UNROLLED_SEGMENTS:
        return fold.minimum(values, axis)
    return min_of(jax.lax.index_in_dim(values, k, axis, keepdims=False) for k in range(values.shape[axis]))


def project(x: Array, y: Array, seg: RouteSegments) -> Projection:
    """Project points (N,) onto their own routes (fields (S, N)): nearest real segment."""
    px = x[None] - seg.ax
    py = y[None] - seg.ay
    along = jnp.clip(px * seg.ux + py * seg.uy, seg.lo, seg.hi)
    ex = px - along * seg.ux
    ey = py - along * seg.uy
    dist2 = jnp.where(seg.ok > 0, ex * ex + ey * ey, jnp.inf)
    fields = (seg.s0 + along, -ex * seg.uy + ey * seg.ux, seg.ux, seg.uy)
    s, d, tx, ty = _at_first(dist2 <= _nearest(dist2, 0)[None], fields)
    return Projection(s=s, d=d, tx=tx, ty=ty)


def point_at(s: Array, seg: RouteSegments) -> tuple[Array, Array]:
    """Point at arc length s (N,) on each agent's route (fields (S, N)) -> (x, y), each (N,)."""
    local = s[None] - seg.s0
    if seg.ax.shape[0] == 1:
        return (seg.ax + local * seg.ux)[0], (seg.ay + local * seg.uy)[0]
    end = seg.s0 + seg.length
    inside = (s[None] >= seg.s0) & ((s[None] < end) | (seg.hi == jnp.inf)) & (seg.ok > 0)
    before_all = s[None] < seg.s0[:1]
    inside = inside | (before_all & (jnp.arange(seg.s0.shape[0]) == 0)[:, None])
    x, y = _at_first(inside, (seg.ax + local * seg.ux, seg.ay + local * seg.uy))
    return x, y


def segment_dist2(px: Array, py: Array, ux: Array, uy: Array, length: Array, ok: Array) -> Array:
    """Squared distance of points to segments clipped at their ends, +inf on segments that
    are not ``ok``; px, py: the points relative to each segment's start, (ux, uy) its unit
    direction; broadcasting shapes."""
    along = jnp.clip(px * ux + py * uy, 0.0, length)
    ex = px - along * ux
    ey = py - along * uy
    return jnp.where(ok > 0, ex * ex + ey * ey, jnp.inf)


def min_of(parts: Iterable[Array]) -> Array:
    """Elementwise minimum of same-shaped arrays (a list or a generator), left to right: the
    unrolled form of a minimum over a short axis, which XLA:CPU runs as a separate, slow loop
    (not vectorised)."""
    return functools.reduce(jnp.minimum, parts)


def lane_ok(centers: Array) -> Array:
    """(L, S) float32: 1.0 for real (non-zero length) segments of lane polylines (L, P, 2)."""
    d = centers[..., 1:, :] - centers[..., :-1, :]
    return (jnp.sqrt(jnp.sum(d * d, axis=-1)) > MIN_SEGMENT).astype(jnp.float32)


@pytree_dataclass
class Drivable:
    """The drivable area laid out for :func:`edge_distance`, built once per rollout
    (:func:`drivable`): seg, every lane's RouteSegments with fields (S, L), lanes innermost;
    widths (L,) lane widths [m]; lane_valid (L,) bool; flat (7, K) a recorded map's real
    segments as rows (core.edge_cache.prepare), else None."""

    seg: RouteSegments
    widths: Array
    lane_valid: Array
    flat: Array | None = None


def drivable(road: RoadMap) -> Drivable:
    """The Drivable of ``road`` (one scenario). Its lane fields are transposed here, before
    the time loop: transposed in each step, they were read 7 floats apart inside the edge
    test's loop over lanes."""
    seg = jax.tree_util.tree_map(lambda v: jnp.swapaxes(v, -1, -2), lane_segments(road.centers))
    return Drivable(seg=seg, widths=road.widths, lane_valid=road.lane_valid)


def edge_distance(x: Array, y: Array, area: Drivable) -> Array:
    """Signed distance [m] of points (...) to the drivable ``area``'s edge: the largest over
    lanes of (width / 2 - distance to the lane's centre segments); > 0 inside, < 0 off-road.
    Segments are clipped at the route ends (past every lane's end is off-road). The lane
    axis is innermost and the nearest segment is taken segment by segment over it, so XLA:CPU
    reads each segment's lanes as one contiguous vector. Where ``area`` keeps its real
    segments as rows (``flat``), the largest of their depths: the same value bit for bit
    (w / 2 - sqrt(d) falls as d grows, in float32 too, so the deepest segment is the
    nearest of its lane)."""
    if area.flat is not None:  # a recorded map's real segments (core.edge_cache.prepare)
        ax, ay, ux, uy, length, ok, half = area.flat  # (K,) each; half -inf: not a lane
        dist2 = segment_dist2(x[..., None] - ax, y[..., None] - ay, ux, uy, length, ok)  # (..., K)
        return jnp.max(half - jnp.sqrt(dist2), axis=-1)
    lanes = area.seg  # (S, L)
    px = x[..., None, None] - lanes.ax
    py = y[..., None, None] - lanes.ay
    dist2 = segment_dist2(px, py, lanes.ux, lanes.uy, lanes.length, lanes.ok)  # (..., S, L)
    depth = 0.5 * area.widths - jnp.sqrt(_nearest(dist2, -2))
    return jnp.max(jnp.where(area.lane_valid, depth, -jnp.inf), axis=-1)


def box_corners(x: Array, y: Array, cos_h: Array, sin_h: Array, length: Array, width: Array):
    """The four corners of boxes (...): (cx, cy), each (..., 4)."""
    su = jnp.array([0.5, 0.5, -0.5, -0.5], jnp.float32)
    sv = jnp.array([0.5, -0.5, -0.5, 0.5], jnp.float32)
    u = length[..., None] * su
    v = width[..., None] * sv
    return x[..., None] + u * cos_h[..., None] - v * sin_h[..., None], y[..., None] + u * sin_h[
        ..., None
    ] + v * cos_h[..., None]


def box_edge_distance(x, y, cos_h, sin_h, length, width, area: Drivable) -> Array:
    """Signed edge distance (:func:`edge_distance`) of a box's worst corner; (...)."""
    cx, cy = box_corners(x, y, cos_h, sin_h, length, width)
    return jnp.min(edge_distance(cx, cy, area), axis=-1)
