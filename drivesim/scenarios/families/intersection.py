"""Two two-way roads crossing (unsignalised) at 70-110 degrees.

The major road A has priority; agents on the minor road B (25-50% of a log-uniform count)
approach a stop line and yield while an A agent is near the junction; they start far enough
back to stop there at IDM's comfortable deceleration. 1-2 lanes per direction, straight
routes, urban speeds (major 8-16 m/s, minor 0-8 m/s, desired 11-17 m/s); queues at 1.0-1.4
times the IDM equilibrium gap.

With ``FamilyConfig(signals=True)`` the junction is signalised instead: a two-phase
fixed-time plan (drivesim.scenarios.signal_timing: 90 s cycle, ITE amber for 50 km/h,
1.5 s all-red, equal greens) with a random phase at t = 0; every agent's stop line is where
the minor road's yield line is (the edge of the conflict zone), road A on the first phase,
road B on the second; nobody yields by priority (a red queue would otherwise block a green
approach that yields to it).

With ``FamilyConfig(pedestrians=True)`` 10-25% of the agents are pedestrians crossing the
four legs at crosswalks just outside the conflict zone, on 8 walking routes after the
straight lanes (16 route slots), and the vehicles' stop lines move back behind the
crosswalks (drivesim.scenarios.families.crosswalks). Without it the output is unchanged.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from drivesim.core import signals
from drivesim.core.road_users import PEDESTRIAN_SIZE
from drivesim.core.types import IDM_DEFAULTS, AgentState, Array, IDMParams, Scenario, SignalPlan, replace
from drivesim.scenarios.families import common as c
from drivesim.scenarios.families import crosswalks
from drivesim.scenarios.signal_timing import CYCLE_S, two_phase

NAME = "intersection"
LOG_UNIFORM = True
POINTS = 2
SEARCHES = (True, False)  # (junction zone, bent routes) its batches may need (core.switches)


def _lanes(la, lb, beta, w):
    """Per lane slot (LANES,): unit direction (LANES, 2), right offset (LANES, 2), whether on
    road B, whether real. Slots: A forward (la), A backward (la), B forward, B backward."""
    i = jnp.arange(c.LANES)
    on_b = i >= 2 * la
    j = jnp.where(on_b, i - 2 * la, i)
    count = jnp.where(on_b, lb, la)
    sign = jnp.where(j < count, 1.0, -1.0)
    k = jnp.where(j < count, j, j - count).astype(c.F32)
    angle = jnp.where(on_b, beta, 0.0)
    u = sign[:, None] * jnp.stack([jnp.cos(angle), jnp.sin(angle)], axis=-1)
    right = jnp.stack([u[:, 1], -u[:, 0]], axis=-1) * ((k + 0.5) * w)[:, None]
    return u, right, on_b, i < 2 * (la + lb)


class Traffic(NamedTuple):
    """The drawn traffic of a junction, each (size,): lane slot, on the minor road, real
    slot, box length and width [m], speed [m/s], IDM parameters, and its queues (common.queue)."""

    lane: Array
    minor: Array
    valid: Array
    length: Array
    width: Array
    speed: Array
    idm: IDMParams
    q: c.Queue


def queue_positions(d: c.Draws, t: Traffic, radius) -> tuple[Array, Array]:
    """Each agent's position along its lane (size,) [m] (0 at the lane's reference point;
    minor-road queues stop before the conflict zone, major-road ones start in -60..80 m)
    and the lanes' half-length [m]."""
    stop_gap = c.equilibrium_gap(t.speed, jnp.zeros(t.speed.shape), t.idm) * d.u(13, 1.0, 1.4)
    head_gap = t.q.of_head(t.lane, jnp.maximum(stop_gap, d.u(14, 8.0, 40.0)))
    minor_front = -radius - head_gap - 0.5 * t.q.of_head(t.lane, t.length)
    major_front = c.quantize(d.lane(15, -60.0, 80.0))[t.lane]
    rel = jnp.where(t.minor, minor_front, major_front) + t.q.from_head(t.lane)
    half = jnp.maximum(300.0, -jnp.min(jnp.where(t.valid, rel, 0.0)) + 150.0)
    return rel, half


