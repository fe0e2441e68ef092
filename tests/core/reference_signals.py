"""Float64 reference of fixed-time traffic signals (independent of drivesim.core.signals).

The light of a fixed-time plan at time t: green while (t - offset) mod cycle < green, then
amber for ``amber`` s, red for the rest. A red stop line is a standing obstacle until the
front bumper reaches it, if v^2 / (2 b_max) <= its gap to the line (b_max: the braking
limit); on amber the agent stops iff v^2 / (2 b) <= the gap (Gazis, Herman and Maradudin
1960, no reaction time).
"""

from __future__ import annotations

import numpy as np


class ReferenceSignals:
    """The signal plan of one host scenario (``signal=None``: no signals), float64."""

    def __init__(self, plan, n: int):
        get = lambda k, fill: np.full(n, fill) if plan is None else np.asarray(getattr(plan, k), np.float64)  # noqa: E731
        self.line = get("line_s", np.inf)
        self.cycle, self.offset = get("cycle", 1.0), get("offset", 0.0)
        self.green, self.amber = get("green", 1.0), get("amber", 0.0)

    def light(self, i: int, time: float, margins: list) -> str:
        """'green', 'amber' or 'red' of agent i's signal at ``time`` [s]."""
        u = (time - self.offset[i]) % self.cycle[i]
        if np.isfinite(self.line[i]):
            ends = (0.0, self.green[i], self.green[i] + self.amber[i], self.cycle[i])
            margins.append(("signal_phase", min(abs(u - e) for e in ends)))
        if u < self.green[i]:
            return "green"
        return "amber" if u < self.green[i] + self.amber[i] else "red"

    def stop_gap(
        self, i: int, s: float, length: float, speed: float, brakes: tuple, time: float, margins: list
    ):
        """Gap [m] to agent i's stop line when it must stop there now, else None.
        brakes: (comfortable b, braking limit b_max) [m/s^2]."""
        b, b_max = brakes
        if not np.isfinite(self.line[i]):
            return None
        gap = self.line[i] - s - 0.5 * length
        margins.append(("signal_line", abs(gap)))
        light = self.light(i, time, margins)
        if light == "amber":
            margins.append(("amber_stop", abs(speed * speed - 2.0 * b * gap)))
        if light == "red":
            margins.append(("red_stop", abs(speed * speed - 2.0 * b_max * gap)))
        stop = (light == "red" and speed * speed <= 2.0 * b_max * gap) or (
            light == "amber" and speed * speed <= 2.0 * b * gap
        )
        return gap if stop and gap > 0.0 else None

    def ran_red(self, i: int, front_before: float, front_after: float, time: float, margins: list) -> bool:
        """Agent i's front bumper crossed its stop line during a step begun at ``time`` on red."""
        if not np.isfinite(self.line[i]):
            return False
        margins.append(
            ("signal_cross", min(abs(front_before - self.line[i]), abs(front_after - self.line[i])))
        )
        red = self.light(i, time, margins) == "red"
        return red and front_before < self.line[i] <= front_after
