"""Pedestrians crossing the synthetic intersection at crosswalks
(``FamilyConfig(pedestrians=True)``, the ``synthetic:intersection?pedestrians`` spec).

Geometry (in the junction's own frame, before the drawn rotation): every one of the four
legs (road A at +x and -x, road B at +beta and beta + pi) has a zebra crosswalk
CROSSWALK_WIDTH wide, perpendicular to the leg, whose inner edge lies CROSSWALK_GAP outside
the conflict circle (centre line at ``radius + CROSSWALK_GAP + CROSSWALK_WIDTH / 2`` from the
junction centre). Each crosswalk carries two straight walking routes, one per direction,
WALK_OFFSET to the right of the crosswalk's axis (so walkers meeting head-on pass each other:
1.7 m apart, more than the 1.5 m half-width of a walker's leader corridor); a route runs
SIDEWALK metres on the kerb, across the carriageway and SIDEWALK metres on the far kerb.
Route width (the engine's lane width, i.e. the leader corridor) is CROSSWALK_WIDTH. Vehicle
stop and yield lines move back to STOP_GAP before the crosswalk's outer edge (SETBACK
outside the conflict circle).

Pedestrians (AgentState.kind = PEDESTRIAN, body PEDESTRIAN_SIZE): a PED_SHARE share of the
scenario's agents (at least one when n >= 4; none below), spread over the eight walking
routes from a drawn first route; the first on each route is crossing (half of them, unless
a vehicle on the crossed road is too close: see :func:`_blocked`), the others wait on the
kerb, queued behind the kerb line. IDM with desired walking speeds from the literature
(the docs' model page, road users): v0 ~ U(1.07, 1.61) m/s (mean 1.34 m/s). Without
signals, walkers crossing the major road A yield at the kerb while a priority vehicle is near
the junction (the engine's yield rule, as the minor road's vehicles do); walkers crossing the
minor road B have priority (stop_s = +inf), so minor-road vehicles also yield while they walk
near the junction. With signals they walk with the vehicle phase of the road they walk
beside: WALK, then flashing DON'T WALK (the plan's amber) for the pedestrian clearance
interval (curb-to-curb distance at 1.07 m/s, MUTCD 4E.06) ending with that road's amber.
Everything else is the engine's leader search: a vehicle brakes for a walker whose centre is
in its lane ahead, a walker for an agent whose centre is in its crosswalk corridor ahead.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from drivesim.core.road_users import PEDESTRIAN_LIMITS, PEDESTRIAN_SIZE
from drivesim.core.types import PEDESTRIAN, Array, IDMParams, SignalPlan
from drivesim.scenarios.families import common as c

CROSSWALK_WIDTH = 3.0  # [m] zebra width, the walking routes' lane width
CROSSWALK_GAP = 0.5  # [m] conflict circle to the crosswalk's inner edge
STOP_GAP = 1.0  # [m] vehicle stop line to the crosswalk's outer edge
SETBACK = CROSSWALK_GAP + CROSSWALK_WIDTH + STOP_GAP  # [m] stop lines outside the conflict circle
WALK_OFFSET = 0.85  # [m] walking line right of the crosswalk axis
SIDEWALK = 4.5  # [m] route length on each kerb
KERB_STOP = 0.2  # [m] pedestrians wait with their front this far before the kerb
ROUTES = 8  # walking routes: 4 legs x 2 directions
PED_SHARE = (0.10, 0.25)  # share of the agents that are pedestrians
WALK_SPEED = (1.07, 1.61)  # [m/s] desired walking speeds (uniform, mean 1.34)
CLEARANCE_SPEED = 1.07  # [m/s] MUTCD walking speed of the pedestrian clearance interval
MIN_WALK_S = 7.0  # [s] MUTCD minimum WALK interval
CROSSING = 0.5  # share of first-in-route pedestrians drawn already crossing
SPACING = (0.8, 1.0)  # [m] centre spacing of pedestrians waiting in a queue
CLEAR_MARGIN = 5.0  # [m] spare distance a vehicle must have when a pedestrian crosses its path


def pedestrian_count(d: c.Draws, n) -> Array:
    """Pedestrians () int32 among ``n`` agents: round(n * U(PED_SHARE)), in [1, n - 2] for
    n >= 4, else 0 (scalar stream 17)."""
    drawn = jnp.round(n * d.s(17, *PED_SHARE)).astype(jnp.int32)
    return jnp.where(n >= 4, jnp.clip(drawn, 1, n - 2), 0)


class Crosswalks(NamedTuple):
    """The eight walking routes (unrotated frame): ``lines`` (ROUTES, 2, 2) start and end
    points [m], ``walk`` (ROUTES, 2) unit walking directions, ``half`` (ROUTES,) the crossed
    road's half-width [m], ``on_b`` (ROUTES,) whether the route crosses road B."""

    lines: Array
    walk: Array
    half: Array
    on_b: Array


