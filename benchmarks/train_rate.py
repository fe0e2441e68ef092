"""Training env steps/s of this checkout's trainer, with the CLI's configuration, and
against the IDM engine on the same scenarios.

    .venv/bin/python benchmarks/train_rate.py [--calls 8] [--envs 256] [--engine]

``--envs`` environments x 32 steps, 16 agents, 80-step episodes, the 2,048-scenario pool;
one device call of 20 updates to compile and warm up, then ``--calls`` timed calls. With
``--engine``, each call alternates with ``simulate`` (IDM ego) of ``--envs`` pool scenarios
x 80 steps, and the ratio of the two env-steps/s is taken pair by pair. Prints one JSON
object: the per-call rates and their median, the rate of the rollouts alone (the same
policy acting, no PPO update: ``ppo_update_share`` = 1 - training / rollout rate) and, with
``--engine``, the engine's rates and the ratios.
To compare two versions, run it in each checkout
alternately (``PYTHONPATH=OTHER_CHECKOUT``) and compare the medians pair by pair: the machine
drifts between runs, so only alternating pairs measured in one sitting are comparable.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax


def _ppo_options(args) -> dict:
    """The PPOConfig fields given on the command line."""
    names = ("epochs", "minibatches")
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8, help="timed device calls of 20 updates")
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--engine", action="store_true", help="alternate with the IDM engine")
    parser.add_argument("--epochs", type=int, default=None, help="PPO epochs per update")
    parser.add_argument("--minibatches", type=int, default=None, help="minibatches per epoch")
    args = parser.parse_args()
    from drivesim.train.config import EnvConfig, PPOConfig, TrainConfig
    from drivesim.train.env import build_pool
    from drivesim.train.ppo import Trainer, make_mesh

    cfg = TrainConfig(
        env=EnvConfig(num_agents=16, episode_steps=80),
        ppo=PPOConfig(num_envs=args.envs, rollout_steps=32, anneal_updates=1221, **_ppo_options(args)),
        updates=1221,
        chunk=20,
        checkpoint_every=100,
    )
    pool = build_pool(cfg.env)
    trainer = Trainer(cfg, pool, make_mesh(jax.devices()))
    state, _ = trainer.run(trainer.init_state(), 20)
    jax.block_until_ready(state)
    engine = _engine(pool, cfg, args.envs) if args.engine else None
    rollouts = _rollouts(trainer, state, cfg)
    rates, engine_rates, rollout_rates = [], [], []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        state, _ = trainer.run(state, 20)
        jax.block_until_ready(state)
        rates.append(20 * cfg.ppo.batch_steps / (time.perf_counter() - t0))
        rollout_rates.append(rollouts(state))
        if engine is not None:
            engine_rates.append(engine())
    out: dict = {"env_steps_per_s": [round(r) for r in rates], "median": round(statistics.median(rates))}
    shares = [1.0 - r / c for r, c in zip(rates, rollout_rates, strict=True)]
    out.update(
        rollout_steps_per_s=[round(r) for r in rollout_rates],
        rollout_median=round(statistics.median(rollout_rates)),
        ppo_update_share_median=round(statistics.median(shares), 3),
    )
    if engine_rates:
        ratios = [r / e for r, e in zip(rates, engine_rates, strict=True)]
        out.update(
            engine_steps_per_s=[round(r) for r in engine_rates],
            engine_median=round(statistics.median(engine_rates)),
            ratio_median=round(statistics.median(ratios), 3),
            ratios=[round(r, 3) for r in ratios],
        )
    print(json.dumps(out))


def _rollouts(trainer, state, cfg):
    """A timer of 20 rollouts alone (the policy acting in the environments, no PPO update):
    env-steps/s per call; the rest of an update's time is the PPO update."""
    from drivesim.train.ppo import collect

    def twenty(params, env, obs, key):
        def one(carry, k):
            env, obs = carry
            env, obs, _, _ = collect(params, env, obs, k, trainer.pool, cfg)
            return (env, obs), None

        return jax.lax.scan(one, (env, obs), jax.random.split(key, 20))[0]

    program = jax.jit(twenty)
    args = (state.params, state.env, state.obs, jax.random.PRNGKey(0))
    jax.block_until_ready(program(*args))

    def timed(current) -> float:
        t0 = time.perf_counter()
        jax.block_until_ready(program(current.params, current.env, current.obs, jax.random.PRNGKey(1)))
        return 20 * cfg.ppo.batch_steps / (time.perf_counter() - t0)

    return timed


def _engine(pool, cfg, envs: int):
    """A timer of ``simulate`` (IDM ego) of ``envs`` pool scenarios: env-steps/s per call."""
    import dataclasses

    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate

    batch = jax.tree_util.tree_map(lambda leaf: leaf[:envs], pool.scenarios)
    sim = dataclasses.replace(cfg.env.sim, policy=None)
    policy = idm_policy()
    jax.block_until_ready(simulate(batch, policy, sim))

    def timed() -> float:
        t0 = time.perf_counter()
        jax.block_until_ready(simulate(batch, policy, sim))
        return envs * sim.num_steps / (time.perf_counter() - t0)

    return timed


if __name__ == "__main__":
    main()
