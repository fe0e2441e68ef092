"""Ego policies: one interface (:class:`EgoPolicy`) and the built-in policies.

A policy is a static, hashable object with ``init(config, key) -> params`` (a PyTree, or
None) and ``act(params, ego, config) -> (accel, tan_steer)``. ``SimConfig.policy`` holds the
object itself (None: :data:`IDM`); the rollout calls it and nothing in the core looks a
policy up by name. Built in: :data:`IDM`, :data:`CONSTANT`, :data:`OPEN_LOOP`, :data:`MLP`.
Names (``idm``, ``mlp:FILE``, ``package.module:NAME``) are read by the pipeline
(drivesim.pipeline.policy_names).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core import behavior
from drivesim.core.observation import observation_size
from drivesim.core.types import IDM_DEFAULTS, Array, IDMParams, MLPParams, OpenLoopParams, SimConfig


@dataclass(frozen=True)
class EgoInputs:
    """What an ego policy sees at one step, before the step; arrays () float32 unless said.

    speed [m/s]; gap to the leader [m] (+inf: none); lead_speed [m/s]; lane_tan: the lane
    keeper's tan(steer); t: () int32 step; observe(): the (observation_size,) float32 ego
    observation (drivesim.core.observation), computed only when a policy calls it.
    """

    speed: Array
    gap: Array
    lead_speed: Array
    lane_tan: Array
    t: Array
    observe: Callable[[], Array]


Params = Any  # a PyTree of arrays, or None
InitFn = Callable[[SimConfig, Any], Params]
ActFn = Callable[[Params, EgoInputs, SimConfig], tuple[Array, Array]]


@dataclass(frozen=True)
class EgoPolicy:
    """An ego policy (hashable; part of the static configuration).

    name: what campaigns, ledgers and dashboards call it. init_fn(config, key) -> params
    (key: a jax PRNG key, or None for the documented defaults). act_fn(params, ego, config)
    -> (accel [m/s^2], tan(steer)), each (); the engine clips accel to the configured limits;
    use :func:`steer_tan` to turn a steering angle into tan(steer), or ``ego.lane_tan`` to
    keep the lane.
    """

    name: str
    init_fn: InitFn
    act_fn: ActFn

    def init(self, config: SimConfig, key=None) -> Params:
        """Parameters of this policy for ``config``."""
        return self.init_fn(config, key)

    def act(self, params: Params, ego: EgoInputs, config: SimConfig) -> tuple[Array, Array]:
        """(accel, tan(steer)) of the ego at one step; each ()."""
        return self.act_fn(params, ego, config)


def policy_of(config: SimConfig) -> EgoPolicy:
    """The ego policy ``config`` simulates: ``config.policy``, or :data:`IDM` where it is None."""
    return IDM if config.policy is None else config.policy


def steer_tan(steer: Array, config: SimConfig) -> Array:
    """tan of a steering angle [rad] clipped to +-config.max_steer; ()."""
    return jnp.tan(jnp.clip(steer, -config.max_steer, config.max_steer))


def corrected_tan(lane_tan: Array, steer: Array, config: SimConfig) -> Array:
    """tan(steer) of a learned ego that steers as a correction to the lane keeper: the lane
    keeper's ``lane_tan`` plus tan of ``steer`` [rad], each clipped to +-config.max_steer; ().
    A zero correction keeps the lane, so a policy learns lane changes, not lane keeping."""
    tan_max = math.tan(config.max_steer)
    return jnp.clip(lane_tan + steer_tan(steer, config), -tan_max, tan_max)


def corrected_accel(speed: Array, gap: Array, lead_speed: Array, correction: Array) -> Array:
    """Acceleration [m/s^2] of a learned ego that accelerates as a correction to the car
    follower: the ego IDM (published defaults, :func:`idm_policy`) toward the leader it
    follows, plus ``correction``; each (). The engine clips the sum to the limits. A zero
    correction follows as IDM does, so a policy learns when to drive faster or brake
    harder, not how to follow at all."""
    return behavior.follow_acceleration(speed, gap, lead_speed, idm_policy()) + correction


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


def _key_seed(key) -> int:
    return 0 if key is None else int(jax.random.randint(key, (), 0, 2**31 - 1))


def _idm_act(params: IDMParams, ego: EgoInputs, config: SimConfig):
    return behavior.follow_acceleration(ego.speed, ego.gap, ego.lead_speed, params), ego.lane_tan


def _constant_act(params, ego: EgoInputs, config: SimConfig):
    return jnp.zeros((), jnp.float32), ego.lane_tan


def _open_loop_act(params: OpenLoopParams, ego: EgoInputs, config: SimConfig):
    index = jnp.minimum(ego.t, params.actions.shape[0] - 1)
    return params.actions[index, 0], steer_tan(params.actions[index, 1], config)


def _mlp_act(params: MLPParams, ego: EgoInputs, config: SimConfig):
    accel, steer = behavior.action_from_unit(behavior.mlp_forward(params, ego.observe()), config)
    return corrected_accel(ego.speed, ego.gap, ego.lead_speed, accel), corrected_tan(
        ego.lane_tan, steer, config
    )


MLP_HIDDEN = (64, 64)

IDM = EgoPolicy("idm", lambda config, key: idm_policy(), _idm_act)
CONSTANT = EgoPolicy("constant", lambda config, key: None, _constant_act)
OPEN_LOOP = EgoPolicy(
    "open_loop",
    lambda config, key: open_loop_policy(np.zeros((config.num_steps, 2), np.float32)),
    _open_loop_act,
)
MLP = EgoPolicy(
    "mlp",
    lambda config, key: init_mlp(_key_seed(key), (observation_size(config.obs_neighbours), *MLP_HIDDEN, 2)),
    _mlp_act,
)

BUILT_IN = (IDM, CONSTANT, OPEN_LOOP, MLP)


def default_policy_params(config: SimConfig):
    """Default parameters of ``config``'s ego policy (its ``init`` without a key): IDM
    defaults, None for constant speed, zero actions for open loop, a seed-0 (64, 64) MLP."""
    return policy_of(config).init(config, None)


def stack_policies(policies: list):
    """Stack P policies of one kind along a new leading axis (for sweeps)."""
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *policies)
