"""Actor-critic networks as PyTrees.

The actor's mean network is exactly an engine :class:`~drivesim.core.types.MLPParams`
(tanh hidden layers, tanh output, evaluated by :func:`drivesim.core.behavior.mlp_forward`),
so the deterministic trained policy is what ``drivesim run --policy mlp:FILE`` evaluates.
Exploration is a diagonal Gaussian around that mean in the actor's unit action space
(the environment clips to the control limits). The critic is a separate MLP of the same
observation and nothing else: the value of driving on, not of the time left, since an
episode's time limit is a cut, not an end of the road (the learner bootstraps there). Both
run their products at full float32 precision on every platform (drivesim.core.matmul), so a
GPU trains on the values a CPU computes.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from drivesim.core.behavior import mlp_forward, mlp_linear_out
from drivesim.core.types import Array, MLPParams, pytree_dataclass


@pytree_dataclass
class ActorCritic:
    """actor: MLPParams obs -> (2,) unit action mean; critic: MLPParams obs -> (1,) value;
    log_std: (2,) log standard deviation of the exploration Gaussian."""

    actor: MLPParams
    critic: MLPParams
    log_std: Array


def init_mlp_params(key: Array, sizes: tuple[int, ...], last_scale: float) -> MLPParams:
    """Scaled-normal weights (std 1/sqrt(fan_in), last layer times ``last_scale``), zero biases."""
    weights, biases = [], []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        scale = 1.0 / math.sqrt(n_in) * (last_scale if i == len(sizes) - 2 else 1.0)
        weights.append(scale * jax.random.normal(keys[i], (n_in, n_out), jnp.float32))
        biases.append(jnp.zeros((n_out,), jnp.float32))
    return MLPParams(weights=tuple(weights), biases=tuple(biases))


def init_actor_critic(
    key: Array, obs_size: int, hidden: tuple[int, ...], init_log_std, actor_last_scale: float
) -> ActorCritic:
    """Fresh parameters: small actor output layer (mean action near 0 at start)."""
    k_actor, k_critic = jax.random.split(key)
    return ActorCritic(
        actor=init_mlp_params(k_actor, (obs_size, *hidden, 2), actor_last_scale),
        critic=init_mlp_params(k_critic, (obs_size, *hidden, 1), 1.0),
        log_std=jnp.asarray(init_log_std, jnp.float32),
    )


def actor_mean(params: ActorCritic, obs: Array) -> Array:
    """Mean unit action (..., 2) in (-1, 1) for observations (..., obs_size)."""
    return mlp_forward(params.actor, obs)


def critic_value(params: ActorCritic, obs: Array) -> Array:
    """State value (...) of observations (..., obs_size)."""
    return mlp_linear_out(params.critic, obs)[..., 0]


def log_prob(params: ActorCritic, mean: Array, action: Array) -> Array:
    """Log density (...) of unit actions (..., 2) under N(mean, exp(log_std)^2)."""
    std = jnp.exp(params.log_std)
    z = (action - mean) / std
    return jnp.sum(-0.5 * z * z - params.log_std - 0.5 * math.log(2.0 * math.pi), axis=-1)


def entropy(params: ActorCritic) -> Array:
    """Entropy () of the diagonal Gaussian."""
    return jnp.sum(params.log_std + 0.5 * math.log(2.0 * math.pi * math.e))