def junction_agents(d: c.Draws, t: Traffic, lanes: tuple[Array, Array], beta, rel, route):
    """The agents at ``rel`` along their lanes (``lanes``: unit directions and right offsets
    (LANES, 2) of :func:`_lanes`), routed on ``route``, all vehicles; the whole junction turned
    by a drawn angle. Returns (AgentState, sort axis (2,), angle [rad])."""
    u, right = lanes
    diag = jnp.stack([1.0 + jnp.cos(beta), jnp.sin(beta)])
    angle = d.s(7, -jnp.pi, jnp.pi)
    xy = c.rotate(right[t.lane] + rel[:, None] * u[t.lane], angle)
    agents = AgentState(
        x=xy[:, 0],
        y=xy[:, 1],
        heading=jnp.arctan2(u[t.lane, 1], u[t.lane, 0]) + angle,
        speed=t.speed,
        accel=c.idm_accel(t.speed, t.q.lead_gap, t.q.lead_speed, t.idm),
        length=t.length,
        width=t.width,
        valid=t.valid,
        route=route,
        kind=jnp.zeros(t.valid.shape, jnp.int32),
    )
    return agents, c.rotate(diag / jnp.sqrt(jnp.sum(diag * diag)), angle), angle


def build(seed, scenario_id, cfg: c.FamilyConfig, size: int) -> Scenario:
    """Scenario ``scenario_id`` of campaign ``seed`` (traced ints), padded to ``size`` agents."""
    key = c.scenario_key(seed, NAME, scenario_id)
    n = c.agent_count(key, cfg, LOG_UNIFORM)
    d = c.Draws(key, size)
    slot = jnp.arange(size)
    valid = slot < n
    n_v = n  # vehicles: every agent, less the pedestrians
    if cfg.pedestrians:
        n_v = n - crosswalks.pedestrian_count(d, n)
        valid = slot < n_v
    w = d.s(2, 3.2, 3.6)
    beta = d.s(3, jnp.radians(70.0), jnp.radians(110.0))
    la, lb = d.si(4, 1, 3), d.si(5, 1, 3)
    radius = jnp.hypot(la * w, lb * w) / jnp.sin(beta) + 2.0
    n_b = jnp.clip(jnp.round(n_v * d.s(6, 0.25, 0.5)).astype(jnp.int32), 1, n_v - 1)
    minor = valid & (slot >= n_v - n_b)
    length, width = c.draw_sizes(d)
    speed = jnp.where(minor, d.u(8, 0.0, 8.0), d.u(9, 8.0, 16.0))
    idm = c.draw_idm(d)
    idm = c.cap_speed(speed, replace(idm, v0=d.u(10, 11.0, 17.0)))
    count_a, total = 2 * la, 2 * (la + lb)
    route = jnp.where(minor, d.i(11, count_a, total), d.i(11, 0, count_a))
    traffic = Traffic(
        route, minor, valid, length, width, speed, idm, c.queue(d, 12, route, valid, length, speed, idm)
    )
    stop_r = radius + crosswalks.SETBACK if cfg.pedestrians else radius  # stop lines from the centre
    rel, half = queue_positions(d, traffic, stop_r)
    u, right, _on_b, lane_valid = _lanes(la, lb, beta, w)
    lines = jnp.stack([right - half * u, right + half * u], axis=1)
    agents, axis, angle = junction_agents(d, traffic, (u, right), beta, rel, route)
    road_map = c.road(
        c.edge_pad(c.rotate(lines, angle)),
        jnp.full(c.LANES, w),
        lane_valid,
        axis,
        jnp.zeros(2),
        radius,
    )
    stop_s = jnp.where(minor, half - stop_r, jnp.inf)
    signal = None
    if cfg.signals:
        signal = _signal_plan(route >= count_a, half - stop_r, d.s(16, 0.0, CYCLE_S))
        stop_s = jnp.full(size, jnp.inf, c.F32)
    if cfg.pedestrians:
        junction = Junction(la, lb, beta, w, radius, n_v, n, angle)
        xy = right[route] + rel[:, None] * u[route]
        vehicles = crosswalks.Vehicles(valid, route >= count_a, xy, u[route], length, width, speed)
        agents, idm, stop_s, road_map, signal = _with_pedestrians(
            d, junction, vehicles, (agents, idm, stop_s, road_map, signal)
        )
    sc = c.scenario(
        d,
        cfg,
        agents=agents,
        idm=idm,
        stop_s=stop_s,
        road_map=road_map,
        n=n,
        scenario_id=scenario_id,
        signal=signal,
    )
    if cfg.pedestrians:  # the ego is a vehicle
        sc = replace(sc, ego_index=jnp.minimum(jnp.floor(d.s(0, 0.0, 1.0) * n_v).astype(jnp.int32), n_v - 1))
    return sc


SIGNAL_SPEED = 13.89  # [m/s] design speed of the signal timings (50 km/h)


