"""Observation functions: what a learned agent sees of one environment.

An observation function is an object with ``size(config) -> int`` and
``__call__(sim, scenario, config) -> (size,) float32`` (the ego's); the environment calls it
after every reset and step. One that also has ``of_agents(sim, scenario, config, where,
progress) -> (K, size)`` (each learned agent's own, drivesim.env.learned) serves the
multi-agent environment (drivesim.env.multi_agent). :class:`Neighbours` is the engine's MLP
observation (the ego and its nearest agents, drivesim.core.observation);
:class:`NeighboursAndRoad` adds the road ahead.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from drivesim.core.observation import column_at, ego_slot, observation_at, observation_size
from drivesim.core.road import point_at
from drivesim.core.rollout import SimState, observation_of
from drivesim.core.types import Array, Scenario, SimConfig
from drivesim.env.learned import AgentView


@dataclass(frozen=True)
class Neighbours:
    """The ego in its own frame and ``config.obs_neighbours`` agents on each side of it
    (drivesim.core.observation.ego_observation), as the engine's MLP policy sees it."""

    def size(self, config: SimConfig) -> int:
        return observation_size(config.obs_neighbours)

    def __call__(self, sim: SimState, scenario: Scenario, config: SimConfig) -> Array:
        return observation_of(sim, config)

    def of_agents(
        self, sim: SimState, scenario: Scenario, config: SimConfig, where: AgentView, progress: Array
    ) -> Array:
        """(K, size): each learned agent's observation as the ego's (``progress`` (K,) [m])."""
        leader = (sim.lead_gap, sim.lead_speed)
        one = lambda slot, has, p: observation_at(  # noqa: E731
            sim.agents, sim.proj, p, slot, has, config.obs_neighbours, config.occlusion, leader
        )
        return jax.vmap(one)(where.slots, where.present, progress)


@dataclass(frozen=True)
class NeighboursAndRoad:
    """:class:`Neighbours` followed by the ego's lane ahead: ``points`` points of its route's
    centre line every ``spacing`` metres from its position, and the lane's left and right
    edges there (centre +- width / 2 along the centre line's normal), each point as
    (dx / 50, dy / 50) in the ego frame (x forward, y left): 6 * points more values."""

    points: int = 8
    spacing: float = 5.0

    def size(self, config: SimConfig) -> int:
        return observation_size(config.obs_neighbours) + 6 * self.points

    def __call__(self, sim: SimState, scenario: Scenario, config: SimConfig) -> Array:
        return jnp.concatenate(
            [observation_of(sim, config), road_ahead(sim, scenario, self.points, self.spacing)]
        )

    def of_agents(
        self, sim: SimState, scenario: Scenario, config: SimConfig, where: AgentView, progress: Array
    ) -> Array:
        """(K, size): each learned agent's observation as the ego's (``progress`` (K,) [m])."""
        near = Neighbours().of_agents(sim, scenario, config, where, progress)
        route = scenario.agents.route[sim.agents.agent_id[where.slots]]
        roads = jax.vmap(lambda slot, has, r: road_ahead_at(sim, scenario, self, (slot, has), r))(
            where.slots, where.present, route
        )
        return jnp.concatenate([near, roads], axis=-1)


def road_ahead(sim: SimState, scenario: Scenario, points: int, spacing: float) -> Array:
    """(6 * points,) the ego's lane ahead in its frame (see :class:`NeighboursAndRoad`):
    for each point nearest first, the centre's (x, y), the left edge's, the right edge's."""
    shape = NeighboursAndRoad(points=points, spacing=spacing)
    route = scenario.agents.route[scenario.ego_index]
    return road_ahead_at(sim, scenario, shape, ego_slot(sim.agents.is_ego), route)


def road_ahead_at(
    sim: SimState, scenario: Scenario, shape: NeighboursAndRoad, observer, route: Array
) -> Array:
    """:func:`road_ahead` of the agent ``observer`` = (sorted slot () int32, present () bool)
    on ``route`` (() int32, its lane in ``scenario.road``)."""
    a = sim.agents
    slot, has = observer
    ahead = (
        jnp.arange(shape.points + 1, dtype=jnp.float32) + 1.0
    ) * shape.spacing  # one more: the last tangent
    xs, ys = jax.vmap(lambda s: point_at(sim.proj.s + s, a.seg))(ahead)  # (points + 1, N) each
    cx, cy = column_at(xs, slot, has), column_at(ys, slot, has)
    tx, ty = cx[1:] - cx[:-1], cy[1:] - cy[:-1]
    norm = jnp.maximum(jnp.hypot(tx, ty), 1e-6)
    nx, ny = -ty / norm, tx / norm  # left normal
    half = 0.5 * scenario.road.widths[route]
    cx, cy = cx[:-1], cy[:-1]
    ex, ey, ec, es = column_at(jnp.stack([a.x, a.y, a.cos_h, a.sin_h]), slot, has)
    groups = [(cx, cy), (cx + half * nx, cy + half * ny), (cx - half * nx, cy - half * ny)]
    out = []
    for px, py in groups:
        dx, dy = px - ex, py - ey
        out += [(dx * ec + dy * es) / 50.0, (-dx * es + dy * ec) / 50.0]
    return jnp.stack(out, axis=-1).reshape(-1)
