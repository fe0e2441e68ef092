"""The host side of training: chunks of updates on the devices, learning curve, checkpoints,
resume, policy export.

Output directory ``DIR/train/``: ``curve.jsonl`` (one JSON object per update, see
:class:`CurveRow`), ``checkpoints/<update>/`` (orbax), ``policy.npz`` (the actor, readable by
``drivesim run --policy mlp:DIR/train/policy.npz``), ``config.json`` and ``tensorboard/``
(the curve as TensorBoard scalars, drivesim.train.tensorboard).
"""

from __future__ import annotations

import json
import logging
import math
import pathlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import jax
import numpy as np

from drivesim.pipeline import interrupt
from drivesim.train.checkpoint import Checkpointer
from drivesim.train.config import TrainConfig, config_to_dict
from drivesim.train.env import build_pool
from drivesim.train.policy_io import save_policy
from drivesim.train.ppo import Trainer, TrainState, UpdateMetrics, _init_state, make_mesh
from drivesim.train.tensorboard import CurveBoard

# Fields that may differ between a run and its resume (they do not change what is computed).
RESUMABLE_FIELDS = ("updates",)


@dataclass(frozen=True)
class CurveRow:
    """One line of ``curve.jsonl``: statistics of one update (NaN written as null)."""

    update: int
    env_steps: int
    mean_return: float
    collision_rate: float
    offroad_rate: float
    progress: float
    mean_reward: float
    episodes: int
    steps_per_s: float
    wall_s: float
    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float


@dataclass
class TrainResult:
    """What a training run left: final state, paths, compile time and throughput (env
    steps/s over the chunks after the first, measured on the host around each device call)."""

    state: TrainState
    directory: pathlib.Path
    curve_path: pathlib.Path
    policy_path: pathlib.Path
    resumed_from: int | None
    compile_s: float
    steps_per_s: float


ChunkFn = Callable[[list[CurveRow]], None]


def train_dir(out_dir) -> pathlib.Path:
    """``DIR/train``."""
    return pathlib.Path(out_dir) / "train"


def read_curve(out_dir) -> list[dict]:
    """The learning curve of ``DIR`` as dicts (one per update)."""
    path = train_dir(out_dir) / "curve.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def train(
    cfg: TrainConfig,
    out_dir,
    *,
    resume: bool = True,
    devices=None,
    on_chunk: ChunkFn | None = None,
    pool=None,
) -> TrainResult:
    """Train (or resume) PPO on ``cfg``; write everything under ``DIR/train``.

    devices: the devices of the data-parallel mesh (default all). on_chunk: called with the
    curve rows after every device call (progress bars). pool: a prebuilt ScenarioPool.
    """
    cfg.validate()
    directory = train_dir(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(cfg, build_pool(cfg.env) if pool is None else pool, make_mesh(devices))
    checkpointer = Checkpointer(directory / "checkpoints")
    state, resumed = _start(trainer, checkpointer, cfg, resume)
    (directory / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=2))
    curve_path = directory / "curve.jsonl"
    update = int(state.update)  # the host's count of state.update (no device read per chunk)
    _truncate_curve(curve_path, update if resumed is not None else 0)
    after = update * cfg.ppo.batch_steps + 1  # a resume drops the events after its checkpoint
    board = CurveBoard(directory / "tensorboard", after if resumed is not None else None)
    compile_s = trainer.compile(state, min(cfg.chunk, max(cfg.updates - update, 1)))
    rates: list[float] = []
    wall0 = time.perf_counter()
    try:
        while update < cfg.updates:
            n = min(cfg.chunk, cfg.updates - update)
            t0 = time.perf_counter()
            state, metrics = trainer.run(state, n)
            metrics = jax.device_get(metrics)
            elapsed = time.perf_counter() - t0
            rate = n * cfg.ppo.batch_steps / elapsed
            rates.append(rate)
            rows = _rows(metrics, update, cfg, rate, time.perf_counter() - wall0)
            update += n
            _append_curve(curve_path, rows)
            board.write(rows)
            if update % cfg.checkpoint_every == 0 or update >= cfg.updates:
                checkpointer.save(state, cfg)
            if on_chunk is not None:
                on_chunk(rows)
            interrupt.raise_if_pending()  # a SIGTERM whose own exception a finalizer swallowed
    finally:
        checkpointer.close()
        board.close()
    policy_path = export_policy(state, cfg, directory / "policy.npz")
    steady = rates[1:] or rates
    return TrainResult(
        state=state,
        directory=directory,
        curve_path=curve_path,
        policy_path=policy_path,
        resumed_from=resumed,
        compile_s=compile_s,
        steps_per_s=float(np.median(steady)) if steady else math.nan,
    )


