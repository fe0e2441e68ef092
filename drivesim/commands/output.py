"""Strict JSON for ``--json`` output: NaN and +-Infinity become null (RFC 8259 has neither)."""

from __future__ import annotations

import json
import math


def plain(value):
    """``value`` with every non-finite float replaced by None (dicts, lists, tuples walked)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def json_line(value) -> str:
    """One line of strict JSON (``allow_nan=False``; other objects as ``str``)."""
    return json.dumps(plain(value), default=str, allow_nan=False)