def crosswalks(la, lb, beta, w, radius) -> Crosswalks:
    """Walking routes r = 2 * leg + direction; legs A+, A-, B+, B-."""
    leg = jnp.arange(ROUTES) // 2
    on_b = leg >= 2
    axis_angle = jnp.where(on_b, beta, 0.0)
    e = jnp.stack([jnp.cos(axis_angle), jnp.sin(axis_angle)], axis=-1)
    side = jnp.where(leg % 2 == 0, 1.0, -1.0)
    direction = jnp.where(jnp.arange(ROUTES) % 2 == 0, 1.0, -1.0)
    walk = direction[:, None] * jnp.stack([-e[:, 1], e[:, 0]], axis=-1)
    right = jnp.stack([walk[:, 1], -walk[:, 0]], axis=-1)
    centre = (side * (radius + CROSSWALK_GAP + 0.5 * CROSSWALK_WIDTH))[:, None] * e
    line = centre + WALK_OFFSET * right
    half = jnp.where(on_b, lb * w, la * w)
    reach = (half + SIDEWALK)[:, None]
    lines = jnp.stack([line - reach * walk, line + reach * walk], axis=1)
    return Crosswalks(lines, walk, half, on_b)


class Pedestrians(NamedTuple):
    """Pedestrian slots' state (size,) (unrotated frame): ``is_ped`` bool, ``route`` in
    0..ROUTES-1, position ``xy`` (size, 2), heading, speed, arc along the route ``s``, IDM
    parameters and ``blocked``: a kerb walker a vehicle would meet (waits for a clear
    junction)."""

    is_ped: Array
    route: Array
    xy: Array
    heading: Array
    speed: Array
    s: Array
    idm: IDMParams
    blocked: Array


class Vehicles(NamedTuple):
    """Vehicle slots (size,) in the unrotated frame: real, on road B, centre ``xy`` (size, 2),
    unit direction ``u`` (size, 2), length, width and speed."""

    valid: Array
    on_b: Array
    xy: Array
    u: Array
    length: Array
    width: Array
    speed: Array


def pedestrian_idm(d: c.Draws) -> IDMParams:
    """Walkers' IDM parameters (size,) (agent rows 17-19)."""
    size = d.size
    return IDMParams(
        v0=d.u(17, *WALK_SPEED),
        T=d.u(18, 0.8, 1.2),
        s0=d.u(19, 0.15, 0.25),
        a=jnp.full((size,), 1.0, c.F32),
        b=jnp.full((size,), 1.5, c.F32),
        delta=jnp.full((size,), 4.0, c.F32),
    )


def pedestrians(d: c.Draws, n_v, n, cw: Crosswalks, vehicles: Vehicles) -> Pedestrians:
    """Place the pedestrians of slots n_v..n-1 (agent rows 20-22, scalar 18)."""
    slot = jnp.arange(d.size)
    is_ped = (slot >= n_v) & (slot < n)
    k = jnp.maximum(slot - n_v, 0)
    route = (k + d.si(18, 0, ROUTES)) % ROUTES
    rank = k // ROUTES  # place in its route's queue (0: first)
    length = PEDESTRIAN_SIZE[0]
    kerb = SIDEWALK - KERB_STOP - 0.5 * length
    wait_s = kerb - d.u(22, 0.0, 0.3) - rank * d.u(21, *SPACING)
    cross_s = SIDEWALK + d.u(21, 0.05, 0.95) * 2.0 * cw.half[route]
    idm = pedestrian_idm(d)
    walk = cw.walk[route]
    start = cw.lines[route, 0]
    cross_speed = c.SPEED_CAP * idm.v0 * 0.95
    want = is_ped & (rank == 0) & (d.u(20, 0.0, 1.0) < CROSSING)
    at_cross = start + cross_s[:, None] * walk
    blocked = _blocked(at_cross, walk, cross_speed, cw.on_b[route], vehicles)
    crossing = want & ~blocked
    s = jnp.where(crossing, cross_s, wait_s)
    xy = start + s[:, None] * walk  # at the kerb unless crossing
    blocked = is_ped & ~crossing & _blocked(xy, walk, cross_speed, cw.on_b[route], vehicles)
    speed = jnp.where(crossing, cross_speed, 0.0)
    return Pedestrians(
        is_ped=is_ped,
        route=route,
        xy=xy,
        heading=jnp.arctan2(walk[:, 1], walk[:, 0]),
        speed=speed,
        s=s,
        idm=idm,
        blocked=blocked,
    )


