"""MOBIL lane changes for IDM agents on straight parallel lanes.

The rule (Kesting, Treiber, Helbing 2007, "General lane-changing model MOBIL for
car-following models", TRR 1999): agent c changes to the adjacent lane L' when

    safety:     ã_n >= -b_safe
    incentive:  ã_c - a_c + p [(ã_n - a_n) + (ã_o - a_o)] > Δa_th

with n / o the new / old follower, tildes the IDM accelerations after the change and p the
politeness (:func:`mobil_rule`). Accelerations are the IDM's (core.behavior) against vehicle
leaders, evaluated on one snapshot in each lane's own frame every
``LaneChangeConfig.decide_every`` steps (:func:`decide`): each lane's members ordered along it
give every agent's exact neighbours in every lane (core.lane_order). The lane
change itself: the agent's pure-pursuit target is offset from the target lane's centre line by
the quintic (minimum-jerk) profile d0 (1 - 10u^3 + 15u^4 - 6u^5), u = age / duration
(:func:`path_offset`), so it moves across over ``duration_s`` from where it was (d0: its
offset from the target lane at the start). Its route (the lane whose leaders it follows and
whose corridor the certificate checks) stays the old lane until its centre lies inside the
target lane (checked on decision steps), then becomes the target lane: it keeps braking for
its old leader while it is still in front of it, and every follower sees it by the leader rule
(centre inside the follower's lane). Every lane of the road is one sorted group in this mode
(core.exact.route_groups), so the window search covers the neighbouring lanes for collisions;
leaders come from all pairs (core.neighbours.leader_search).

Per-agent rows (``SortedAgents.lane``): LANE_ROWS. Every function works on one scenario.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.behavior import follow_acceleration
from drivesim.core.lane_order import LaneNeighbours, every_lane, in_lane, rows_of
from drivesim.core.road import RouteSegments, lane_segments, route_rows
from drivesim.core.types import (
    Array,
    IDMParams,
    LaneChangeConfig,
    MOBILParams,
    RoadMap,
    SimConfig,
    pytree_dataclass,
    replace,
)

LANE_ROWS = ("politeness", "b_safe", "threshold", "duration", "enabled", "target", "shift", "d0", "t0")
NEVER = -1.0e9  # t0 of an agent that has not changed lanes (its last change is long over)
ADJACENT_TOL = 0.5  # [m] lanes whose centre lines are mean-width apart within this are adjacent


def lane_row(lane: Array, name: str) -> Array:
    """Row ``name`` (LANE_ROWS) of ``SortedAgents.lane``; (N,) float32."""
    return lane[LANE_ROWS.index(name)]


def initial_rows(config: LaneChangeConfig, enabled: Array, params: MOBILParams | None) -> Array:
    """(LANE_ROWS, N) float32 rows of agents that have not changed lanes; enabled (N,) bool;
    params: per-agent values (None: the config's for every agent)."""
    n = enabled.shape[0]
    full = lambda v: jnp.full((n,), v, jnp.float32)  # noqa: E731
    if params is not None:
        enabled = enabled & params.enabled
    pick = lambda name: full(getattr(config, name)) if params is None else getattr(params, name)  # noqa: E731
    rows = [
        pick("politeness"),
        pick("b_safe"),
        pick("threshold"),
        full(config.duration_s),
        enabled.astype(jnp.float32),
        full(0.0),
        full(0.0),
        full(0.0),
        full(NEVER),
    ]
    return jnp.stack([jnp.asarray(r, jnp.float32) for r in rows])


def mobil_rule(acc_c, acc_c_new, acc_n, acc_n_new, acc_o, acc_o_new, politeness, b_safe, threshold):
    """The published MOBIL criteria, elementwise: (safe, incentive, change).

    acc_*: IDM accelerations [m/s^2] of the changer c, new follower n and old follower o
    before and after (``_new``) the change; politeness p [-], b_safe and threshold [m/s^2].
    safe = ã_n >= -b_safe; incentive = ã_c - a_c + p((ã_n - a_n) + (ã_o - a_o));
    change = safe and incentive > threshold.
    """
    safe = acc_n_new >= -b_safe
    incentive = acc_c_new - acc_c + politeness * ((acc_n_new - acc_n) + (acc_o_new - acc_o))
    return safe, incentive, safe & (incentive > threshold)


def path_offset(d0: Array, age: Array, duration: Array) -> Array:
    """Lateral offset [m] from the target lane's centre ``age`` [s] into a change that started
    at offset d0 [m]: d0 (1 - q(u)), q the quintic minimum-jerk step, u = clip(age/duration)."""
    u = jnp.clip(age / duration, 0.0, 1.0)
    q = u * u * u * (10.0 + u * (-15.0 + 6.0 * u))
    return d0 * (1.0 - q)


@pytree_dataclass
class LaneFrames:
    """Frames of the lanes, (L,) each: origin (ax, ay) and unit direction (ux, uy) of the
    first real segment; width; usable: a valid straight lane (one real segment)."""

    ax: Array
    ay: Array
    ux: Array
    uy: Array
    width: Array
    usable: Array


def lane_frames(road: RoadMap) -> LaneFrames:
    """:class:`LaneFrames` of a road (centers (L, P, 2)), from the same segment values as the
    agents' routes (core.road.lane_segments), so tangents match theirs bit for bit."""
    seg = lane_segments(road.centers)
    first = jnp.argmax(seg.ok, axis=-1)
    take = lambda v: jnp.take_along_axis(v, first[:, None], axis=-1)[:, 0]  # noqa: E731
    usable = road.lane_valid & (jnp.sum(seg.ok, axis=-1) == 1)
    return LaneFrames(
        ax=take(seg.ax), ay=take(seg.ay), ux=take(seg.ux), uy=take(seg.uy), width=road.widths, usable=usable
    )


def adjacency(fr: LaneFrames) -> tuple[Array, Array]:
    """(left, right): (L, L) float32, 1 where lane m is the usable parallel same-direction
    lane next to lane l on its left (right), centre lines a mean lane width apart."""
    same_dir = (fr.ux[:, None] * fr.ux[None, :] + fr.uy[:, None] * fr.uy[None, :]) > 1.0 - 1e-5
    rx, ry = fr.ax[None, :] - fr.ax[:, None], fr.ay[None, :] - fr.ay[:, None]
    side = -rx * fr.uy[:, None] + ry * fr.ux[:, None]  # lane m's offset left of lane l
    mean_w = 0.5 * (fr.width[:, None] + fr.width[None, :])
    near = jnp.abs(jnp.abs(side) - mean_w) < ADJACENT_TOL
    both = fr.usable[:, None] & fr.usable[None, :] & same_dir & near
    return (both & (side > 0)).astype(jnp.float32), (both & (side < 0)).astype(jnp.float32)


def _in_frames(x: Array, y: Array, fr: LaneFrames) -> tuple[Array, Array]:
    """Positions (N,) in every lane frame: (along, lateral), each (L, N)."""
    rx, ry = x[None, :] - fr.ax[:, None], y[None, :] - fr.ay[:, None]
    return rx * fr.ux[:, None] + ry * fr.uy[:, None], -rx * fr.uy[:, None] + ry * fr.ux[:, None]


def _mm(x: Array, y: Array) -> Array:
    """x @ y (N,) for a 0/1 (selection) matrix x (N, K) and y (K,), as a fused
    multiply-and-sum: exact, and XLA:CPU runs a batch of small dots one call at a time."""
    return jnp.sum(x * y[None, :], axis=1)


def _segments_of(road: RoadMap, route: Array) -> RouteSegments:
    """core.road.agent_segments (fields (S, N)) by a masked sum over lanes instead of dots."""
    lanes = lane_segments(road.centers)  # (L, S)
    onehot = route[None, :] == jnp.arange(road.centers.shape[-3])[:, None]  # (L, N)
    pick = lambda v: jnp.sum(jnp.where(onehot[:, None, :], v[:, :, None], 0.0), axis=0)  # noqa: E731
    return RouteSegments(**{f: pick(getattr(lanes, f)) for f in RouteSegments.__dataclass_fields__})


TABLE = ("speed", "accel_now", "v0", "T", "s0", "a", "b", "delta", "length")  # columns of _table


def _table(a, acc_now: Array) -> Array:
    """(N, TABLE) the per-agent values MOBIL reads of a neighbour, picked by one matmul with
    a one-hot (N, N) matrix instead of one masked sum per value."""
    p = a.idm
    table = jnp.stack([a.speed, acc_now, p.v0, p.T, p.s0, p.a, p.b, p.delta, a.length], axis=1)
    return jnp.where(jnp.isfinite(table), table, 0.0)  # 0 * NaN would spread in the matmul


def _col(picked: Array, name: str) -> Array:
    return picked[:, TABLE.index(name)]


def _idm_cols(picked: Array) -> IDMParams:
    return IDMParams(**{k: _col(picked, k) for k in ("v0", "T", "s0", "a", "b", "delta")})


def _gaps(a, nb: LaneNeighbours, lead: Array, follow: Array) -> tuple[Array, Array]:
    """Bumper-to-bumper gaps (N,) to the lead and from the follower (+inf: none); lead /
    follow: their picked TABLE rows (N, TABLE)."""
    lead_gap = nb.lead_ds - 0.5 * (a.length + _col(lead, "length"))  # +inf stays +inf
    follow_gap = jnp.where(nb.has_follow, -nb.follow_ds - 0.5 * (a.length + _col(follow, "length")), jnp.inf)
    return lead_gap, follow_gap


def _usable(fr: LaneFrames, route: Array) -> Array:
    """(N,) bool: route (N,) int32 is a usable lane of ``fr`` (out of range: not)."""
    inside = (route >= 0) & (route < fr.usable.shape[0])
    return inside & fr.usable[jnp.clip(route, 0, fr.usable.shape[0] - 1)]


def _lane_of(onehot: Array) -> Array:
    """The lane index (R,) int32 of each row of ``onehot`` (R, L); -1 for a row of zeros."""
    return jnp.where(jnp.sum(onehot, axis=1) > 0.5, jnp.argmax(onehot, axis=1), -1)


def side_incentive(a, lane: Array, target: Array, table: Array, old: tuple, lanes: LaneNeighbours):
    """MOBIL towards the lane ``target`` (N,) int32 (-1: none): (change allowed (N,) bool,
    incentive (N,), the agent's offset from the target lane (N,)).

    table: :func:`_table`; old: (a_o, ã_o) of the old follower (N,) each (0 without one);
    lanes: every agent's neighbours in every lane (core.lane_order.every_lane)."""
    new = in_lane(lanes, target)
    lead, follow = rows_of(table, new.lead), rows_of(table, new.follow)
    lead_gap, follow_gap = _gaps(a, new, lead, follow)
    v = a.speed
    acc_c_new = follow_acceleration(v, lead_gap, _col(lead, "speed"), a.idm)
    acc_n = jnp.where(new.has_follow, _col(follow, "accel_now"), 0.0)
    acc_n_new = follow_acceleration(_col(follow, "speed"), follow_gap, v, _idm_cols(follow))
    acc_n_new = jnp.where(new.has_follow, acc_n_new, 0.0)
    safe, incentive, change = mobil_rule(
        _col(table, "accel_now"),
        acc_c_new,
        acc_n,
        acc_n_new,
        old[0],
        old[1],
        lane_row(lane, "politeness"),
        lane_row(lane, "b_safe"),
        lane_row(lane, "threshold"),
    )
    fits = (lead_gap > 0.0) & (follow_gap > 0.0)
    return change & fits & (target >= 0), incentive, new.offset


def decide(a, road: RoadMap, t: Array, dt: float):
    """One decision step at step ``t`` (): agents whose centre has entered their target lane
    take it as their route (:func:`_switch`); then every enabled agent that is not changing
    lanes applies MOBIL to its left and right lanes and, where allowed, starts a change to the
    better one (its route stays until its centre crosses). a: SortedAgents with ``lane``."""
    fr = lane_frames(road)
    num_lanes = fr.ax.shape[0]
    along, lateral = _in_frames(a.x, a.y, fr)
    a = _switch(a, road, fr, lateral)
    lane = a.lane
    own_lane = jnp.where(_usable(fr, a.route), a.route, -1)  # (N,) int32, -1: no usable lane
    changing = lane_row(lane, "shift") != 0.0
    claims = (lane_row(lane, "target")[:, None] == jnp.arange(num_lanes)[None, :]) & changing[:, None]
    lanes = every_lane(along, lateral, fr.width, a.valid, claims)
    current = in_lane(lanes, own_lane)
    cur_lead = rows_of(_table(a, a.speed), current.lead)  # the accel column is unused here
    cur_gap = current.lead_ds - 0.5 * (a.length + _col(cur_lead, "length"))
    acc_now = follow_acceleration(a.speed, cur_gap, _col(cur_lead, "speed"), a.idm)
    table = _table(a, acc_now)
    cur_follow = rows_of(table, current.follow)
    _lead_gap, o_gap = _gaps(a, current, cur_lead, cur_follow)
    o_gap_new = o_gap + a.length + cur_gap  # behind c's leader once c has gone (+inf stays)
    has_o = current.has_follow
    acc_o = jnp.where(has_o, _col(cur_follow, "accel_now"), 0.0)
    o_speed, lead_speed = _col(cur_follow, "speed"), _col(cur_lead, "speed")
    acc_o_new = follow_acceleration(o_speed, o_gap_new, lead_speed, _idm_cols(cur_follow))
    acc_o_new = jnp.where(has_o, acc_o_new, 0.0)
    left, right = adjacency(fr)
    idle = ((t - lane_row(lane, "t0")) * dt >= lane_row(lane, "duration")) & (lane_row(lane, "shift") == 0.0)
    ready = a.valid & (lane_row(lane, "enabled") > 0.5) & idle
    sides = []
    for adj in (left, right):
        # the lane beside each lane, read at the agent's lane (an (N, L) x (L, L) product
        # here cost more than the rest of the side's MOBIL on XLA:CPU)
        target = jnp.where(own_lane >= 0, _lane_of(adj)[jnp.maximum(own_lane, 0)], -1)
        ok, incentive, offset = side_incentive(a, lane, target, table, (acc_o, acc_o_new), lanes)
        sides.append((ok & ready, incentive, offset, target))
    (ok_l, inc_l, off_l, to_l), (ok_r, inc_r, off_r, to_r) = sides
    go_left = ok_l & (~ok_r | (inc_l >= inc_r))
    change = go_left | ok_r
    d0 = jnp.where(go_left, off_l, off_r)  # the agent's offset from the target lane
    started = {
        "target": jnp.where(go_left, to_l, to_r).astype(jnp.float32),
        "shift": current.offset - d0,  # the target lane's centre, seen from the route
        "d0": d0,
        "t0": jnp.broadcast_to(t, d0.shape).astype(jnp.float32),
    }
    for name, value in started.items():
        lane = lane.at[LANE_ROWS.index(name)].set(jnp.where(change, value, lane_row(lane, name)))
    return replace(a, lane=lane)


def _switch(a, road: RoadMap, fr: LaneFrames, lateral: Array):
    """Agents changing lanes whose centre lies inside the target lane's corridor: route,
    lane width and route segments set to the target lane, ``shift`` to 0."""
    from drivesim.core.agents import PROP_ROWS  # agents' users import this module

    lane = a.lane
    num_lanes = fr.ax.shape[0]
    target = lane_row(lane, "target").astype(jnp.int32)
    onehot = (target[:, None] == jnp.arange(num_lanes)[None, :]).astype(jnp.float32)
    offset = jnp.sum(onehot * lateral.T, axis=1)
    target_width = _mm(onehot, fr.width)  # (N,) [m] (fr.width: the road's lane widths)
    crossed = (lane_row(lane, "shift") != 0.0) & (jnp.abs(offset) < 0.5 * target_width)
    route = jnp.where(crossed, target, a.route)
    props = a.props
    props = props.at[PROP_ROWS.index("route")].set(route.astype(jnp.float32))
    width = jnp.where(crossed, target_width, a.lane_width)
    props = props.at[PROP_ROWS.index("lane_width")].set(width)
    rows = jnp.where(crossed[None, :], route_rows(_segments_of(road, route)), props[len(PROP_ROWS) :])
    props = jnp.concatenate([props[: len(PROP_ROWS)], rows], axis=0)
    lane = lane.at[LANE_ROWS.index("shift")].set(jnp.where(crossed, 0.0, lane_row(lane, "shift")))
    return replace(a, props=props, lane=lane)


def on_path(a, proj, look, t, target, dt: float) -> tuple[Array, Array]:
    """Pure-pursuit ``target`` (x, y), (N,) each, moved to the lane-change path
    (:func:`path_offset`) at the lookahead point: the path's offset ``look / v`` seconds
    ahead. a: SortedAgents with ``lane``; proj: their Projection; t: the step ()."""
    assert a.lane is not None
    age = (t - lane_row(a.lane, "t0")) * dt + look / jnp.maximum(a.speed, 1.0)
    off = path_offset(lane_row(a.lane, "d0"), age, lane_row(a.lane, "duration"))
    off = off + lane_row(a.lane, "shift")
    return target[0] - off * proj.ty, target[1] + off * proj.tx


def decide_every(agents, road: RoadMap, config: SimConfig, t, step_index, active):
    """:func:`decide` after step ``t`` every ``config.lane_changes.decide_every`` steps for the
    ``active`` (N,) agents, under a real conditional when the unbatched ``step_index`` is given."""
    assert config.lane_changes is not None
    every = config.lane_changes.decide_every
    now = t + 1  # the changes start with the next step

    def run(ag):
        decided = decide(ag, road, now, config.dt)
        return jax.tree_util.tree_map(lambda new, old: jnp.where(active, new, old), decided, ag)

    counter = now if step_index is None else step_index + 1
    return jax.lax.cond(counter % every == 0, run, lambda ag: ag, agents)
