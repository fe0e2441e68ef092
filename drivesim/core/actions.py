"""External controls of several agents of one scenario (the RL environment's learned agents).

An agent under external control drives as the engine would drive it plus a correction: its
acceleration is its car follower's (its own IDM; the ego's is the published defaults,
core.policies.corrected_accel) plus ``accel``, its steering the lane keeper's plus ``steer``
(core.policies.corrected_tan), so zero corrections drive exactly as the engine does.
"""

from __future__ import annotations

from dataclasses import field

import jax.numpy as jnp

from drivesim.core.observation import ego_values
from drivesim.core.types import Array, pytree_dataclass


@pytree_dataclass
class AgentActions:
    """Corrections of the learned agents in the sorted order of ``SortedAgents``; (N,) each.

    learned: bool, the slot's agent is under external control; accel: correction to its car
    follower [m/s^2]; steer: correction to its lane keeper's steering angle [rad] (0 where
    not learned); has_ego: static, True where the ego is learned in every scenario (its policy
    is then never computed); False: ``learned`` decides per scenario, and an ego that is not
    learned follows ``SimConfig.policy``.
    """

    learned: Array
    accel: Array
    steer: Array
    has_ego: bool = field(default=False, metadata={"static": True})

    @classmethod
    def by_agent(
        cls, agent_id: Array, lookup: Array, accel: Array, steer: Array, has_ego: bool
    ) -> AgentActions:
        """Actions of the K learned agents laid out in sorted order: ``agent_id`` (N,) int32
        each slot's agent (SortedAgents.agent_id); ``lookup`` (N,) int32 the learned index of
        each agent in the scenario's original order (-1: not learned); ``accel``, ``steer``
        (K,) by learned index."""
        index = lookup[agent_id]
        learned = index >= 0
        safe = jnp.maximum(index, 0)
        zero = jnp.zeros((), accel.dtype)
        return cls(
            learned=learned,
            accel=jnp.where(learned, accel[safe], zero),
            steer=jnp.where(learned, steer[safe], zero),
            has_ego=has_ego,
        )

    def ego_learned(self, is_ego: Array) -> Array:
        """() bool: the ego is among the learned agents."""
        (flag,) = ego_values(is_ego, [self.learned])
        return flag > 0.5

    def ego_pair(self, is_ego: Array) -> tuple[Array, Array]:
        """The ego's (accel, steer) corrections, () each."""
        accel, steer = ego_values(is_ego, [self.accel, self.steer])
        return accel, steer