def _blocked(p, walk, speed, ped_on_b, v: Vehicles) -> Array:
    """Whether a pedestrian at ``p`` (P, 2) walking ``walk`` (P, 2) at ``speed`` (P,) across
    road B (``ped_on_b``) or A would meet a vehicle: some vehicle on that road, not yet past
    it, whose path the walker has still to clear (body past the vehicle's far side plus 0.5 m)
    reaches its path sooner than the walker clears it, with CLEAR_MARGIN to spare; (P,)."""
    rel = p[:, None, :] - v.xy[None, :, :]  # (P, N, 2) vehicle centre -> walker
    ahead = jnp.sum(rel * v.u[None], axis=-1)  # walker ahead of the vehicle centre [m]
    lane_at = -jnp.sum(rel * walk[:, None, :], axis=-1)  # vehicle centre along the walk
    to_clear = lane_at + 0.5 * v.width[None, :] + 0.5 * PEDESTRIAN_SIZE[1] + 0.5
    t_clear = jnp.maximum(to_clear, 0.0) / jnp.maximum(speed, 0.1)[:, None]
    front_gap = ahead - 0.5 * v.length[None, :] - 0.5 * PEDESTRIAN_SIZE[1]
    passed = ahead < -0.5 * v.length[None, :] - 0.5 * PEDESTRIAN_SIZE[1] - 1.0
    hit = (to_clear > 0.0) & ~passed & (front_gap < v.speed[None, :] * t_clear + CLEAR_MARGIN)
    same_road = v.valid[None, :] & (v.on_b[None, :] == ped_on_b[:, None])
    return jnp.any(hit & same_road, axis=1)


def kerb_line(shape) -> Array:
    """Arc [m] along a walking route where walkers wait (front bumper), ``shape``."""
    return jnp.full(shape, SIDEWALK - KERB_STOP, c.F32)


def walk_plan(vehicle_plan: SignalPlan, crossing_m) -> SignalPlan:
    """A walker's plan from the vehicle plan of the road it walks beside: WALK from that
    road's green start, then flashing DON'T WALK (the plan's amber: walkers do not start,
    those on the road go on) for the clearance interval ``crossing_m`` / CLEARANCE_SPEED,
    ending with the vehicles' amber; WALK lasts at least MIN_WALK_S. (size,) fields."""
    clearance = crossing_m / CLEARANCE_SPEED
    window = vehicle_plan.green + vehicle_plan.amber
    green = jnp.maximum(window - clearance, MIN_WALK_S)
    return SignalPlan(
        line_s=kerb_line(jnp.shape(crossing_m)),
        cycle=vehicle_plan.cycle,
        offset=vehicle_plan.offset,
        green=green.astype(c.F32),
        amber=jnp.maximum(window - green, 0.0).astype(c.F32),
    )


def kind_of(is_ped) -> Array:
    """AgentState.kind (size,): PEDESTRIAN for walkers, 0 (vehicle) otherwise."""
    return jnp.where(is_ped, PEDESTRIAN, 0).astype(jnp.int32)


def start_accel(speed, idm: IDMParams) -> Array:
    """Walkers' initial acceleration (free road IDM within the pedestrian limits); (size,)."""
    accel = c.idm_accel(speed, jnp.full(speed.shape, jnp.inf), speed, idm)
    return jnp.clip(accel, PEDESTRIAN_LIMITS.min_accel, PEDESTRIAN_LIMITS.max_accel)
