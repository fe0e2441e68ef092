"""Generated traffic on a recorded map that carries none (a CommonRoad file with lanelets but
no dynamic obstacle and no planning problem).

Agents are placed along every lanelet's centre line in driving direction, one gap apart, as
the synthetic families place their traffic: the gaps and initial speeds are drawn from a
random stream seeded by the scenario id alone, so a file always gets the same traffic. A
place closer than ``min_separation_m`` to an agent already placed (lanelets that overlap at
a junction, or a lanelet and its neighbour's start) is skipped. The first agent of the
longest lanelet is the ego; a map whose lanelets are all shorter than ``min_lanelet_m`` gets
the ego alone, midway along the longest. Every agent is an IDM vehicle from its initial
state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drivesim.scenarios import geometry

DEFAULT_LIMIT_MPS = 13.9  # 50 km/h where a lanelet gives no speed limit


@dataclass(frozen=True)
class MapTrafficConfig:
    """gap_m: range of the centre-to-centre gap along a lanelet [m]; speed_fraction: range of
    the initial speed as a fraction of the lanelet's limit; max_agents: most agents;
    min_lanelet_m: shorter lanelets get no agent; min_separation_m: least distance between
    two agents' centres [m]; length_m / width_m: each agent's box [m]."""

    gap_m: tuple[float, float] = (25.0, 45.0)
    speed_fraction: tuple[float, float] = (0.6, 0.9)
    max_agents: int = 32
    min_lanelet_m: float = 8.0
    min_separation_m: float = 9.0
    length_m: float = 4.5
    width_m: float = 1.8


@dataclass(frozen=True)
class Placement:
    """One generated agent's initial state: centre (2,), heading [rad], speed [m/s]."""

    xy: np.ndarray
    heading: float
    speed: float


def place_traffic(lanelets: list, scenario_id: int, config: MapTrafficConfig) -> list[Placement]:
    """Initial states of the generated agents on ``lanelets`` (scenarios.lanes.Lanelet), the
    ego first; empty only without lanelets."""
    rng = np.random.default_rng([scenario_id, 0x4D4150])  # "MAP": this module's stream
    lengths = [float(geometry.arc_lengths(lane.center)[-1]) for lane in lanelets]
    order = sorted(range(len(lanelets)), key=lambda k: (-lengths[k], k))  # longest first: the ego's
    placed: list[Placement] = []
    for k in (k for k in order if lengths[k] >= config.min_lanelet_m):
        s = 0.5 * config.length_m + rng.uniform(0.0, config.gap_m[0] / 2)
        while s <= lengths[k] - 0.5 * config.length_m and len(placed) < config.max_agents:
            here = _at(lanelets[k], s, 0.0)
            if all(np.hypot(*(here.xy - p.xy)) >= config.min_separation_m for p in placed):
                placed.append(_at(lanelets[k], s, rng.uniform(*config.speed_fraction)))
            s += rng.uniform(*config.gap_m)
    if not placed and lanelets:  # only short lanelets: the ego alone, midway along the longest
        placed.append(_at(lanelets[order[0]], 0.5 * lengths[order[0]], config.speed_fraction[0]))
    return placed


def _at(lane, s: float, speed_fraction: float) -> Placement:
    """An agent at arc length ``s`` of ``lane``'s centre line, heading along it, at
    ``speed_fraction`` of its speed limit (DEFAULT_LIMIT_MPS where it gives none)."""
    xy, heading = geometry.point_along(lane.center, np.array([s]))
    limit = lane.speed_limit if lane.speed_limit > 0 else DEFAULT_LIMIT_MPS
    return Placement(xy=xy[0], heading=float(heading[0]), speed=float(limit * speed_fraction))