def export_policy(state: TrainState, cfg: TrainConfig, path) -> pathlib.Path:
    """Save the actor's mean network (the deterministic policy) as a policy file."""
    actor = jax.device_get(state.params.actor)
    meta = {
        "update": int(state.update),
        "env_steps": int(state.update) * cfg.ppo.batch_steps,
        "obs_neighbours": cfg.env.obs_neighbours,
        "config": config_to_dict(cfg),
    }
    return save_policy(path, actor, meta)


def _start(trainer: Trainer, checkpointer: Checkpointer, cfg: TrainConfig, resume: bool):
    """Fresh state, or the newest checkpoint (config checked) when resuming."""
    if resume and checkpointer.latest_step() is not None:
        template = jax.eval_shape(lambda pool: _init_state(pool, cfg), trainer.pool)
        host, saved = checkpointer.restore(template)
        for note in checkpointer.notes:  # a damaged newest checkpoint: say which one was used
            logging.getLogger("drivesim.train").warning("%s", note)
        _check_same(cfg, saved, checkpointer.directory)
        return trainer.place(host), int(host.update)
    if checkpointer.latest_step() is not None:
        raise FileExistsError(f"{checkpointer.directory}: checkpoints exist; resume or use a new --out")
    return trainer.init_state(), None


def _check_same(cfg: TrainConfig, saved: TrainConfig, where) -> None:
    now, before = config_to_dict(cfg), config_to_dict(saved)
    for key in RESUMABLE_FIELDS:
        now.pop(key), before.pop(key)
    if now != before:
        diff = sorted(k for k in now if now[k] != before.get(k))
        raise ValueError(
            f"{where}: the checkpoint was written with a different config (fields {diff}); "
            "use a new --out or the same settings"
        )


def _rows(metrics: UpdateMetrics, first_update: int, cfg: TrainConfig, rate: float, wall: float):
    values = {k: np.asarray(v) for k, v in asdict(metrics).items()}
    rows = []
    for i in range(values["episodes"].shape[0]):
        update = first_update + i + 1
        rows.append(
            CurveRow(
                update=update,
                env_steps=update * cfg.ppo.batch_steps,
                mean_return=float(values["mean_return"][i]),
                collision_rate=float(values["collision_rate"][i]),
                offroad_rate=float(values["offroad_rate"][i]),
                progress=float(values["progress"][i]),
                mean_reward=float(values["mean_reward"][i]),
                episodes=int(values["episodes"][i]),
                steps_per_s=rate,
                wall_s=wall,
                policy_loss=float(values["policy_loss"][i]),
                value_loss=float(values["value_loss"][i]),
                entropy=float(values["entropy"][i]),
                approx_kl=float(values["approx_kl"][i]),
            )
        )
    return rows


def _json_value(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _append_curve(path: pathlib.Path, rows: list[CurveRow]) -> None:
    with path.open("a") as fh:
        for row in rows:
            fh.write(json.dumps({k: _json_value(v) for k, v in asdict(row).items()}) + "\n")
        fh.flush()


def _truncate_curve(path: pathlib.Path, keep_until: int) -> None:
    """Drop curve rows after update ``keep_until`` (written after the checkpoint we resume from)."""
    if not path.is_file():
        return
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    kept = [ln for ln in lines if json.loads(ln)["update"] <= keep_until]
    path.write_text("".join(ln + "\n" for ln in kept))
