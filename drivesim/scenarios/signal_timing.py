"""Fixed-time signal plans with timings from the traffic-engineering literature.

* Yellow change interval (ITE, *Traffic Engineering Handbook*; the kinematic formula of
  Gazis, Herman and Maradudin 1960): y = t_r + v / (2 a + 2 g G), with perception-reaction
  time t_r = 1 s, deceleration a = 3.05 m/s^2 (10 ft/s^2), g = 9.81 m/s^2 and approach grade
  G; practice keeps y within 3-6 s.
* All-red clearance interval: 1-2 s (FHWA *Signal Timing Manual*, 2nd ed., 2015).
* Cycle lengths of fixed-time signals: 60-120 s (same manual); 90 s here by default.

A ``Light`` is the plan of one approach; ``two_phase`` gives the two conflicting approaches
of a two-phase intersection.
"""

from __future__ import annotations

from dataclasses import dataclass

PERCEPTION_REACTION_S = 1.0  # [s] ITE
YELLOW_DECEL = 3.05  # [m/s^2] ITE (10 ft/s^2)
GRAVITY = 9.81  # [m/s^2]
YELLOW_MIN_S, YELLOW_MAX_S = 3.0, 6.0  # [s] ITE practice
ALL_RED_S = 1.5  # [s] within the 1-2 s of the Signal Timing Manual
CYCLE_S = 90.0  # [s] within the 60-120 s of fixed-time practice


def yellow_interval(speed: float, grade: float = 0.0) -> float:
    """ITE yellow change interval [s] for an approach speed [m/s] and grade (rise/run),
    kept within 3-6 s."""
    y = PERCEPTION_REACTION_S + speed / (2.0 * YELLOW_DECEL + 2.0 * GRAVITY * grade)
    return min(max(y, YELLOW_MIN_S), YELLOW_MAX_S)


@dataclass(frozen=True)
class Light:
    """Fixed-time plan of one approach [s]: green from ``offset`` (mod ``cycle``) for
    ``green``, then amber for ``amber``, then red for the rest of the cycle."""

    cycle: float
    offset: float
    green: float
    amber: float

    def fields(self) -> dict[str, float]:
        """The SignalPlan fields other than the stop line."""
        return dict(cycle=self.cycle, offset=self.offset, green=self.green, amber=self.amber)


def two_phase(
    speed: float, cycle: float = CYCLE_S, main_share: float = 0.5, main_offset: float = 0.0
) -> tuple[Light, Light]:
    """(main, cross) plans of a two-phase intersection: each phase is green, then amber (ITE
    yellow for ``speed``), then all-red; the main green starts at ``main_offset`` and gets
    ``main_share`` of the cycle's green time."""
    amber = yellow_interval(speed)
    green_total = cycle - 2.0 * (amber + ALL_RED_S)
    if green_total <= 0:
        raise ValueError(f"two_phase: cycle {cycle:g} s leaves no green time")
    main_green = main_share * green_total
    main = Light(cycle, main_offset, main_green, amber)
    cross_offset = (main_offset + main_green + amber + ALL_RED_S) % cycle
    return main, Light(cycle, cross_offset, green_total - main_green, amber)
