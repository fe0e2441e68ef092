"""Training env steps/s of this checkout's trainer, with the CLI's configuration.

    .venv/bin/python benchmarks/train_rate.py [--calls 8]

256 environments x 32 steps, 16 agents, 80-step episodes, the 2,048-scenario pool; one device
call of 20 updates to compile and warm up, then ``--calls`` timed calls. Prints one JSON object:
the per-call rates and their median. To compare two versions, run it in each checkout
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
    args = parser.parse_args()
    from drivesim.train.config import EnvConfig, PPOConfig, TrainConfig
    from drivesim.train.env import build_pool
    from drivesim.train.ppo import Trainer, make_mesh

    cfg = TrainConfig(
        env=EnvConfig(num_agents=16, episode_steps=80),
        ppo=PPOConfig(num_envs=256, rollout_steps=32, anneal_updates=1221),
        updates=1221,
        chunk=20,
        checkpoint_every=100,
    )
    trainer = Trainer(cfg, build_pool(cfg.env), make_mesh(jax.devices()))
    state, _ = trainer.run(trainer.init_state(), 20)
    jax.block_until_ready(state)
    rates = []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        state, _ = trainer.run(state, 20)
        jax.block_until_ready(state)
        rates.append(20 * cfg.ppo.batch_steps / (time.perf_counter() - t0))
    print(
        json.dumps({"env_steps_per_s": [round(r) for r in rates], "median": round(statistics.median(rates))})
    )


if __name__ == "__main__":
    main()
