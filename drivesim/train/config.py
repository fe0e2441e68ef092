"""Training configuration: environment, reward, PPO and run settings (frozen, hashable).

Every config is a frozen dataclass so it can be a static argument of ``jax.jit``; the whole
:class:`TrainConfig` round-trips through JSON (:func:`config_to_dict` / :func:`config_from_dict`)
and is stored with every checkpoint.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from drivesim.core.observation import observation_size
from drivesim.core.policies import MLP
from drivesim.core.types import SimConfig
from drivesim.env.reward import RewardConfig


@dataclass(frozen=True)
class EnvConfig:
    """The RL view of the engine for the ego.

    family: synthetic scenario family of the training pool. num_agents: agent slots of every
    pool scenario (real agents = this, padded by ``pad_and_stack``). episode_steps: episode
    length (steps of ``dt``). pool_size scenarios with ids [pool_start, pool_start + pool_size)
    are generated once on the host and kept on the devices; held-out evaluation uses ids
    outside that range. family_seed: the family's campaign seed.

    sort_schedule: when the engine's odd-even re-sort pass runs (``SearchPlan.resort_every``).
    ``"global"`` (default): driven by one step counter shared by every environment, so the
    engine's re-sort is a real branch under ``vmap`` (about 5x cheaper per step on CPU than a
    per-environment predicate, which makes XLA run both branches). Episodes restart at
    different times, so the schedule relative to an episode's start differs from evaluation's;
    the order only affects which neighbours the observation lists first (and the window-overflow
    diagnostic), never the physics. ``"episode"``: driven by each episode's own step, exactly as
    :func:`drivesim.core.rollout.rollout` does, so observations equal evaluation's bit for bit;
    it costs more per step. Both learn alike.
    """

    family: str = "highway"
    num_agents: int = 16
    episode_steps: int = 80
    pool_size: int = 2048
    pool_start: int = 1_000_000
    family_seed: int = 0
    obs_neighbours: int = 6
    dt: float = 0.1
    sort_schedule: str = "global"
    reward: RewardConfig = field(default_factory=RewardConfig)

    @property
    def sim(self) -> SimConfig:
        """The engine config the environment steps (and the one that evaluates the policy)."""
        return SimConfig(
            dt=self.dt, num_steps=self.episode_steps, policy=MLP, obs_neighbours=self.obs_neighbours
        )

    @property
    def obs_size(self) -> int:
        return observation_size(self.obs_neighbours)


@dataclass(frozen=True)
class PPOConfig:
    """PPO with GAE (Schulman et al. 2017), PureJaxRL-style.

    One update = ``rollout_steps`` steps of ``num_envs`` environments, then ``epochs`` passes of
    ``minibatches`` minibatches each (by default one pass in 8: the update's matrix work is
    most of a training step's cost, and 3 passes in 4 learned no better over 10 M steps).
    init_log_std: initial log standard deviation of the Gaussian in the actor's unit action
    space, per (accel, steer). anneal_updates: when set, the learning rate falls linearly
    from ``learning_rate`` to 0 over that many updates (and stays 0 after); part of the
    config, so a resumed run keeps the same schedule.
    """

    num_envs: int = 256
    rollout_steps: int = 32
    epochs: int = 1
    minibatches: int = 8
    learning_rate: float = 1e-3
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    hidden: tuple[int, ...] = (32, 32)
    init_log_std: tuple[float, float] = (-1.0, -3.0)
    actor_last_scale: float = 0.01
    anneal_updates: int | None = None

    @property
    def batch_steps(self) -> int:
        """Environment steps per update."""
        return self.num_envs * self.rollout_steps


@dataclass(frozen=True)
class TrainConfig:
    """A training run: ``updates`` PPO updates, run ``chunk`` updates per device call (one
    jitted ``lax.scan``), a checkpoint every ``checkpoint_every`` updates (a multiple of chunk)."""

    env: EnvConfig = field(default_factory=EnvConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    updates: int = 100
    chunk: int = 10
    checkpoint_every: int = 50
    seed: int = 0

    def validate(self) -> TrainConfig:
        """Raise ValueError naming the field when the config is inconsistent; returns self."""
        p = self.ppo
        if p.num_envs < 1 or p.rollout_steps < 1:
            raise ValueError("TrainConfig.ppo: num_envs and rollout_steps must be >= 1")
        if p.rollout_steps % p.minibatches:
            raise ValueError(
                f"TrainConfig.ppo.minibatches={p.minibatches} must divide rollout_steps={p.rollout_steps}"
            )
        if self.updates < 1 or self.chunk < 1:
            raise ValueError("TrainConfig: updates and chunk must be >= 1")
        if self.checkpoint_every % self.chunk:
            raise ValueError(
                f"TrainConfig.checkpoint_every={self.checkpoint_every} must be a multiple of "
                f"chunk={self.chunk}"
            )
        if p.anneal_updates is not None and p.anneal_updates < 1:
            raise ValueError(f"TrainConfig.ppo.anneal_updates={p.anneal_updates} must be >= 1 (or None)")
        if self.env.sort_schedule not in ("global", "episode"):
            raise ValueError(
                f"TrainConfig.env.sort_schedule={self.env.sort_schedule!r}: use 'global' or 'episode'"
            )
        if self.env.pool_size < 1 or self.env.num_agents < 2:
            raise ValueError("TrainConfig.env: pool_size >= 1 and num_agents >= 2 required")
        return self


def config_to_dict(cfg: TrainConfig) -> dict:
    """JSON-ready dict of a TrainConfig."""
    return dataclasses.asdict(cfg)


def config_from_dict(data: dict) -> TrainConfig:
    """Inverse of :func:`config_to_dict` (tuples restored)."""
    env = dict(data["env"])
    env["reward"] = RewardConfig(**env["reward"])
    ppo = dict(data["ppo"])
    ppo["hidden"] = tuple(ppo["hidden"])
    ppo["init_log_std"] = tuple(ppo["init_log_std"])
    rest = {k: v for k, v in data.items() if k not in ("env", "ppo")}
    return TrainConfig(env=EnvConfig(**env), ppo=PPOConfig(**ppo), **rest)


def tiny_config(updates: int = 4, chunk: int = 2, anneal_updates: int | None = None) -> TrainConfig:
    """A CPU-seconds config (64 environments x 8 agents, 40-step episodes, 256 pool scenarios)
    used by the tests and ``benchmarks/train.py --quick``. With the learning rate annealed to
    0 over the run (``anneal_updates=updates``), a few hundred updates learn to drive faster
    than the car follower the policy corrects without colliding more. Its small budget
    (1,024 steps an update) passes over each update's data 3 times, in 4 minibatches: with
    PPOConfig's single pass, 300 updates did not yet add progress."""
    ppo = PPOConfig(num_envs=64, rollout_steps=16, epochs=3, minibatches=4, anneal_updates=anneal_updates)
    return TrainConfig(
        env=EnvConfig(num_agents=8, episode_steps=40, pool_size=256),
        ppo=ppo,
        updates=updates,
        chunk=chunk,
        checkpoint_every=chunk,
    )
