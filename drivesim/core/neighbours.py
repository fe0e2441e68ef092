"""Each agent's leader and the junction zone, as one step's search finds them.

The sorted-window search (core.interactions) and, where straight routes cross, the
junction zone (core.junction) together give each agent's leader; core.collisions adds the
zone's overlaps to the window's. The all-pairs path (core.exact) replaces both. Every
function works on one scenario.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from drivesim.core import bends, certificate, exact, interactions, junction, search_choice
from drivesim.core.materialize import decided_once, materialize
from drivesim.core.road import lane_ok
from drivesim.core.types import Array, Scenario, SimConfig


class RouteLayout(NamedTuple):
    """How one scenario's agents are ordered and searched: groups (L,) route group of each
    route; cross_sep () the smallest separation between occupied parallel routes of
    different groups (core.certificate); crossings: its occupied straight routes' crossings
    (core.junction); on_bent (N,) bool: the present agents on bent routes, which core.bends
    searches directly."""

    groups: Array
    cross_sep: Array
    crossings: junction.Crossings
    on_bent: Array


def route_layout(scenario: Scenario, config: SimConfig) -> RouteLayout:
    """The RouteLayout of one scenario. Bent routes are searched directly when their agents
    fit ``bends.capacity`` (not with lane changes); otherwise they join the routes they meet
    and the certificate fails there, as without the search. With lane changes every real
    route is one group and every real route counts as occupied."""
    road, ag = scenario.road, scenario.agents
    ok = lane_ok(road.centers)
    lines = exact.route_lines(road.centers, ok)
    sep = exact.route_separation(lines)
    real = road.lane_valid & (jnp.sum(ok, axis=-1) > 0)
    lanes = config.lane_changes
    onehot = ag.route[:, None] == jnp.arange(road.widths.shape[0])[None, :]
    driven = onehot & ag.valid[:, None]  # (N, L)
    bent = real & ~lines.straight
    cap = bends.group_capacity(config, ag.x.shape[0])  # the same order whichever search runs
    bent = bent & (jnp.sum(driven & bent[None, :]) <= cap) if cap > 0 else jnp.zeros_like(bent)
    separation = math.inf if lanes else exact.GROUP_SEPARATION
    groups = exact.route_groups(sep, real, separation, lines.crossing, alone=bent)
    occupied = real if lanes else jnp.any(driven, axis=0)  # changers: any lane
    occupied = occupied & ~bent
    cross_sep = certificate.cross_group_separation(sep, groups, occupied, lines.crossing)
    on_bent = jnp.any(driven & bent[None, :], axis=1)
    return RouteLayout(groups, cross_sep, junction.crossings(lines, groups, occupied), on_bent)


class SearchesOn(NamedTuple):
    """Unbatched () bools: some scenario of the batch has crossing straight routes (the
    junction zone) / agents on bent routes searched directly (core.bends); Python bools
    where they are fixed when the program is built (core.switches). bend_rows: the most
    agents on those routes in any scenario (() int32), a Python int where fixed: the rows
    of the bent-route search (a scenario with more is flagged and simulated again)."""

    zone: Array | bool
    bends: Array | bool
    bend_rows: Array | int | None = None


def needs_zone(crossings: junction.Crossings) -> Array:
    """Whether scenarios with these Crossings (fields of any shape) need the junction zone:
    they have crossing straight routes."""
    return crossings.r0 > -jnp.inf


def needs_bends(on_bent: Array) -> Array:
    """() bool: some agent of ``on_bent`` (RouteLayout.on_bent, any shape) is searched by the
    bent-route search."""
    return jnp.any(on_bent)


def searches_on(scenarios: Scenario, config: SimConfig) -> SearchesOn | None:
    """Which direct searches a batch (leading axis) needs; None on the all-pairs path."""
    if config.search.neighbours == "all_pairs":
        return None
    layout = jax.vmap(lambda one: route_layout(one, config))(scenarios)
    most = jnp.max(jnp.sum(layout.on_bent.astype(jnp.int32), axis=-1), initial=0)
    zone = jnp.any(needs_zone(layout.crossings))
    return SearchesOn(zone=zone, bends=needs_bends(layout.on_bent), bend_rows=most)


def zone_search(a, proj, geo: junction.Crossings, reach: certificate.Reach, config: SimConfig, zone_on=None):
    """The junction zone's ZoneSearch of SortedAgents ``a``, merged with the direct search
    of agents on bent routes (core.bends); None on the all-pairs path.

    zone_on: a SearchesOn of unbatched () bools that skip each search under a real
    conditional when False, or of Python bools that leave it out of the program or inline it
    (core.switches), its bend_rows an int where fixed; None: always search."""
    if config.search.neighbours == "all_pairs":
        return None
    n = a.x.shape[0]
    capacity = min(search_choice.junction_capacity(config, n), n)

    def run(_):
        drift = jnp.max(jnp.where(a.valid, jnp.abs(proj.d), 0.0))
        widest = jnp.max(jnp.where(a.valid, a.lane_width, 0.0))
        # each agent's own overlap reach: its half diagonal and the largest one added
        diag = jnp.sqrt(a.length * a.length + a.width * a.width)
        own = 0.5 * (diag + jnp.max(jnp.where(a.valid, diag, 0.0)))
        radius = junction.zone_radius(geo, drift, widest, jnp.minimum(own, reach.pair))  # (N,)
        return junction.search(a, proj, geo, radius, config.search.window, capacity)

    def gated(on, search):  # a real conditional on an unbatched switch; None: always search
        if on is None or on is True:
            return search(None)
        if on is False:  # fixed when the program is built: no search in it
            return junction.empty(n)
        return jax.lax.cond(on, search, lambda _: junction.empty(n), None)

    zone = gated(None if zone_on is None else zone_on.zone, run)
    bend_cap = bends.capacity(config, n)
    if zone_on is not None and isinstance(zone_on.bend_rows, int):  # fixed: the batch's most
        bend_cap = min(bend_cap, zone_on.bend_rows)
    if bend_cap == 0 or (zone_on is not None and zone_on.bends is False):  # no bent-route search
        return zone
    run_bends = lambda _: bends.search(a, proj, config.search.window, bend_cap)  # noqa: E731
    return junction.merge(zone, gated(None if zone_on is None else zone_on.bends, run_bends))


def leader_zone(zone, zone_on):
    """``zone`` for :func:`leader_search`; None where the program holds neither direct search
    (``zone_on`` fixed, both False): no candidate to compare, no decision to store."""
    if zone_on is not None and zone_on.zone is False and zone_on.bends is False:
        return None
    return zone


def leaders_from_all_pairs(config: SimConfig) -> bool:
    """Whether :func:`leader_search` takes the leaders from all pairs (core.exact), exact by
    construction: on the all-pairs path, and with lane changes. Every lane is one sorted
    group then, and on roads of four or five lanes the window held too few members of each
    lane to prove the leaders, and many scenarios went to the fallback)."""
    return config.search.neighbours == "all_pairs" or bool(config.lane_changes)


def leader_search(a, proj, axis: Array, config: SimConfig, zone=None) -> tuple[Array, Array, Array]:
    """Sorted slot of each agent's leader (-1: none), the gap to it (bumper to bumper
    along the tangent, +inf: none) and its speed; each (N,). axis: (2,) sort axis; zone: the
    step's ZoneSearch (None: the window alone, unused where :func:`leaders_from_all_pairs`)."""
    if leaders_from_all_pairs(config):
        return exact.all_pairs_leaders(a, proj)
    slot = jnp.arange(a.x.shape[0], dtype=jnp.int32)
    forward = proj.tx * axis[0] + proj.ty * axis[1] >= 0.0
    offset = interactions.leader_offsets(
        a.x, a.y, a.valid, proj.tx, proj.ty, proj.d, a.lane_width, config.search.window, forward=forward
    )
    offset = materialize(offset)  # one search, read by every picked value
    ds, speed, length = interactions.leader_pick(
        offset, a.x, a.y, a.speed, a.length, proj.tx, proj.ty, config.search.window
    )
    lead = jnp.where(offset != 0, slot + offset, -1)
    if zone is not None:  # the nearer of the window's and the zone's candidates
        nearer = zone.ds < ds
        nearer = decided_once(nearer)  # read by four selects: one decision for all of them
        ds = jnp.where(nearer, zone.ds, ds)
        speed = jnp.where(nearer, zone.lead_speed, speed)
        length = jnp.where(nearer, zone.lead_length, length)
        lead = jnp.where(nearer, zone.lead, lead)
    gap = jnp.where(lead >= 0, ds - 0.5 * (a.length + length), jnp.inf)
    return lead, gap, speed
