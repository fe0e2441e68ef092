"""Self-play: Brax's PPO trains one policy that drives every agent of a scenario
(``drivesim.env.make(SOURCE, learned="all")`` under ``drivesim.env.multi_agent.flat_wrap``);
the collision rate of the learned agents is scored on held-out scenario ids before, during
and after training.

    .venv/bin/python benchmarks/self_play.py [--source synthetic:merge] [--steps 2000000]

Training: ``brax.training.agents.ppo.train``, B environments x 16 agents as B * 16 streams
(restarts draw from a 1,024-scenario pool, ids from 1,000,000), 80-step episodes that end
when any agent collides or leaves the road. Scoring (``drivesim.env.evaluate.score`` of whole
episodes): ``--held-out`` scenarios (ids 0..), every agent driven by the deterministic
policy for the whole 80 steps without restarts; the rate of agents that collided (or left
the road) at least once, and their mean
progress. The zero action is every agent under the engine's IDM. Prints one JSON object:
the score of the untrained policy, of each evaluation's policy (the learning curve) and of
the final one, the IDM baseline, and the training rate in agent-steps per second.
"""

from __future__ import annotations

import argparse
import json
import time

import jax.numpy as jnp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="synthetic:merge")
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--steps", type=int, default=2_000_000, help="agent-steps of training")
    parser.add_argument("--envs", type=int, default=64, help="environments (each of --agents streams)")
    parser.add_argument("--held-out", type=int, default=256)
    parser.add_argument("--evals", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="only check that it runs")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.envs, args.held_out, args.evals, args.agents = 4_000, 4, 8, 2, 8
    from drivesim.env import make, patch_jax
    from drivesim.env.evaluate import score
    from drivesim.env.multi_agent import flat_wrap

    patch_jax()
    from brax.training.agents.ppo import train as ppo

    def build(pool: int, first: int):
        return make(
            args.source, agents=args.agents, episode_steps=80, pool_size=pool, first_id=first, learned="all"
        )

    env = build(1024, 1_000_000)
    held = build(args.held_out, 0)
    curve: list[dict] = []
    brax_evals: list[dict] = []
    streams = args.envs * args.agents

    def progress(step, metrics):  # Brax's evaluation (episodes end at the first crash)
        brax_evals.append({"step": int(step), "episode_collided": float(metrics["eval/episode_collided"])})

    def score_policy(step, make_policy, params):  # Brax's policy_params_fn: each evaluation's policy
        curve.append(
            {
                "step": int(step),
                **score(held, _actor(make_policy(params, deterministic=True)), until_done=False),
            }
        )

    t0 = time.perf_counter()
    make_policy, params, _ = ppo.train(
        environment=env,
        wrap_env_fn=flat_wrap,
        num_timesteps=args.steps,
        episode_length=env.episode_length,
        num_envs=streams,
        batch_size=streams // 4 if streams >= 64 else streams,
        num_minibatches=4 if streams >= 64 else 1,
        unroll_length=20,
        num_updates_per_batch=4,
        learning_rate=3e-4,
        entropy_cost=1e-3,
        discounting=0.99,
        reward_scaling=0.01,
        normalize_observations=True,
        num_evals=args.evals,
        num_eval_envs=streams,
        seed=args.seed,
        policy_params_fn=score_policy,
        progress_fn=progress,
    )
    train_s = time.perf_counter() - t0
    final = score(held, _actor(make_policy(params, deterministic=True)), until_done=False)
    idm = score(held, lambda obs, key: jnp.zeros(obs.shape[:-1] + (2,)), until_done=False)
    out = {
        "source": args.source,
        "agents": args.agents,
        "agent_steps": args.steps,
        "train_s": round(train_s, 1),
        "agent_steps_per_s_with_ppo": round(args.steps / train_s),
        "held_out": args.held_out,
        "final": final,
        "idm": idm,
        "curve": curve,
        "brax_evals": brax_evals,
    }
    print(json.dumps(out))


def _actor(policy):
    """(obs (..., K, size), key) -> actions (..., K, 2) of a Brax policy on flat rows."""

    def act(obs, key):
        flat = obs.reshape(-1, obs.shape[-1])
        return policy(flat, key)[0].reshape(obs.shape[:-1] + (2,))

    return act


if __name__ == "__main__":
    main()
