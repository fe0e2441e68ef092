"""PPO with GAE, the whole rollout-then-update loop inside one jitted program per device call.

Layout (PureJaxRL style): ``lax.scan`` over updates; inside, a ``lax.scan`` over rollout steps
(policy + environment), a reverse ``lax.scan`` for GAE, and a ``lax.scan`` over epochs of a
``lax.scan`` over minibatches. The program runs under ``shard_map`` over a 1-D mesh ``data``:
environments are sharded, parameters / optimiser state / RNG are replicated, gradients and
statistics are averaged across devices with ``pmean``.

Sharding invariance: every random draw that touches one environment is keyed by the replicated
key folded with the environment's global id, and a minibatch is a fixed share of every
environment's time steps, so 1 device and 8 devices compute the same global minibatches (equal
up to floating-point reduction order).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from drivesim.core.types import Array, pytree_dataclass
from drivesim.parallel.programs import ProgramCache
from drivesim.train import networks
from drivesim.train.config import TrainConfig
from drivesim.train.env import EnvState, ScenarioPool, env_reset, env_step

AXIS = "data"


@pytree_dataclass
class TrainState:
    """Everything a training run carries between updates.

    params: ActorCritic (replicated); opt_state: optax state (replicated);
    env: EnvState (B,) and obs: (B, obs_size), sharded over the mesh;
    key: (2,) uint32 raw PRNG key (replicated); update: () int32 updates done.
    """

    params: networks.ActorCritic
    opt_state: Any
    env: EnvState
    obs: Array
    key: Array
    update: Array


@pytree_dataclass
class Transition:
    """One rollout step of the local environments; fields (B,) or (B, ...).

    done: the episode ended at this step (terminated or truncated); bootstrap: the value of
    the episode's last observation where it was truncated by its time limit, else 0 (where
    it ended in a collision or off the road, nothing follows)."""

    obs: Array
    action: Array
    log_prob: Array
    value: Array
    reward: Array
    done: Array
    bootstrap: Array


@pytree_dataclass
class UpdateMetrics:
    """Per-update statistics, reduced over all devices; fields ().

    episodes: episodes that ended during the rollout; mean_return, collision_rate,
    offroad_rate, progress: over those episodes (NaN if none ended); mean_reward: per step.
    """

    episodes: Array
    mean_return: Array
    collision_rate: Array
    offroad_rate: Array
    progress: Array
    mean_reward: Array
    policy_loss: Array
    value_loss: Array
    entropy: Array
    approx_kl: Array


def make_optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """Adam with global-norm gradient clipping; the learning rate decays linearly to 0 over
    ``ppo.anneal_updates`` updates when that is set (one optimiser step per minibatch)."""
    p = cfg.ppo
    rate = p.learning_rate
    if p.anneal_updates is not None:
        rate = optax.linear_schedule(p.learning_rate, 0.0, p.anneal_updates * p.epochs * p.minibatches)
    return optax.chain(optax.clip_by_global_norm(p.max_grad_norm), optax.adam(rate, eps=1e-5))


def make_mesh(devices=None) -> Mesh:
    """1-D mesh ``data`` over ``devices`` (default: every device)."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.array(devices), (AXIS,))


def state_specs() -> TrainState:
    """PartitionSpec prefix tree of a TrainState."""
    # A PyTree prefix of PartitionSpecs in the TrainState structure (the JAX sharding idiom).
    return TrainState(params=P(), opt_state=P(), env=P(AXIS), obs=P(AXIS), key=P(), update=P())  # type: ignore[arg-type]


def env_noise(key: Array, env_id: Array) -> Array:
    """Standard normal noise (B, 2), one stream per global environment id."""
    return jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(key, i), (2,)))(env_id)


def collect(
    params,
    env: EnvState,
    obs: Array,
    key: Array,
    pool: ScenarioPool,
    cfg: TrainConfig,
    first_step: Array | int = 0,
):
    """Roll the local environments for ``rollout_steps``; returns the final (env, obs) and
    the Transition / StepOutput stacks (T, B, ...). first_step: replicated () index of the
    run's first step of this rollout (the environments' shared re-sort counter)."""
    std = jnp.exp(params.log_std)

    def step(carry, xs):
        step_key, step_index = xs
        env, obs = carry
        mean = networks.actor_mean(params, obs)
        action = mean + std * env_noise(step_key, env.env_id)
        value = networks.critic_value(params, obs)
        new_env, new_obs, out = env_step(pool, env, action, cfg.env, cfg.ppo.num_envs, step_index)
        final_value = jax.lax.cond(  # only where some episode hit its time limit (1 step in 80)
            jnp.any(out.truncated),
            lambda o: networks.critic_value(params, o),
            lambda o: jnp.zeros(o.shape[:-1], o.dtype),
            out.final_obs,
        )
        tr = Transition(
            obs=obs,
            action=action,
            log_prob=networks.log_prob(params, mean, action),
            value=value,
            reward=out.reward,
            done=out.done,
            bootstrap=jnp.where(out.truncated, final_value, 0.0),
        )
        return (new_env, new_obs), (tr, out)

    keys = jax.random.split(key, cfg.ppo.rollout_steps)
    steps = first_step + jnp.arange(cfg.ppo.rollout_steps, dtype=jnp.int32)
    (env, obs), (traj, outs) = jax.lax.scan(step, (env, obs), (keys, steps))
    return env, obs, traj, outs


