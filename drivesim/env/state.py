"""The environment's state: Brax's ``State`` shape (pipeline_state, obs, reward, done,
metrics, info), as a PyTree dataclass of the core, so Brax's wrappers and trainers accept
it and the core needs no Brax import."""

from __future__ import annotations

import dataclasses
from typing import Any

from drivesim.core.rollout import SimState
from drivesim.core.types import Array, pytree_dataclass


@pytree_dataclass
class Episode:
    """The running episode of one environment (``State.pipeline_state``).

    sim: the engine's SimState; index: () int32 the pool entry of the Scenario it runs
    (read from the pool each step rather than carried, so a restart moves only the state);
    progress: () ego route progress [m] at the last step (the reward's progress is the gain).
    """

    sim: SimState
    index: Array
    progress: Array


@pytree_dataclass
class AgentsEpisode:
    """The running episode of a multi-agent environment (drivesim.env.multi_agent).

    sim: the engine's SimState; index: () int32 its pool entry; start_arc, last_arc: (K,)
    each learned agent's route arc length [m] at the reset and after the last step.
    """

    sim: SimState
    index: Array
    start_arc: Array
    last_arc: Array


@pytree_dataclass
class State:
    """One environment's state after a reset or a step; every array on the device.

    pipeline_state: :class:`Episode` (:class:`AgentsEpisode` in a multi-agent environment,
    the inner State under drivesim.env.multi_agent.FlatAgents); obs: (observation_size,) float32;
    reward: () float32 of the step that led here (0 after a reset); done: () float32, 1 where
    the episode terminated (the ego collided or left the road);
    metrics: {name: () float32} of the step: collided, offroad (0/1), progress (route metres
    gained), overflow (1 where the engine's window search was not proven exact this step),
    bad_action (1 where the action was not finite and zeros drove instead);
    info: {name: () array}: ``terminated`` (as done), ``truncation`` (1 where the scenario's
    time limit was reached without terminating: the future exists, a learner bootstraps),
    ``scenario_id`` (int32), ``step`` (int32 steps since the reset), plus what wrappers add.
    """

    pipeline_state: Any
    obs: Array
    reward: Array
    done: Array
    metrics: dict[str, Any]
    info: dict[str, Any]

    def replace(self, **changes) -> State:
        """A copy with ``changes`` (Brax's ``State.replace``)."""
        return dataclasses.replace(self, **changes)
