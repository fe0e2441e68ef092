"""Physical ranges of scenario fields (host NumPy, never inside jit).

:func:`range_problem` takes plain arrays (one scenario's real agents, or whole columns of
a store: any shape) and returns the first (field, reason) outside its range, or None. The
same bounds hold for every source (synthetic, CommonRoad, scenario stores); they are listed
in the docs' errors and bounds page. Units: m, m/s, m/s^2, s.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

MAX_COORD_M = 1e6  # |x|, |y| of agents, lanes and logs
MAX_LOG_STEPS = 20000  # recorded log length after resampling (2000 s at 0.1 s)
MAX_FILE_STEPS = 200000  # time steps on a file's own grid, checked before any allocation
DT_RANGE_S = (1e-3, 10.0)  # a CommonRoad file's timeStepSize

# field: (lowest, highest, lowest excluded)
BOUNDS: dict[str, tuple[float, float, bool]] = {
    "agents.x": (-MAX_COORD_M, MAX_COORD_M, False),
    "agents.y": (-MAX_COORD_M, MAX_COORD_M, False),
    "agents.speed": (-10.0, 100.0, False),
    "agents.accel": (-50.0, 50.0, False),
    "agents.length": (0.0, 50.0, True),
    "agents.width": (0.0, 10.0, True),
    "idm.v0": (0.0, 150.0, True),
    "idm.T": (0.0, 10.0, False),
    "idm.s0": (0.0, 50.0, False),
    "idm.a": (0.0, 10.0, True),
    "idm.b": (0.0, 15.0, True),
    "idm.delta": (0.0, 10.0, True),
    "road.widths": (0.0, 20.0, True),
    "road.centers": (-MAX_COORD_M, MAX_COORD_M, False),
    "log.xy": (-MAX_COORD_M, MAX_COORD_M, False),
    "log.speed": (-10.0, 100.0, False),
}


def range_problem(fields: Mapping[str, np.ndarray]) -> tuple[str, str] | None:
    """First (field, reason) whose values are non-finite or outside :data:`BOUNDS`.

    fields: name (a key of BOUNDS) -> array of any shape holding only the entries to check
    (mask out padding first). Unknown names are ignored.
    """
    for name, values in fields.items():
        if name not in BOUNDS:
            continue
        v = np.asarray(values)
        if v.dtype.kind not in "fiu":
            v = v.astype(np.float64)
        if v.size == 0:
            continue
        problem = extent_problem(name, float(v.min()), float(v.max()))
        if problem is not None:
            return problem
    return None


def extent_problem(name: str, low: float, high: float) -> tuple[str, str] | None:
    """(name, reason) when values of field ``name`` whose least is ``low`` and greatest is
    ``high`` (NaN when any value is NaN: NumPy's min and max propagate it) are non-finite or
    outside :data:`BOUNDS`; None otherwise (and for a name not in BOUNDS)."""
    if name not in BOUNDS:
        return None
    if not (np.isfinite(low) and np.isfinite(high)):
        return name, "non-finite value (NaN or Inf)"
    lo, hi, open_lo = BOUNDS[name]
    if high > hi or low < lo or (open_lo and low <= lo):
        bad = high if high > hi else low
        left = "(" if open_lo else "["
        return name, f"value {bad:g} outside the physical range {left}{lo:g}, {hi:g}]"
    return None
