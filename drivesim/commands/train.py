"""CLI: ``drivesim train`` (thin layer over drivesim.train)."""

from __future__ import annotations

import json
import math
import pathlib

import typer


def _fmt(value: float, spec: str) -> str:
    return "-" if value is None or not math.isfinite(value) else format(value, spec)


def register(app: typer.Typer) -> None:
    """Add ``train`` to ``app``."""

    @app.command()
    def train(
        family: str = typer.Option("highway", help="Synthetic scenario family of the training pool."),
        steps: int = typer.Option(10_000_000, help="Environment steps to train for (whole updates)."),
        envs: int = typer.Option(256, help="Parallel environments (a multiple of the device count)."),
        agents: int = typer.Option(16, help="Agents per training scenario."),
        episode_steps: int = typer.Option(80, help="Episode length in steps of 0.1 s."),
        rollout: int = typer.Option(32, help="Rollout steps per environment per PPO update."),
        pool: int = typer.Option(2048, help="Training scenarios kept on the devices (ids from 1,000,000)."),
        lr: float = typer.Option(1e-3, help="Adam learning rate."),
        anneal: bool = typer.Option(
            True, "--anneal/--no-anneal", help="Learning rate falls linearly to 0 over the run's updates."
        ),
        chunk: int = typer.Option(10, help="PPO updates per device call (one jitted lax.scan)."),
        checkpoint_every: int = typer.Option(50, help="Checkpoint every N updates (a multiple of --chunk)."),
        devices: int = typer.Option(None, help="Devices of the data-parallel mesh [default: all]."),
        seed: int = typer.Option(0, help="Training seed (parameters, exploration, minibatches)."),
        out: pathlib.Path = typer.Option(  # noqa: B008
            None,
            help="Output directory [default: runs/train]; writes DIR/train/ (curve.jsonl, checkpoints/,"
            " policy.npz).",
        ),
        resume: bool = typer.Option(True, "--resume/--fresh", help="Resume from DIR's newest checkpoint."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object per update, nothing else."),
    ) -> None:
        """Train an ego policy with PPO on every device (progress: env steps/s, return, collisions)."""
        import jax

        from drivesim.train.config import EnvConfig, PPOConfig, TrainConfig
        from drivesim.train.loop import train as run_training

        out = out or pathlib.Path("runs/train")
        checkpoint_every = max(chunk, checkpoint_every // chunk * chunk)
        updates = max(1, math.ceil(steps / (envs * rollout)))
        cfg = TrainConfig(
            env=EnvConfig(family=family, num_agents=agents, episode_steps=episode_steps, pool_size=pool),
            ppo=PPOConfig(
                num_envs=envs,
                rollout_steps=rollout,
                learning_rate=lr,
                anneal_updates=updates if anneal else None,
            ),
            updates=updates,
            chunk=chunk,
            checkpoint_every=checkpoint_every,
            seed=seed,
        )
        chosen = jax.devices()[:devices] if devices else None
        try:
            cfg.validate()
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        if as_json:

            def emit(rows):
                for row in rows:
                    print(json.dumps(row.__dict__), flush=True)

            result = run_training(cfg, out, resume=resume, devices=chosen, on_chunk=emit)
        else:
            result = _with_progress(cfg, out, resume, chosen, run_training)
            typer.echo(
                f"policy: {result.policy_path}  (evaluate: drivesim run --source synthetic:{family} "
                f"--agents {agents} --policy mlp:{result.policy_path})"
            )
            typer.echo(
                f"curve: {result.curve_path}  compile {result.compile_s:.1f} s, "
                f"{result.steps_per_s:,.0f} env steps/s"
            )


def _with_progress(cfg, out, resume, devices, run_training):
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("[bold]train"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} updates"),
        TextColumn("{task.fields[info]}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns) as progress:
        task = progress.add_task("train", total=cfg.updates, info="compiling...")

        def on_chunk(rows):
            last = rows[-1]
            info = (
                f"{last.steps_per_s:,.0f} steps/s  return {_fmt(last.mean_return, '.2f')}  "
                f"collisions {_fmt(last.collision_rate, '.1%')}  progress {_fmt(last.progress, '.0f')} m"
            )
            progress.update(task, completed=last.update, info=info)

        return run_training(cfg, out, resume=resume, devices=devices, on_chunk=on_chunk)
