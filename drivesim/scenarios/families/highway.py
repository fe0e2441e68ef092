"""Straight multi-lane highway (2-5 lanes), one direction, at a random orientation.

Agents: uniform count in [min_agents, max_agents]; speeds 18-32 m/s; queued per lane at
1.0-1.4 times their IDM equilibrium gap. The road is ROAD_LENGTH long, or longer when the
queues reach further: it runs on beyond the front agent for as far as an agent drives in the
episode (common.runway; a 128-agent queue on two lanes is 3-5 km long).
"""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import AgentState, Scenario
from drivesim.scenarios.families import common as c

NAME = "highway"
LOG_UNIFORM = False  # agent counts uniform in [min_agents, max_agents]
POINTS = 2  # points per lane polyline (before padding to common.POINTS)
SEARCHES = (False, False)  # (junction zone, bent routes) its batches may need (core.switches)
ROAD_LENGTH = 3000.0  # m, the shortest road


def build(seed, scenario_id, cfg: c.FamilyConfig, size: int) -> Scenario:
    """Scenario ``scenario_id`` of campaign ``seed`` (traced ints), padded to ``size`` agents."""
    key = c.scenario_key(seed, NAME, scenario_id)
    n = c.agent_count(key, cfg, LOG_UNIFORM)
    d = c.Draws(key, size)
    valid = jnp.arange(size) < n
    lanes = d.si(2, 2, 6)
    lane_width = d.s(3, 3.4, 3.8)
    angle = d.s(4, -jnp.pi, jnp.pi)
    length, width = c.draw_sizes(d)
    speed = d.u(8, 18.0, 32.0)
    lane_of = d.i(9, 0, lanes)
    idm = c.cap_speed(speed, c.draw_idm(d))
    q = c.queue(d, 10, lane_of, valid, length, speed, idm)
    start = c.quantize(100.0 + d.lane(13, 0.0, 20.0))
    along = start[lane_of] + q.offset
    front = jnp.max(jnp.where(valid, along, 0.0))
    road_length = jnp.maximum(ROAD_LENGTH, c.quantize(front + c.runway(cfg)))
    offset = lambda lane: (lane - (lanes - 1) / 2.0) * lane_width  # noqa: E731
    lateral = offset(lane_of) + d.normal(11, 0.15)
    xy = c.rotate(jnp.stack([along, lateral], axis=-1), angle)
    slots = jnp.arange(c.LANES)
    lines = jnp.stack(
        [
            jnp.stack([jnp.zeros(c.LANES), offset(slots)], -1),
            jnp.stack([jnp.full(c.LANES, road_length), offset(slots)], -1),
        ],
        axis=1,
    )
    agents = AgentState(
        x=xy[:, 0],
        y=xy[:, 1],
        heading=angle + d.normal(12, 0.01),
        speed=speed,
        accel=c.idm_accel(speed, q.lead_gap, q.lead_speed, idm),
        length=length,
        width=width,
        valid=valid,
        route=lane_of,
        kind=jnp.zeros(valid.shape, jnp.int32),
    )
    road_map = c.road(
        c.edge_pad(c.rotate(lines, angle)),
        jnp.full(c.LANES, lane_width),
        slots < lanes,
        jnp.stack([jnp.cos(angle), jnp.sin(angle)]),
        jnp.zeros(2),
        0.0,
    )
    stop_s = jnp.full(size, jnp.inf, c.F32)
    return c.scenario(
        d, cfg, agents=agents, idm=idm, stop_s=stop_s, road_map=road_map, n=n, scenario_id=scenario_id
    )
