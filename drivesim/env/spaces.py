"""Observation and action spaces as plain data (a Gymnasium ``Box`` is built from one by
drivesim.env.gym)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Box:
    """Values of ``shape`` in [low, high] (NumPy broadcasting), of ``dtype``."""

    low: float
    high: float
    shape: tuple[int, ...]
    dtype: str = "float32"

    def contains(self, value) -> bool:
        """Whether ``value`` has this shape and lies within the bounds."""
        arr = np.asarray(value)
        return arr.shape == self.shape and bool(np.all((arr >= self.low) & (arr <= self.high)))
