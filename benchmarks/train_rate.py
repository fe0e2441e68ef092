"""Training env steps/s of this checkout's trainer, with the CLI's configuration, and
against the IDM engine on the same scenarios.

    .venv/bin/python benchmarks/train_rate.py [--calls 8] [--envs 256] [--engine]

``--envs`` environments x 32 steps, 16 agents, 80-step episodes, the 2,048-scenario pool;
one device call of 20 updates to compile and warm up, then ``--calls`` timed calls. With
``--engine``, each call alternates with ``simulate`` (IDM ego) of ``--envs`` pool scenarios
x 80 steps, and the ratio of the two env-steps/s is taken pair by pair. Prints one JSON
object: the per-call rates, their median and, with ``--engine``, the engine's and the ratios.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8, help="timed device calls of 20 updates")
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--engine", action="store_true", help="alternate with the IDM engine")
    args = parser.parse_args()
    from drivesim.train.config import EnvConfig, PPOConfig, TrainConfig
    from drivesim.train.env import build_pool
    from drivesim.train.ppo import Trainer, make_mesh

    cfg = TrainConfig(
        env=EnvConfig(num_agents=16, episode_steps=80),
        ppo=PPOConfig(num_envs=args.envs, rollout_steps=32, anneal_updates=1221),
        updates=1221,
        chunk=20,
        checkpoint_every=100,
    )
    pool = build_pool(cfg.env)
    trainer = Trainer(cfg, pool, make_mesh(jax.devices()))
    state, _ = trainer.run(trainer.init_state(), 20)
    jax.block_until_ready(state)
    engine = _engine(pool, cfg, args.envs) if args.engine else None
    rates, engine_rates = [], []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        state, _ = trainer.run(state, 20)
        jax.block_until_ready(state)
        rates.append(20 * cfg.ppo.batch_steps / (time.perf_counter() - t0))
        if engine is not None:
            engine_rates.append(engine())
    out: dict = {"env_steps_per_s": [round(r) for r in rates], "median": round(statistics.median(rates))}
    if engine_rates:
        ratios = [r / e for r, e in zip(rates, engine_rates, strict=True)]
        out.update(
            engine_steps_per_s=[round(r) for r in engine_rates],
            engine_median=round(statistics.median(engine_rates)),
            ratio_median=round(statistics.median(ratios), 3),
            ratios=[round(r, 3) for r in ratios],
        )
    print(json.dumps(out))


def _engine(pool, cfg, envs: int):
    """A timer of ``simulate`` (IDM ego) of ``envs`` pool scenarios: env-steps/s per call."""
    import dataclasses

    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate

    batch = jax.tree_util.tree_map(lambda leaf: leaf[:envs], pool.scenarios)
    sim = dataclasses.replace(cfg.env.sim, policy="idm")
    policy = idm_policy()
    jax.block_until_ready(simulate(batch, policy, sim))

    def timed() -> float:
        t0 = time.perf_counter()
        jax.block_until_ready(simulate(batch, policy, sim))
        return envs * sim.num_steps / (time.perf_counter() - t0)

    return timed


if __name__ == "__main__":
    main()
