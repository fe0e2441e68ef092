"""Strict JSON for everything ``--json`` prints: NaN and +-Inf become null (JSON has no such
numbers), NumPy scalars become Python ones, other objects their ``str``."""

from __future__ import annotations

import json
import math


def strict(value):
    """A copy of ``value`` (dicts, lists, tuples, scalars) that ``json.dumps`` accepts with
    ``allow_nan=False``."""
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def dumps(value, **kwargs) -> str:
    """``json.dumps`` of :func:`strict` (never emits NaN / Infinity)."""
    return json.dumps(strict(value), allow_nan=False, **kwargs)
