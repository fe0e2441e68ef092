"""On-ramp joining the rightmost lane of a 1-4 lane main road.

The ramp route is one polyline that tapers into the rightmost main lane and continues along
it, so IDM finds leaders across the merge. Ramp agents (12-30% of a log-uniform count, 1-24)
yield at a stop line before the merge zone while a rightmost-lane agent is near it; they
start far enough back to stop there at IDM's comfortable deceleration. Main-road speeds
14-28 m/s, ramp 8-16 m/s; queues at 1.0-1.4 times the IDM equilibrium gap.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from drivesim.core.types import AgentState, Scenario
from drivesim.scenarios.families import common as c

NAME = "merge"
LOG_UNIFORM = True
POINTS = 4
SEARCHES = (False, True)  # (junction zone, bent routes) its batches may need (core.switches)


SHARE = (0.12, 0.3)  # range of the ramp agents' share of the agents
MOST_ON_RAMP = 24


def most_bent(slots: int) -> int:
    """The most agents on the ramp (the family's one bent route) in a scenario of ``slots``
    agent slots: round(n x share) with n <= slots and share < SHARE[1], at most
    MOST_ON_RAMP (core.switches: sizes the bent-route search of its id batches)."""
    return max(1, min(MOST_ON_RAMP, slots - 1, math.floor(SHARE[1] * slots + 0.5)))


RAMP_MARGIN = 10.0  # m of mapped ramp behind the last ramp agent's rear


def _ramp(x_merge, road_end, w, extra=0.0):
    """Ramp polyline (4, 2) and its cumulative arc lengths (4,); ``extra`` [m] lengthens its
    first segment backwards (0: the 1 km ramp, bit for bit)."""
    start = jnp.stack([x_merge - 1000.0, jnp.asarray(-60.0, c.F32)])
    bend = jnp.stack([x_merge - 110.0, -1.3 * w])
    back = (start - bend) / jnp.sqrt(jnp.sum(jnp.square(start - bend)))
    ramp = jnp.stack(
        [
            start + back * extra,
            bend,
            jnp.stack([x_merge, jnp.zeros((), c.F32)]),
            jnp.stack([road_end, jnp.zeros((), c.F32)]),
        ]
    )
    seg = jnp.sqrt(jnp.sum(jnp.square(ramp[1:] - ramp[:-1]), axis=-1))
    return ramp, jnp.concatenate([jnp.zeros(1), jnp.cumsum(seg)])


def _along(poly, cum, s):
    """Points (n, 2) and headings (n,) at arc lengths s (n,) of a polyline (extrapolated)."""
    seg = jnp.sum(s[:, None] >= cum[None, 1:-1], axis=1)
    a, b = poly[seg], poly[seg + 1]
    d = b - a
    u = d / jnp.maximum(jnp.sqrt(jnp.sum(d * d, axis=-1)), 1e-12)[:, None]
    return a + (s - cum[seg])[:, None] * u, jnp.arctan2(u[:, 1], u[:, 0])


def build(seed, scenario_id, cfg: c.FamilyConfig, size: int) -> Scenario:
    """Scenario ``scenario_id`` of campaign ``seed`` (traced ints), padded to ``size`` agents."""
    key = c.scenario_key(seed, NAME, scenario_id)
    n = c.agent_count(key, cfg, LOG_UNIFORM)
    d = c.Draws(key, size)
    slot = jnp.arange(size)
    w = d.s(2, 3.4, 3.8)
    share = d.s(3, *SHARE)
    n_ramp = jnp.clip(jnp.round(n * share).astype(jnp.int32), 1, jnp.minimum(MOST_ON_RAMP, n - 1))
    n_main = n - n_ramp
    lanes = jnp.minimum(4, jnp.maximum(d.si(4, 1, 4), (n_main + 39) // 40))
    main = slot < n_main
    on_ramp = (slot >= n_main) & (slot < n)
    length, width = c.draw_sizes(d)
    speed = jnp.where(main, d.u(8, 14.0, 28.0), d.u(9, 8.0, 16.0))
    idm = c.cap_speed(speed, c.draw_idm(d))
    lane_of = jnp.where(main, d.i(10, 0, lanes), lanes)
    q_main = c.queue(d, 11, lane_of, main, length, speed, idm)
    along = c.quantize(d.lane(12, 0.0, 20.0))[lane_of] + q_main.offset
    front = jnp.max(jnp.where(main, along, -jnp.inf))
    x_merge = 0.5 * front + d.s(5, 40.0, 140.0)
    road_end = front + max(800.0, c.runway(cfg))
    # ramp queue: its head stops comfortably before the stop line (a standing leader)
    q_ramp = c.queue(d, 13, jnp.zeros(size, jnp.int32), on_ramp, length, speed, idm)
    stop_gap = c.equilibrium_gap(speed, jnp.zeros(size), idm) * d.u(14, 1.0, 1.4)
    ramp_group = jnp.zeros(size, jnp.int32)
    head_gap = q_ramp.of_head(ramp_group, jnp.maximum(stop_gap, d.u(15, 30.0, 90.0)))
    head_len = q_ramp.of_head(ramp_group, length)

    def placed(extra):
        ramp, cum = _ramp(x_merge, road_end, w, extra)
        stop_x = x_merge - 60.0
        s_stop = cum[1] + (stop_x - ramp[1, 0]) / (ramp[2, 0] - ramp[1, 0]) * (cum[2] - cum[1])
        return ramp, cum, s_stop, s_stop - head_gap - 0.5 * head_len + q_ramp.from_head(ramp_group)

    # a long ramp queue gets a longer ramp: its tail starts on the mapped ramp
    _, _, _, ramp_s = placed(0.0)
    tail = jnp.min(jnp.where(on_ramp, ramp_s - 0.5 * length, jnp.inf))
    ramp, cum, s_stop, ramp_s = placed(jnp.maximum(0.0, RAMP_MARGIN - tail))
    ramp_xy, ramp_heading = _along(ramp, cum, ramp_s)
    main_xy = jnp.stack([along, lane_of * w + d.normal(16, 0.1)], axis=-1)
    xy = jnp.where(main[:, None], main_xy, ramp_xy)
    heading = jnp.where(main, d.normal(17, 0.01), ramp_heading)
    stop_s = jnp.where(main, jnp.where(lane_of == 0, jnp.inf, c.PASSED), s_stop)
    lead_gap = jnp.where(main, q_main.lead_gap, q_ramp.lead_gap)
    lead_speed = jnp.where(main, q_main.lead_speed, q_ramp.lead_speed)
    angle = d.s(6, -jnp.pi, jnp.pi)
    slots = jnp.arange(c.LANES)
    k = slots.astype(c.F32)
    straight = jnp.stack(
        [
            jnp.stack([jnp.full(c.LANES, -300.0), k * w], -1),
            jnp.stack([jnp.full(c.LANES, road_end), k * w], -1),
        ],
        axis=1,
    )
    centers = jnp.where((slots == lanes)[:, None, None], ramp[None], c.edge_pad(straight, POINTS))
    xy = c.rotate(xy, angle)
    agents = AgentState(
        x=xy[:, 0],
        y=xy[:, 1],
        heading=heading + angle,
        speed=speed,
        accel=c.idm_accel(speed, lead_gap, lead_speed, idm),
        length=length,
        width=width,
        valid=slot < n,
        route=lane_of,
        kind=jnp.zeros(slot.shape, jnp.int32),
    )
    road_map = c.road(
        c.rotate(centers, angle),
        jnp.full(c.LANES, w),
        slots <= lanes,
        c.rotate(jnp.array([1.0, 0.0], c.F32), angle),
        c.rotate(jnp.stack([x_merge - 30.0, jnp.zeros((), c.F32)]), angle),
        30.0,
    )
    return c.scenario(
        d, cfg, agents=agents, idm=idm, stop_s=stop_s, road_map=road_map, n=n, scenario_id=scenario_id
    )
