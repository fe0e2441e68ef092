"""Training benchmark: learning on held-out ids, throughput vs pure simulation, resume equality.

    .venv/bin/python benchmarks/train.py            # full: highway, 16 agents, 80-step episodes
    .venv/bin/python benchmarks/train.py --quick    # CI-sized (tiny_config), about a minute

Prints one JSON object (and writes it to --out/train_bench.json):
- learning: untrained vs trained collision / off-road rate and progress on held-out scenario
  ids [0, count), evaluated through a campaign (``drivesim run --policy mlp:FILE``);
- throughput: env steps/s during training, and the cost ratio to pure rollout (``simulate``
  with the trained MLP driving the ego, as in training) for the same batch (target: training
  <= 3x the cost of simulation per step). The machine's speed drifts, so the ratio is measured
  in alternating rounds (a device call of training, then pure simulation of the same number
  of env steps) and reported as the median and range of the per-round ratios; the
  constant-speed-ego rate is reported beside it;
- resume: max |param difference| between an uninterrupted run and a half run + resume;
- baselines (``--families highway,merge,intersection``): per family, a policy trained on that
  family against the IDM and constant-speed egos on the same held-out ids (collision rate,
  off-road rate, progress), with the goal checks (trained collisions <= the better baseline's
  + 1 point, progress >= 0.95x IDM's).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import shutil
import time

import jax
import numpy as np


def rollout_batch(cfg):
    """The num_envs pool scenarios the rollout rates are measured on, on the device."""
    from drivesim.train.env import host_scenarios, scenario_ids

    ids = np.resize(scenario_ids(cfg.env)[: cfg.ppo.num_envs], cfg.ppo.num_envs)
    return jax.device_put(host_scenarios(cfg.env, ids))


def constant_ego_rate(cfg, batch, repeats: int = 30) -> float:
    """Env steps/s of ``simulate`` on ``batch`` (see rollout_batch) for one episode with the
    ego at constant speed (the reference beside the MLP-ego cost ratio). Median of
    ``repeats`` calls."""
    from drivesim.core.policies import CONSTANT
    from drivesim.core.rollout import simulate

    sim = dataclasses.replace(cfg.env.sim, policy=CONSTANT)
    jax.block_until_ready(simulate(batch, None, sim))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(simulate(batch, None, sim))
        times.append(time.perf_counter() - t0)
    return cfg.ppo.num_envs * cfg.env.episode_steps / float(np.median(times))


def interleaved_cost(cfg, pool, state, batch, devices, rounds: int = 9) -> dict:
    """Training vs pure simulation (trained MLP ego) in alternating rounds: per round, one
    device call of ``cfg.chunk`` updates from ``state``, then ``simulate`` on ``batch`` for as
    many env steps. Returns per-round ratios (seconds per training step / seconds per
    simulated step), their median and both rates' medians."""
    from drivesim.core.rollout import simulate
    from drivesim.train.ppo import Trainer, make_mesh

    trainer = Trainer(cfg, pool, make_mesh(devices))
    trainer.compile(state, cfg.chunk)
    policy = jax.device_get(state.params.actor)
    jax.block_until_ready(simulate(batch, policy, cfg.env.sim))
    train_steps = cfg.chunk * cfg.ppo.batch_steps
    episode_steps = cfg.ppo.num_envs * cfg.env.episode_steps
    calls = max(1, round(train_steps / episode_steps))
    train_s, sim_s = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        state, _ = trainer.run(state, cfg.chunk)
        jax.block_until_ready(state)
        train_s.append((time.perf_counter() - t0) / train_steps)
        t0 = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(simulate(batch, policy, cfg.env.sim))
        sim_s.append((time.perf_counter() - t0) / (calls * episode_steps))
    ratios = [t / s for t, s in zip(train_s, sim_s, strict=True)]
    return dict(
        rounds=rounds,
        cost_ratio=float(np.median(ratios)),
        cost_ratio_min=min(ratios),
        cost_ratio_max=max(ratios),
        train_env_steps_per_s=1 / float(np.median(train_s)),
        pure_rollout_steps_per_s=1 / float(np.median(sim_s)),
    )


