"""The intersection with turning traffic (``synthetic:intersection_turns``): the two crossing
roads of ``intersection`` (same draws: 70-110 degrees, 1-2 lanes per direction, major road A
with priority, minor road B yielding), where TURN_LEFT of the agents turn left and TURN_RIGHT
turn right along curved routes; the rest go straight.

Turn mix: 10% left, 10% right, 80% straight per approach, the order of the default turning
shares of capacity analyses (HCM planning defaults, NCHRP Report 599). A left turn runs from
the approach's innermost lane to the innermost lane of the road on its left, a right turn from
the outermost lane to the outermost lane on its right, along a circular arc tangent to both
lane centre lines (a fillet of radius 9-14 m for left turns, 6-10 m for right turns, drawn per
scenario). The arc is ARC = 5 chords, each within R (1 - cos(phi / 10)) of the circle: at most
0.26 m, for a 110-degree turn of radius 14 m. Every agent's projection and box corners are
evaluated over its route's segments, so 8 points per route instead of 16 run the family
1.5-1.8x faster. Turning drivers keep a turn speed sqrt(A_LAT R) (IDM desired speed; initial speed
at most 0.9 of it): IDM has no curve-speed model, so they drive the approach at it too.
Priority follows the engine's yield rule: minor-road agents and major-road left turners (who
cross the oncoming lanes) yield at the stop line while a priority agent is near the junction;
major-road straight and right-turning agents have priority. A turner queued
past its turn's start drives straight instead.

Route slots: the straight lanes of ``intersection`` (2 (la + lb)), then the 8 turns (approach
A forward, A backward, B forward, B backward; left then right), then padding; POINTS points
per route (straight lanes: 2, the last repeated).
"""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import Scenario, replace
from drivesim.scenarios.families import common as c
from drivesim.scenarios.families.intersection import Traffic, _lanes, junction_agents, queue_positions

NAME = "intersection_turns"
LOG_UNIFORM = True
POINTS = 8  # points per route (a point class of drivesim.scenarios.batching)
SEARCHES = (True, True)  # (junction zone, bent routes) its batches may need (core.switches)
ROUTES = 16  # route slots: up to 8 straight lanes and 8 turns
ARC = POINTS - 3  # chords of a turn's arc
TURN_LEFT, TURN_RIGHT = 0.10, 0.10  # shares of agents turning
A_LAT = 2.5  # [m/s^2] comfortable lateral acceleration of the turn speed
LEFT_TARGET = (2, 3, 1, 0)  # approach (A fwd, A bwd, B fwd, B bwd) -> the one a left turn joins
RIGHT_TARGET = (3, 2, 0, 1)
REFUSED_OPTIONS = {"pedestrians": "has no crosswalks: option 'pedestrians' is for intersection"}


def _approaches(la, lb):
    """Per approach (4,): first lane slot and lane count."""
    base = jnp.stack([0, la, 2 * la, 2 * la + lb])
    count = jnp.stack([la, la, lb, lb])
    return base, count


def _cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _turn(r_in, u_in, r_out, u_out, radius, half):
    """A route (POINTS, 2) from lane line (r_in + t u_in) onto (r_out + t u_out): straight from
    t = -half, the fillet arc of ``radius``, then straight for ``half``; and the lane coordinate
    t of the arc's start on the incoming line ()."""
    sin_phi, cos_phi = _cross(u_in, u_out), jnp.sum(u_in * u_out)
    phi = jnp.arctan2(sin_phi, cos_phi)
    t_meet = _cross(r_out - r_in, u_out) / sin_phi
    corner = r_in + t_meet * u_in
    tangent = radius * jnp.tan(0.5 * jnp.abs(phi))
    start = corner - tangent * u_in
    sigma = jnp.sign(phi)
    h_in = jnp.arctan2(u_in[1], u_in[0])
    centre = start + sigma * radius * jnp.stack([-jnp.sin(h_in), jnp.cos(h_in)])
    h = h_in + phi * jnp.arange(ARC + 1) / ARC
    arc = centre - sigma * radius * jnp.stack([-jnp.sin(h), jnp.cos(h)], axis=-1)
    route = jnp.concatenate([(r_in - half * u_in)[None], arc, (arc[-1] + half * u_out)[None]])
    return route, t_meet - tangent