def gae(traj: Transition, last_value: Array, gamma: float, lam: float) -> tuple[Array, Array]:
    """Generalised advantage estimation over (T, B); returns (advantages, returns).

    An episode cut by its time limit is bootstrapped with the value of its last observation
    (partial-episode bootstrapping, Pardo et al. 2018), so a crash just past the limit costs
    what it costs anywhere else; a collision or leaving the road ends the return."""

    def back(carry, tr):
        adv, next_value = carry
        live = 1.0 - tr.done.astype(jnp.float32)
        delta = tr.reward + gamma * (next_value * live + tr.bootstrap) - tr.value
        adv = delta + gamma * lam * live * adv
        return (adv, tr.value), adv

    _, advantages = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
    return advantages, advantages + traj.value


def ppo_loss(params, batch, cfg: TrainConfig):
    """Clipped PPO loss on one local minibatch (leaves (B, t, ...)); advantages already
    normalised. Returns (loss, (policy_loss, value_loss, entropy, approx_kl))."""
    p = cfg.ppo
    tr, adv, ret = batch
    mean = networks.actor_mean(params, tr.obs)
    new_log_prob = networks.log_prob(params, mean, tr.action)
    log_ratio = new_log_prob - tr.log_prob
    ratio = jnp.exp(log_ratio)
    policy_loss = -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - p.clip_eps, 1 + p.clip_eps) * adv))
    value = networks.critic_value(params, tr.obs)
    clipped = tr.value + jnp.clip(value - tr.value, -p.clip_eps, p.clip_eps)
    value_loss = 0.5 * jnp.mean(jnp.maximum(jnp.square(value - ret), jnp.square(clipped - ret)))
    ent = networks.entropy(params)
    loss = policy_loss + p.vf_coef * value_loss - p.ent_coef * ent
    approx_kl = jnp.mean((ratio - 1.0) - log_ratio)
    return loss, (policy_loss, value_loss, ent, approx_kl)


def _global_normalise(adv: Array) -> Array:
    mean = jax.lax.pmean(jnp.mean(adv), AXIS)
    var = jax.lax.pmean(jnp.mean(jnp.square(adv)), AXIS) - jnp.square(mean)
    return (adv - mean) / (jnp.sqrt(jnp.maximum(var, 0.0)) + 1e-8)


def learn(params, opt_state, key, data, env_id: Array, cfg: TrainConfig, optimizer):
    """``epochs`` passes over the rollout data (leaves (T, B, ...)); minibatch m holds, for every
    environment, the time steps perm_env[m*T/M:(m+1)*T/M] of a per-environment permutation."""
    p = cfg.ppo
    steps_per_mb = p.rollout_steps // p.minibatches
    by_env = jax.tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), data)  # (B, T, ...)

    def minibatch(carry, mb):
        params, opt_state = carry
        tr, adv, ret = mb
        grad_fn = jax.value_and_grad(ppo_loss, has_aux=True)
        (_, aux), grads = grad_fn(params, (tr, _global_normalise(adv), ret), cfg)
        grads = jax.lax.pmean(grads, AXIS)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), jax.lax.pmean(jnp.stack(aux), AXIS)

    def epoch(carry, epoch_key):
        params, opt_state = carry
        order = lambda i: jax.random.permutation(jax.random.fold_in(epoch_key, i), p.rollout_steps)  # noqa: E731
        perm = jax.vmap(order)(env_id)

        def split(x):  # (B, T, ...) -> (M, B, T/M, ...)
            x = jax.vmap(lambda row, order: row[order])(x, perm)
            x = x.reshape((x.shape[0], p.minibatches, steps_per_mb) + x.shape[2:])
            return jnp.swapaxes(x, 0, 1)

        mbs = jax.tree_util.tree_map(split, by_env)
        (params, opt_state), aux = jax.lax.scan(minibatch, (params, opt_state), mbs)
        return (params, opt_state), aux

    keys = jax.random.split(key, p.epochs)
    (params, opt_state), aux = jax.lax.scan(epoch, (params, opt_state), keys)
    return params, opt_state, jnp.mean(aux.reshape(-1, 4), axis=0)


def episode_stats(outs, rewards: Array) -> dict:
    """Global episode statistics of a rollout's StepOutputs (T, B)."""
    done = outs.done.astype(jnp.float32)
    total = lambda x: jax.lax.psum(jnp.sum(x), AXIS)  # noqa: E731
    episodes = total(done)
    per = lambda x: total(done * x.astype(jnp.float32)) / episodes  # noqa: E731 (NaN if none)
    steps = jax.lax.psum(jnp.asarray(rewards.size, jnp.float32), AXIS)
    return dict(
        episodes=episodes,
        mean_return=per(outs.final_return),
        collision_rate=per(outs.collided),
        offroad_rate=per(outs.offroad),
        progress=per(outs.final_progress),
        mean_reward=total(rewards) / steps,
    )


