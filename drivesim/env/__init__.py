"""drivesim as an RL environment: ``drivesim.env.make(SOURCE, ...)`` gives an environment with
``reset(key)`` and ``step(state, action)`` (Brax's interface, batched with ``jax.vmap``);
``drivesim.env.wrappers.wrap`` adds the time limit, auto-reset and the batch axis;
``make(SOURCE, learned="all")`` lets every agent learn (drivesim.env.multi_agent);
``make_vec`` gives a Gymnasium vector environment (NumPy in and out, drivesim.env.gym);
``patch_jax`` lets Brax's trainers run on this JAX (drivesim.env.brax_compat)."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "make": "drivesim.env.environment",
    "DrivingEnv": "drivesim.env.environment",
    "MultiAgentEnv": "drivesim.env.multi_agent",
    "flat_wrap": "drivesim.env.multi_agent",
    "ACTION_SIZE": "drivesim.env.environment",
    "State": "drivesim.env.state",
    "Episode": "drivesim.env.state",
    "AgentsEpisode": "drivesim.env.state",
    "Box": "drivesim.env.spaces",
    "Neighbours": "drivesim.env.observations",
    "NeighboursAndRoad": "drivesim.env.observations",
    "RewardConfig": "drivesim.env.reward",
    "StepRecord": "drivesim.env.reward",
    "PoolSpec": "drivesim.env.pool",
    "wrap": "drivesim.env.wrappers",
    "patch_jax": "drivesim.env.brax_compat",
    "VectorEnv": "drivesim.env.gym",
    "make_vec": "drivesim.env.gym",
    "GymnaxEnv": "drivesim.env.gymnax",
    "score": "drivesim.env.evaluate",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