def learning_and_cost(cfg, out: pathlib.Path, held_out: int, devices, batch) -> tuple[dict, dict]:
    """Train from scratch, evaluate untrained and trained policies on held-out ids, then
    measure the cost ratio on ``batch`` (see rollout_batch) from the trained state (see
    interleaved_cost): (cost, learning)."""
    from drivesim.train.env import build_pool
    from drivesim.train.evaluate import evaluate_campaign, evaluate_direct, held_out_ids
    from drivesim.train.loop import export_policy, train
    from drivesim.train.ppo import _init_state

    shutil.rmtree(out / "learn", ignore_errors=True)
    t0 = time.perf_counter()
    pool = build_pool(cfg.env)  # built once: for training, the untrained policy and the cost ratio
    result = train(cfg, out / "learn", devices=devices, pool=pool)
    wall = time.perf_counter() - t0
    untrained = jax.device_get(_init_state(pool, cfg))
    untrained_file = export_policy(untrained, cfg, out / "untrained.npz")
    try:
        before = evaluate_campaign(untrained_file, cfg.env, held_out, out / "eval_untrained")
        after = evaluate_campaign(result.policy_path, cfg.env, held_out, out / "eval_trained")
        how = "campaign"
    except ImportError:
        ids = held_out_ids(cfg.env, held_out)
        before = evaluate_direct(untrained.params.actor, cfg.env, ids)
        after = evaluate_direct(jax.device_get(result.state.params.actor), cfg.env, ids)
        how = "simulate"
    cost = interleaved_cost(cfg, pool, result.state, batch, devices)
    return cost, dict(
        evaluated_with=how,
        held_out_scenarios=held_out,
        train_wall_s=wall,
        compile_s=result.compile_s,
        policy_file=str(result.policy_path),
        env_steps=int(result.state.update) * cfg.ppo.batch_steps,
        train_steps_per_s=result.steps_per_s,
        untrained=dataclasses.asdict(before),
        trained=dataclasses.asdict(after),
        collision_lower=after.collision_rate < before.collision_rate,
        progress_higher=after.progress_m > before.progress_m,
    )


def against_baselines(cfg, family: str, out: pathlib.Path, held_out: int, devices) -> dict:
    """Train ``cfg`` on ``family`` from scratch, then evaluate the trained, IDM and
    constant-speed egos on the same held-out ids [0, held_out) with ``simulate``."""
    from drivesim.core.policies import CONSTANT, IDM
    from drivesim.train.evaluate import evaluate_direct, evaluate_policy, held_out_ids
    from drivesim.train.loop import train
    from drivesim.train.policy_io import load_policy

    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, family=family))
    shutil.rmtree(out / f"baselines_{family}", ignore_errors=True)
    t0 = time.perf_counter()
    result = train(cfg, out / f"baselines_{family}", devices=devices)
    wall = time.perf_counter() - t0
    ids = held_out_ids(cfg.env, held_out)
    trained = evaluate_direct(load_policy(result.policy_path, obs_size=cfg.env.obs_size), cfg.env, ids)
    idm = evaluate_policy(IDM, None, cfg.env, ids)
    constant = evaluate_policy(CONSTANT, None, cfg.env, ids)
    best = min(idm.collision_rate, constant.collision_rate)
    return dict(
        held_out_scenarios=held_out,
        env_steps=int(result.state.update) * cfg.ppo.batch_steps,
        train_wall_s=wall,
        train_steps_per_s=result.steps_per_s,
        trained=dataclasses.asdict(trained),
        idm=dataclasses.asdict(idm),
        constant=dataclasses.asdict(constant),
        collisions_within_1pt_of_best_baseline=trained.collision_rate <= best + 0.01,
        progress_vs_idm=trained.progress_m / idm.progress_m,
    )


