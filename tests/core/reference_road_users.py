"""Per-type kinematic limits for the float64 reference (drivesim.core.road_users)."""

from __future__ import annotations

from drivesim.core.road_users import CYCLIST_LIMITS, PEDESTRIAN_LIMITS
from drivesim.core.types import CYCLIST, PEDESTRIAN


def kind_limits(kind: int, cfg) -> tuple[float, float, float]:
    """(min_accel, max_accel, max_speed) of an agent of type ``kind``: the config's,
    tightened for a pedestrian or cyclist to its KindLimits."""
    own = {PEDESTRIAN: PEDESTRIAN_LIMITS, CYCLIST: CYCLIST_LIMITS}.get(int(kind))
    if own is None:
        return cfg.min_accel, cfg.max_accel, cfg.max_speed
    return (
        max(own.min_accel, cfg.min_accel),
        min(own.max_accel, cfg.max_accel),
        min(own.max_speed, cfg.max_speed),
    )
