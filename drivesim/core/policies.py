"""Ego policies: one interface (:class:`EgoPolicy`) and one registry.

A policy is a static, hashable object with ``init(config, key) -> params`` (a PyTree, or
None) and ``act(params, ego, config) -> (accel, tan_steer)``. ``SimConfig.policy`` holds a
registry name; the rollout looks the policy up here and nowhere else compares names.
Registered: ``idm``, ``constant``, ``open_loop``, ``mlp``. A user policy is registered with
:func:`register_policy`, or named ``package.module:NAME`` (NAME an EgoPolicy, or a function of no
arguments returning one), which :func:`get_policy` imports on first use.
"""

from __future__ import annotations

import importlib
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

    name: registry name. init_fn(config, key) -> params (key: a jax PRNG key, or None for
    the documented defaults). act_fn(params, ego, config) -> (accel [m/s^2], tan(steer)),
    each (); the engine clips accel to the configured limits; use :func:`steer_tan` to turn
    a steering angle into tan(steer), or ``ego.lane_tan`` to keep the lane.
    loader: optional ``module:function`` reference of a host-side reader
    ``(arg, config) -> params`` for ``NAME:ARG`` specs (e.g. ``mlp:FILE``); the core
    never imports it.
    """

    name: str
    init_fn: InitFn
    act_fn: ActFn
    loader: str | None = None

    def init(self, config: SimConfig, key=None) -> Params:
        """Parameters of this policy for ``config``."""
        return self.init_fn(config, key)

    def act(self, params: Params, ego: EgoInputs, config: SimConfig) -> tuple[Array, Array]:
        """(accel, tan(steer)) of the ego at one step; each ()."""
        return self.act_fn(params, ego, config)


_REGISTRY: dict[str, EgoPolicy] = {}


def register_policy(policy: EgoPolicy, *, overwrite: bool = False) -> EgoPolicy:
    """Add ``policy`` to the registry under ``policy.name``; returns it."""
    if not isinstance(policy, EgoPolicy):
        raise TypeError(f"register_policy: expected an EgoPolicy, got {type(policy).__name__}")
    if policy.name in _REGISTRY and _REGISTRY[policy.name] != policy and not overwrite:
        raise ValueError(f"ego policy {policy.name!r} is already registered")
    _REGISTRY[policy.name] = policy
    return policy


def registered_policies() -> tuple[str, ...]:
    """Names of the registered policies, in registration order."""
    return tuple(_REGISTRY)


class PolicyImportRefused(ValueError):
    """A ``package.module:NAME`` policy that the caller did not allow to be imported."""


def get_policy(name: str, allow_import: bool = True) -> EgoPolicy:
    """The policy registered as ``name``; ``module:NAME`` is imported (and registered under
    that string) on first use, or refused with :class:`PolicyImportRefused` where
    ``allow_import`` is False (a name read from a file is data, not code). Raises ValueError
    naming the policy."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    module_name, attr = module_spec(name)
    if not allow_import:
        raise PolicyImportRefused(f"ego policy {name!r} is code (module {module_name}); not imported")
    try:
        value = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"ego policy {name!r}: cannot import {attr!r} from {module_name!r} ({err})") from err
    policy = value if isinstance(value, EgoPolicy) else value() if callable(value) else value
    if not isinstance(policy, EgoPolicy):
        raise ValueError(f"ego policy {name!r}: {attr} is not an EgoPolicy (nor returns one)")
    _REGISTRY[name] = policy
    return policy


def module_spec(name: str) -> tuple[str, str]:
    """(module, attribute) of a ``package.module:NAME`` policy name, checked for form only
    (nothing is imported); ValueError naming the policy otherwise."""
    module_name, _, attr = name.partition(":")
    dotted = module_name.split(".")
    if not attr or not attr.isidentifier() or not all(part.isidentifier() for part in dotted):
        known = ", ".join(_REGISTRY)
        raise ValueError(f"unknown ego policy {name!r}; registered: {known}; or package.module:NAME")
    return module_name, attr


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

IDM = register_policy(EgoPolicy("idm", lambda config, key: idm_policy(), _idm_act))
CONSTANT = register_policy(EgoPolicy("constant", lambda config, key: None, _constant_act))
OPEN_LOOP = register_policy(
    EgoPolicy(
        "open_loop",
        lambda config, key: open_loop_policy(np.zeros((config.num_steps, 2), np.float32)),
        _open_loop_act,
    )
)
MLP = register_policy(
    EgoPolicy(
        "mlp",
        lambda config, key: init_mlp(
            _key_seed(key), (observation_size(config.obs_neighbours), *MLP_HIDDEN, 2)
        ),
        _mlp_act,
        loader="drivesim.train.policy_io:read_params",
    )
)


def default_policy_params(config: SimConfig):
    """Default parameters of ``config.policy`` (its ``init`` without a key): IDM defaults,
    None for constant speed, zero actions for open loop, a seed-0 (64, 64) MLP."""
    return get_policy(config.policy).init(config, None)


def stack_policies(policies: list):
    """Stack P policies of one kind along a new leading axis (for sweeps)."""
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *policies)