def build(seed, scenario_id, cfg: c.FamilyConfig, size: int) -> Scenario:
    """Scenario ``scenario_id`` of campaign ``seed`` (traced ints), padded to ``size`` agents."""
    key = c.scenario_key(seed, NAME, scenario_id)
    n = c.agent_count(key, cfg, LOG_UNIFORM)
    d = c.Draws(key, size)
    slot = jnp.arange(size)
    valid = slot < n
    w = d.s(2, 3.2, 3.6)
    beta = d.s(3, jnp.radians(70.0), jnp.radians(110.0))
    la, lb = d.si(4, 1, 3), d.si(5, 1, 3)
    radius = jnp.hypot(la * w, lb * w) / jnp.sin(beta) + 2.0
    n_b = jnp.clip(jnp.round(n * d.s(6, 0.25, 0.5)).astype(jnp.int32), 1, n - 1)
    minor = valid & (slot >= n - n_b)
    length, width = c.draw_sizes(d)
    count_a, total = 2 * la, 2 * (la + lb)
    lane = jnp.where(minor, d.i(11, count_a, total), d.i(11, 0, count_a))
    # turns: the approach of the drawn lane; left from its innermost lane, right its outermost
    base, count = _approaches(la, lb)
    approach = jnp.sum(lane[:, None] >= base[None, 1:], axis=1)
    pick = d.u(16, 0.0, 1.0)
    kind = jnp.where(pick < TURN_LEFT, 0, jnp.where(pick >= 1.0 - TURN_RIGHT, 1, -1))  # -1 straight
    outermost = base[approach] + count[approach] - 1
    lane = jnp.where(kind == 0, base[approach], jnp.where(kind == 1, outermost, lane))
    turn_radius = jnp.stack([d.s(8, 9.0, 14.0), d.s(9, 6.0, 10.0)])
    v_turn = jnp.sqrt(A_LAT * turn_radius[jnp.maximum(kind, 0)])
    speed = jnp.where(minor, d.u(8, 0.0, 8.0), d.u(9, 8.0, 16.0))
    speed = jnp.where(kind >= 0, jnp.minimum(speed, c.SPEED_CAP * v_turn), speed)
    idm = c.draw_idm(d)
    idm = replace(idm, v0=jnp.where(kind >= 0, v_turn, d.u(10, 11.0, 17.0)))
    idm = c.cap_speed(speed, idm)
    traffic = Traffic(
        lane, minor, valid, length, width, speed, idm, c.queue(d, 12, lane, valid, length, speed, idm)
    )
    rel, half = queue_positions(d, traffic, radius)
    u, right, _on_b, lane_valid = _lanes(la, lb, beta, w)
    # the 8 turn routes, approach-major (left, right)
    a_idx = jnp.repeat(jnp.arange(4), 2)
    is_right = jnp.tile(jnp.arange(2), 4)
    target = jnp.where(is_right == 1, jnp.asarray(RIGHT_TARGET)[a_idx], jnp.asarray(LEFT_TARGET)[a_idx])
    lane_in = jnp.where(is_right == 1, base[a_idx] + count[a_idx] - 1, base[a_idx])
    lane_out = jnp.where(is_right == 1, base[target] + count[target] - 1, base[target])
    turns, t_start = [], []
    for k in range(8):
        route_k, start_k = _turn(
            right[lane_in[k]], u[lane_in[k]], right[lane_out[k]], u[lane_out[k]], turn_radius[k % 2], half
        )
        turns.append(route_k)
        t_start.append(start_k)
    turn_lines = jnp.stack(turns)  # (8, POINTS, 2)
    straight = jnp.stack([right - half * u, right + half * u], axis=1)
    straight = jnp.concatenate([straight, jnp.repeat(straight[:, -1:], POINTS - 2, axis=1)], axis=1)
    # agents: a turner whose front starts past its arc's start (less 5 m) drives straight
    turn_slot = 2 * approach + jnp.maximum(kind, 0)
    room = jnp.stack(t_start)[turn_slot] - 5.0
    kind = jnp.where((kind >= 0) & (rel + 0.5 * length <= room) & valid, kind, -1)
    route = jnp.where(kind >= 0, total + turn_slot, lane)
    slots = jnp.arange(ROUTES)
    from_turn = jnp.clip(slots - total, 0, 7)
    is_turn_slot = (slots >= total) & (slots < total + 8)
    straight = jnp.pad(straight, ((0, ROUTES - c.LANES), (0, 0), (0, 0)))
    lines = jnp.where(is_turn_slot[:, None, None], turn_lines[from_turn], straight)
    route_valid = jnp.pad(lane_valid, (0, ROUTES - c.LANES)) | is_turn_slot
    agents, axis, angle = junction_agents(d, traffic, (u, right), beta, rel, route)
    road_map = c.road(
        c.rotate(lines, angle),
        jnp.full(ROUTES, w),
        route_valid,
        axis,
        jnp.zeros(2),
        radius,
    )
    major_left = ~minor & (kind == 0)
    stop_s = jnp.where(minor | major_left, half - radius, jnp.inf)
    return c.scenario(
        d, cfg, agents=agents, idm=idm, stop_s=stop_s, road_map=road_map, n=n, scenario_id=scenario_id
    )
