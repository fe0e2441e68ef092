"""The learning curve as TensorBoard scalars (``DIR/train/tensorboard/``), beside
``curve.jsonl``: one scalar per CurveRow field under ``train/``, at step = env steps.

A resumed run drops the events past its checkpoint (TensorBoard's purge step), as the curve
file is truncated there, so the two always show the same run. Without tensorboardX (the
``rl`` or ``train`` extra) the curve file is written alone and the log says so once.
"""

from __future__ import annotations

import logging
import math
import pathlib
from dataclasses import asdict

LOG = logging.getLogger(__name__)
SKIPPED = ("update", "env_steps")


class CurveBoard:
    """Writes curve rows to a TensorBoard event file in ``directory``; ``resume_steps``: the
    env steps of the checkpoint a run resumes from (events after it are dropped)."""

    def __init__(self, directory: pathlib.Path, resume_steps: int | None = None):
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            LOG.info("tensorboardX is not installed: the learning curve goes to curve.jsonl only")
            self._writer = None
            return
        self._writer = SummaryWriter(str(directory), purge_step=resume_steps, flush_secs=30)

    def write(self, rows) -> None:
        """Add every numeric field of each row (NaN fields are left out) and flush."""
        if self._writer is None:
            return
        for row in rows:
            for name, value in asdict(row).items():
                if name in SKIPPED or value is None or (isinstance(value, float) and math.isnan(value)):
                    continue
                self._writer.add_scalar(f"train/{name}", float(value), global_step=row.env_steps)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
