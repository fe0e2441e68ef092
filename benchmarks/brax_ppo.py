"""Brax's PPO trains an ego on ``drivesim.env.make("synthetic:highway", ...)``; the learned
ego is scored on held-out scenario ids against the IDM and constant-speed egos.

    .venv/bin/python benchmarks/brax_ppo.py [--steps 3000000] [--held-out 512]

Training: ``brax.training.agents.ppo.train`` with ``wrap_env_fn=drivesim.env.wrap`` (restarts
draw from the 2,048-scenario pool, ids from 1,000,000), 16 agents, 80-step episodes. The
networks are Brax's own (``make_ppo_networks``) with its Gaussian policy (``"normal"``: the
environment clips actions to [-1, 1]) started as drivesim's trainer starts its own: the
mean's last layer at zero, so the first policy is the IDM ego the actions correct, and a
noise of 0.1 (``--brax-networks``: Brax's defaults, a tanh-Gaussian of noise about 0.7).
Evaluation: ``--held-out`` scenarios with ids 0.. (outside the pool), one episode each from
``reset_at``, the deterministic policy; an episode's progress counts until it terminates.
The IDM ego is the zero action (the engine's IDM ego, bit for bit); the constant-speed ego is
``simulate`` with ``policy=CONSTANT``. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import jax
import jax.numpy as jnp
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3_000_000)
    parser.add_argument("--held-out", type=int, default=512)
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="only check that it runs")
    parser.add_argument("--brax-networks", action="store_true", help="Brax's default networks")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.held_out, args.envs = 2_000, 16, 16
    from drivesim.core.policies import CONSTANT
    from drivesim.core.rollout import simulate
    from drivesim.core.types import replace
    from drivesim.env import make, patch_jax, wrap
    from drivesim.env.evaluate import score

    patch_jax()
    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.ppo import train as ppo

    env = make("synthetic:highway", agents=16, episode_steps=80, pool_size=2048, first_id=1_000_000)
    curve = []
    t0 = time.perf_counter()
    make_policy, params, _ = ppo.train(
        environment=env,
        wrap_env_fn=wrap,
        num_timesteps=args.steps,
        episode_length=env.episode_length,
        num_envs=args.envs,
        batch_size=args.envs,
        num_minibatches=8 if args.envs >= 64 else 2,
        unroll_length=20,
        num_updates_per_batch=4,
        learning_rate=3e-4,
        entropy_cost=1e-3,
        discounting=0.99,
        reward_scaling=0.01,
        normalize_observations=True,
        num_evals=6,
        num_eval_envs=128,
        seed=args.seed,
        progress_fn=lambda step, m: curve.append(_point(step, m)),
        **({} if args.brax_networks else {"network_factory": _networks(ppo_networks)}),
    )
    train_s = time.perf_counter() - t0
    held = make("synthetic:highway", agents=16, episode_steps=80, pool_size=args.held_out, first_id=0)
    policy = make_policy(params, deterministic=True)
    learned = score(held, lambda obs, key: policy(obs, key)[0])
    idm = score(held, lambda obs, key: jnp.zeros((obs.shape[0], 2)))
    constant = jax.device_get(simulate(held.pool.scenarios, None, replace(held.config, policy=CONSTANT)))
    out = {
        "env_steps": args.steps,
        "train_s": round(train_s, 1),
        "env_steps_per_s_with_ppo": round(args.steps / train_s),
        "held_out": args.held_out,
        "learned": learned,
        "idm": idm,
        "constant": {
            "collision_rate": float(np.mean(constant.ego_collided)),
            "offroad_rate": float(np.mean(constant.offroad)),
            "progress_m": float(np.mean(constant.progress_m)),
        },
        "curve": curve,
    }
    print(json.dumps(out))


def _networks(ppo_networks):
    """Brax's PPO networks with a Gaussian policy whose mean starts at zero, noise 0.1."""
    return functools.partial(
        ppo_networks.make_ppo_networks,
        distribution_type="normal",
        noise_std_type="log",
        init_noise_std=0.1,
        mean_kernel_init_fn=jax.nn.initializers.constant,
        mean_kernel_init_kwargs={"value": 0.0},
    )


def _point(step, metrics) -> dict:
    """One point of the learning curve from Brax's evaluation metrics."""
    return {
        "step": int(step),
        "reward": float(metrics["eval/episode_reward"]),
        "collided": float(metrics["eval/episode_collided"]),
    }


if __name__ == "__main__":
    main()