def one_update(state: TrainState, pool: ScenarioPool, cfg: TrainConfig, optimizer):
    """Collect a rollout, compute GAE, run the PPO epochs (per device, inside shard_map)."""
    key, k_roll, k_learn = jax.random.split(state.key, 3)
    first_step = state.update * cfg.ppo.rollout_steps
    env, obs, traj, outs = collect(state.params, state.env, state.obs, k_roll, pool, cfg, first_step)
    last_value = networks.critic_value(state.params, obs)
    advantages, returns = gae(traj, last_value, cfg.ppo.gamma, cfg.ppo.gae_lambda)
    params, opt_state, losses = learn(
        state.params, state.opt_state, k_learn, (traj, advantages, returns), env.env_id, cfg, optimizer
    )
    metrics = UpdateMetrics(
        **episode_stats(outs, traj.reward),
        policy_loss=losses[0],
        value_loss=losses[1],
        entropy=losses[2],
        approx_kl=losses[3],
    )
    new = TrainState(params=params, opt_state=opt_state, env=env, obs=obs, key=key, update=state.update + 1)
    return new, metrics


class Trainer:
    """Compiled PPO for one TrainConfig on one mesh: ``init_state()`` and ``run(state, n)``."""

    def __init__(self, cfg: TrainConfig, pool: ScenarioPool, mesh: Mesh | None = None):
        self.cfg = cfg.validate()
        self.mesh = make_mesh() if mesh is None else mesh
        devices = self.mesh.devices.size
        if cfg.ppo.num_envs % devices:
            raise ValueError(
                f"TrainConfig.ppo.num_envs={cfg.ppo.num_envs} must be a multiple of "
                f"the device count {devices}"
            )
        self.optimizer = make_optimizer(cfg)
        self.pool = jax.device_put(pool, NamedSharding(self.mesh, P()))
        self._programs = ProgramCache(PROGRAM_CACHE_SIZE)  # jitted programs per n
        self._executables = ProgramCache(PROGRAM_CACHE_SIZE)  # ahead-of-time compiled, per n

    def shardings(self) -> TrainState:
        """NamedSharding prefix tree of a TrainState on this mesh."""
        return jax.tree_util.tree_map(
            lambda spec: NamedSharding(self.mesh, spec), state_specs(), is_leaf=lambda x: isinstance(x, P)
        )

    def init_state(self) -> TrainState:
        """Fresh parameters, optimiser state and environments from ``cfg.seed``."""
        state = _init_state(self.pool, self.cfg)
        return self.place(state)

    def place(self, state: TrainState) -> TrainState:
        """Put a (host or device) TrainState on the mesh with the training shardings."""
        shard = self.shardings()
        return jax.tree_util.tree_map(
            lambda s, sub: jax.device_put(sub, s),
            shard,
            state,
            is_leaf=lambda x: isinstance(x, NamedSharding),
        )

    def program(self, n: int):
        """The jitted program running ``n`` updates: (TrainState, pool) -> (TrainState, metrics (n,)).
        Kept by this Trainer (its config and mesh are fixed; the key is n)."""

        def build():
            body = partial(_run_updates, n=n, cfg=self.cfg, optimizer=self.optimizer)
            mapped = jax.shard_map(
                body,
                mesh=self.mesh,
                in_specs=(state_specs(), P()),
                out_specs=(state_specs(), P()),
                check_vma=False,
            )
            return jax.jit(mapped)

        return self._programs.get(n, build)

    def compile(self, state: TrainState, n: int) -> float:
        """Compile the ``n``-update program ahead of time for ``state``'s shapes; returns seconds
        (about 0 if this Trainer already compiled it)."""
        t0 = time.perf_counter()
        self._executables.get(n, lambda: self.program(n).lower(state, self.pool).compile())
        return time.perf_counter() - t0

    def run(self, state: TrainState, n: int) -> tuple[TrainState, UpdateMetrics]:
        """Run ``n`` updates on the devices (one call, no host round trip per step)."""
        run = self._executables.peek(n) or self.program(n)
        return run(state, self.pool)


PROGRAM_CACHE_SIZE = 8


def _run_updates(state: TrainState, pool: ScenarioPool, n: int, cfg: TrainConfig, optimizer):
    return jax.lax.scan(lambda s, _: one_update(s, pool, cfg, optimizer), state, None, length=n)


@partial(jax.jit, static_argnames="cfg")
def _init_state(pool: ScenarioPool, cfg: TrainConfig) -> TrainState:
    key = jax.random.PRNGKey(cfg.seed)
    key, k_params = jax.random.split(key)
    p = cfg.ppo
    params = networks.init_actor_critic(
        k_params, cfg.env.obs_size, p.hidden, p.init_log_std, p.actor_last_scale
    )
    env, obs = env_reset(pool, jnp.arange(p.num_envs, dtype=jnp.int32), p.num_envs, cfg.env)
    return TrainState(
        params=params,
        opt_state=make_optimizer(cfg).init(params),
        env=env,
        obs=obs,
        key=key,
        update=jnp.zeros((), jnp.int32),
    )