def _signal_plan(on_b, line_s, phase_s) -> SignalPlan:
    """Two-phase plan of every agent (size,): road A's green starts at -``phase_s`` [s], road
    B (``on_b``) has the conflicting phase; stop line ``line_s`` [m] along each route."""
    main, cross = two_phase(SIGNAL_SPEED)
    pick = lambda a, b: jnp.where(on_b, b, a).astype(c.F32)  # noqa: E731
    return SignalPlan(
        line_s=jnp.broadcast_to(jnp.asarray(line_s, c.F32), on_b.shape),
        cycle=pick(main.cycle, cross.cycle),
        offset=pick(main.offset, cross.offset) - phase_s,
        green=pick(main.green, cross.green),
        amber=pick(main.amber, cross.amber),
    )


class Junction(NamedTuple):
    """The drawn junction a pedestrian layer needs: lanes per direction of A and B, crossing
    angle [rad], lane width and conflict radius [m], vehicle and agent counts (), and the
    drawn rotation [rad]."""

    la: Array
    lb: Array
    beta: Array
    w: Array
    radius: Array
    n_v: Array
    n: Array
    angle: Array


def _with_pedestrians(d: c.Draws, j: Junction, vehicles: crosswalks.Vehicles, parts: tuple) -> tuple:
    """Agents, IDM, stop_s, road and signals with pedestrians in slots n_v..n-1 and the eight
    walking routes in route slots 2 (la + lb) .. 2 (la + lb) + 7 (drivesim.scenarios.families.
    crosswalks)."""
    agents, idm, stop_s, road_map, signal = parts
    cw = crosswalks.crosswalks(j.la, j.lb, j.beta, j.w, j.radius)
    peds = crosswalks.pedestrians(d, j.n_v, j.n, cw, vehicles)
    total = 2 * (j.la + j.lb)
    pick = lambda a, b: jnp.where(peds.is_ped, a, b)  # noqa: E731
    xy = c.rotate(peds.xy, j.angle)
    agents = AgentState(
        x=pick(xy[:, 0], agents.x),
        y=pick(xy[:, 1], agents.y),
        heading=pick(peds.heading + j.angle, agents.heading),
        speed=pick(peds.speed, agents.speed),
        accel=pick(crosswalks.start_accel(peds.speed, peds.idm), agents.accel),
        length=pick(PEDESTRIAN_SIZE[0], agents.length),
        width=pick(PEDESTRIAN_SIZE[1], agents.width),
        valid=agents.valid | peds.is_ped,
        route=pick(total + peds.route, agents.route),
        kind=crosswalks.kind_of(peds.is_ped),
    )
    idm = IDMParams(**{f: pick(getattr(peds.idm, f), getattr(idm, f)) for f in IDM_DEFAULTS})
    slots = jnp.arange(c.LANES + crosswalks.ROUTES)
    is_walk = (slots >= total) & (slots < total + crosswalks.ROUTES)
    walk_lines = c.edge_pad(c.rotate(cw.lines, j.angle))[jnp.clip(slots - total, 0, crosswalks.ROUTES - 1)]
    grow = lambda a: jnp.pad(a, [(0, crosswalks.ROUTES)] + [(0, 0)] * (a.ndim - 1))  # noqa: E731
    road_map = c.road(
        jnp.where(is_walk[:, None, None], walk_lines, grow(road_map.centers)),
        jnp.where(is_walk, crosswalks.CROSSWALK_WIDTH, grow(road_map.widths)),
        grow(road_map.lane_valid) | is_walk,
        road_map.sort_axis,
        road_map.conflict_xy,
        road_map.conflict_radius,
    )
    if signal is None:  # walkers yield at the kerb while priority traffic is near
        kerb = jnp.where(cw.on_b[peds.route], jnp.inf, crosswalks.kerb_line(stop_s.shape))
        return agents, idm, pick(kerb, stop_s), road_map, None
    beside_b = ~cw.on_b[peds.route]  # crossing road A: walking beside road B
    walk = crosswalks.walk_plan(_signal_plan(beside_b, 0.0, d.s(16, 0.0, CYCLE_S)), 2.0 * cw.half[peds.route])
    signal = SignalPlan(**{f: pick(getattr(walk, f), getattr(signal, f)) for f in signals.ROWS})
    # a walker a vehicle would meet (one drawn inside the junction on red) waits for a clear junction
    stop_s = jnp.where(peds.blocked, crosswalks.kerb_line(stop_s.shape), stop_s)
    return agents, idm, stop_s, road_map, signal
