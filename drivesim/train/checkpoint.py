"""Training checkpoints with ``orbax-checkpoint``.

A checkpoint (directory ``DIR/train/checkpoints/<update>``) holds the whole TrainState
(parameters, optimiser state, environments, RNG key, update counter) and the TrainConfig as
JSON, so a resumed run continues exactly where the saved one stood.
"""

from __future__ import annotations

import pathlib

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
        """Restore checkpoint ``step`` (default: newest) into host NumPy arrays shaped like
        ``template`` (a TrainState or its ``jax.eval_shape``); returns (state, config)."""
        self._manager.wait_until_finished()
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"{self.directory}: no checkpoint to restore")
        zeros = jax.tree_util.tree_map(lambda x: np.zeros(x.shape, x.dtype), template)
        args = ocp.args.Composite(state=ocp.args.StandardRestore(zeros), config=ocp.args.JsonRestore())
        restored = self._manager.restore(step, args=args)
        return restored.state, config_from_dict(restored.config)

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()