def resume_check(cfg, out: pathlib.Path, devices) -> dict:
    from drivesim.train.loop import train

    k = 2 * cfg.chunk
    for name in ("straight", "halves"):
        shutil.rmtree(out / name, ignore_errors=True)
    straight = train(
        dataclasses.replace(cfg, updates=k, checkpoint_every=cfg.chunk), out / "straight", devices=devices
    )
    half = dataclasses.replace(cfg, updates=k // 2, checkpoint_every=cfg.chunk)
    train(half, out / "halves", devices=devices)
    resumed = train(
        dataclasses.replace(cfg, updates=k, checkpoint_every=cfg.chunk), out / "halves", devices=devices
    )
    a = jax.tree_util.tree_leaves(jax.device_get(straight.state.params))
    b = jax.tree_util.tree_leaves(jax.device_get(resumed.state.params))
    diff = max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))
    return dict(updates=k, resumed_from=resumed.resumed_from, max_param_diff=diff, equal=diff <= 1e-6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (tiny_config, 300 updates)")
    parser.add_argument("--updates", type=int, default=None, help="PPO updates (300 quick, 1200 full)")
    parser.add_argument("--held-out", type=int, default=None, help="held-out scenarios (128 quick, 512 full)")
    parser.add_argument("--devices", type=int, default=None, help="devices of the mesh (default all)")
    parser.add_argument("--epochs", type=int, default=None, help="PPO epochs per update")
    parser.add_argument("--minibatches", type=int, default=None, help="minibatches per epoch")
    parser.add_argument(
        "--sort-schedule",
        choices=("episode", "global"),
        default=None,
        help="EnvConfig.sort_schedule (default: EnvConfig's)",
    )
    parser.add_argument("--progress-weight", type=float, default=None, help="RewardConfig.progress_weight")
    parser.add_argument("--hidden", type=int, nargs="+", default=None, help="hidden layer sizes of both MLPs")
    parser.add_argument(
        "--no-anneal",
        action="store_true",
        help="constant learning rate (default: decays linearly to 0 over --updates)",
    )
    parser.add_argument(
        "--families",
        default=None,
        help="comma-separated families: per family, a trained ego against the IDM and constant egos",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/bench_train"))
    args = parser.parse_args()

    from drivesim.train.config import EnvConfig, PPOConfig, TrainConfig, tiny_config

    if args.quick:
        cfg = dataclasses.replace(tiny_config(), updates=args.updates or 300, chunk=50, checkpoint_every=50)
        held_out = args.held_out or 128
    else:
        cfg = TrainConfig(
            env=EnvConfig(num_agents=16, episode_steps=80),  # the CLI's pool (2,048 scenarios)
            ppo=PPOConfig(num_envs=256, rollout_steps=32),
            updates=args.updates or 1200,
            chunk=20,
            checkpoint_every=100,
        )
        held_out = args.held_out or 512
    ppo_changes = {k: v for k, v in (("epochs", args.epochs), ("minibatches", args.minibatches)) if v}
    if args.hidden:
        ppo_changes["hidden"] = tuple(args.hidden)
    if not args.no_anneal:
        ppo_changes["anneal_updates"] = cfg.updates
    env_changes = {"sort_schedule": args.sort_schedule} if args.sort_schedule else {}
    if args.progress_weight is not None:
        env_changes["reward"] = dataclasses.replace(cfg.env.reward, progress_weight=args.progress_weight)
    cfg = dataclasses.replace(
        cfg,
        seed=args.seed,
        ppo=dataclasses.replace(cfg.ppo, **ppo_changes),
        env=dataclasses.replace(cfg.env, **env_changes),
    )
    devices = jax.devices()[: args.devices] if args.devices else None
    args.out.mkdir(parents=True, exist_ok=True)
    report = dict(
        device_kind=jax.devices()[0].device_kind,
        device_count=len(devices or jax.devices()),
        jax_version=jax.__version__,
        num_envs=cfg.ppo.num_envs,
        agents=cfg.env.num_agents,
        episode_steps=cfg.env.episode_steps,
        updates=cfg.updates,
        seed=cfg.seed,
        epochs=cfg.ppo.epochs,
        minibatches=cfg.ppo.minibatches,
        hidden=list(cfg.ppo.hidden),
        learning_rate=cfg.ppo.learning_rate,
        anneal_updates=cfg.ppo.anneal_updates,
        sort_schedule=cfg.env.sort_schedule,
        reward=dataclasses.asdict(cfg.env.reward),
    )
    if args.families:
        report["baselines"] = {
            family: against_baselines(cfg, family, args.out, held_out, devices)
            for family in args.families.split(",")
        }
        text = json.dumps(report, indent=2)
        (args.out / "train_baselines.json").write_text(text)
        print(text)
        return
    batch = rollout_batch(cfg)  # one batch for both pure-simulation rates
    cost, report["learning"] = learning_and_cost(cfg, args.out, held_out, devices, batch)
    constant_rate = constant_ego_rate(cfg, batch)
    report["throughput"] = dict(
        cost,
        target_ratio=3.0,
        train_run_env_steps_per_s=report["learning"]["train_steps_per_s"],
        constant_ego_steps_per_s=constant_rate,
        cost_ratio_vs_constant_ego=constant_rate / cost["train_env_steps_per_s"],
    )
    report["resume"] = resume_check(dataclasses.replace(cfg, chunk=min(cfg.chunk, 5)), args.out, devices)
    text = json.dumps(report, indent=2)
    (args.out / "train_bench.json").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
