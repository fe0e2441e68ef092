"""Training checkpoints with ``orbax-checkpoint``.

A checkpoint (directory ``DIR/train/checkpoints/<update>``) holds the whole TrainState
(parameters, optimiser state, environments, RNG key, update counter) and the TrainConfig as
JSON, so a resumed run continues exactly where the saved one stood.
"""

from __future__ import annotations

import pathlib
import time

import jax
import numpy as np
import orbax.checkpoint as ocp

from drivesim.train.config import TrainConfig, config_from_dict, config_to_dict
from drivesim.train.ppo import TrainState


class Checkpointer:
    """Save / restore TrainStates under ``directory`` (keeps the newest ``max_to_keep``)."""

    def __init__(self, directory, max_to_keep: int = 3):
        self.directory = pathlib.Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)
        self.notes: list[str] = []  # what restore() fell back from, for the user

    def latest_step(self) -> int | None:
        """Update counter of the newest checkpoint, or None."""
        return self._manager.latest_step()

    def save(self, state: TrainState, cfg: TrainConfig) -> int:
        """Save ``state`` (gathered to host NumPy) and ``cfg``; returns its update counter."""
        host = jax.device_get(state)
        step = int(host.update)
        config = ocp.args.JsonSave(config_to_dict(cfg))
        args = ocp.args.Composite(state=ocp.args.StandardSave(host), config=config)
        self._manager.save(step, args=args, force=True)
        return step

    def restore(self, template: TrainState, step: int | None = None) -> tuple[TrainState, TrainConfig]:
        """Restore checkpoint ``step`` (default: the newest that restores cleanly) into host
        NumPy arrays shaped like ``template`` (a TrainState or its ``jax.eval_shape``);
        returns (state, config). Newer checkpoints that fail to restore are moved aside to
        ``DIR/../corrupt-checkpoints/<step>`` and described in ``self.notes``."""
        self._manager.wait_until_finished()
        if step is not None:
            return self._restore(template, step)
        steps = sorted(self._manager.all_steps(), reverse=True)
        if not steps:
            raise FileNotFoundError(f"{self.directory}: no checkpoint to restore")
        self.notes = []
        for candidate in steps:
            try:
                restored = self._restore(template, candidate)
            except Exception as exc:  # noqa: BLE001 - a damaged checkpoint: try the previous one
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                self.notes.append(
                    f"checkpoint {candidate} could not be restored ({type(exc).__name__}: {first})"
                )
                self._set_aside(candidate)
                continue
            if self.notes:
                self.notes.append(f"resumed from checkpoint {candidate}, the newest that restores cleanly")
            return restored
        raise RuntimeError(f"{self.directory}: no checkpoint restores cleanly: {'; '.join(self.notes)}")

    def _set_aside(self, step: int) -> None:
        """Move a damaged checkpoint out of the manager's directory (kept for inspection)."""
        aside = self.directory.parent / "corrupt-checkpoints"
        aside.mkdir(exist_ok=True)
        source = self.directory / str(step)
        if source.exists():
            source.rename(aside / f"{step}-{int(time.time())}")
        self._manager.reload()

    def _restore(self, template: TrainState, step: int) -> tuple[TrainState, TrainConfig]:
        zeros = jax.tree_util.tree_map(lambda x: np.zeros(x.shape, x.dtype), template)
        args = ocp.args.Composite(state=ocp.args.StandardRestore(zeros), config=ocp.args.JsonRestore())
        restored = self._manager.restore(step, args=args)
        return restored.state, config_from_dict(restored.config)

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()
