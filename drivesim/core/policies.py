"""Ego policy parameters: IDM, constant speed, open loop, MLP (all PyTrees)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core.observation import observation_size
from drivesim.core.types import IDM_DEFAULTS, IDMParams, MLPParams, OpenLoopParams, SimConfig


def idm_policy(**overrides: float) -> IDMParams:
    """Ego IDM parameters: the published defaults with ``overrides``; fields () float32."""
    values = {**IDM_DEFAULTS, **overrides}
    return IDMParams(**{k: jnp.asarray(v, jnp.float32) for k, v in values.items()})


def open_loop_policy(actions) -> OpenLoopParams:
    """Open-loop actions (S, 2) [accel, steer]."""
    return OpenLoopParams(actions=jnp.asarray(actions, jnp.float32))


def init_mlp(seed: int, sizes: tuple[int, ...]) -> MLPParams:
    """MLP with layer ``sizes`` (input first, 2 last), scaled-normal weights, zero biases."""
    rng = np.random.default_rng(seed)
    weights, biases = [], []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        weights.append(jnp.asarray(rng.normal(0.0, 1.0 / np.sqrt(n_in), (n_in, n_out)), jnp.float32))
        biases.append(jnp.zeros((n_out,), jnp.float32))
    return MLPParams(weights=tuple(weights), biases=tuple(biases))


def default_policy_params(config: SimConfig, hidden: tuple[int, ...] = (64, 64)):
    """Default parameters for ``config.policy``: IDM defaults, None for constant speed,
    zero actions for open loop, a seed-0 MLP of the right input size for mlp."""
    if config.policy == "idm":
        return idm_policy()
    if config.policy == "constant":
        return None
    if config.policy == "open_loop":
        return open_loop_policy(np.zeros((config.num_steps, 2), np.float32))
    return init_mlp(0, (observation_size(config.obs_neighbours), *hidden, 2))


def stack_policies(policies: list):
    """Stack P policies of one kind along a new leading axis (for sweeps)."""
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *policies)
