"""Random-action environment steps/s of ``drivesim.env`` against the IDM engine on the same
scenarios, in one process, alternating.

    .venv/bin/python benchmarks/env_steps.py [--agents 16] [--envs 1024] [--repeats 5]

Engine: ``simulate`` (IDM ego) of ``--envs`` scenarios of the pool, 80 steps, metrics only.
Environment: ``drivesim.env.wrappers.wrap(drivesim.env.make(...))`` under one jitted
``lax.scan`` of 80 steps with uniform random actions in [-1, 1] (auto-reset included), the
Neighbours observation (55 values). Prints one JSON object: env-steps/s of each (median and
all repeats), their ratio, and the compile seconds of each program.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--source", default="synthetic:highway")
    parser.add_argument("--quick", action="store_true", help="only check that it runs (32 envs, 10 steps)")
    args = parser.parse_args()
    if args.quick:
        args.envs, args.steps, args.repeats = 32, 10, 1
    import drivesim.env as dse
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate

    env = dse.make(args.source, agents=args.agents, episode_steps=args.steps, pool_size=args.envs)
    batch = env.pool.scenarios
    config = env.config
    wrapped = dse.wrap(env)

    def run_env(state, key):
        def body(carry, k):
            action = jax.random.uniform(k, (args.envs, 2), minval=-1.0, maxval=1.0)
            carry = wrapped.step(carry, action)
            return carry, carry.reward

        return jax.lax.scan(body, state, jax.random.split(key, args.steps))

    env_program = jax.jit(run_env)
    state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(0), args.envs))
    t0 = time.perf_counter()
    state, rewards = jax.block_until_ready(env_program(state, jax.random.PRNGKey(1)))
    env_compile = time.perf_counter() - t0
    policy = idm_policy()
    t0 = time.perf_counter()
    jax.block_until_ready(simulate(batch, policy, config))
    engine_compile = time.perf_counter() - t0
    engine_rates, env_rates = [], []
    steps = args.envs * args.steps
    for r in range(args.repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(simulate(batch, policy, config))
        engine_rates.append(steps / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        state, rewards = jax.block_until_ready(env_program(state, jax.random.PRNGKey(2 + r)))
        env_rates.append(steps / (time.perf_counter() - t0))
    engine, envs = statistics.median(engine_rates), statistics.median(env_rates)
    print(
        json.dumps(
            {
                "agents": args.agents,
                "envs": args.envs,
                "observation_size": env.observation_size,
                "engine_steps_per_s": round(engine),
                "env_steps_per_s": round(envs),
                "ratio": round(envs / engine, 3),
                "engine_rates": [round(x) for x in engine_rates],
                "env_rates": [round(x) for x in env_rates],
                "engine_first_call_s": round(engine_compile, 1),
                "env_first_call_s": round(env_compile, 1),
                "mean_reward": float(jnp.mean(rewards)),
            }
        )
    )


if __name__ == "__main__":
    main()
