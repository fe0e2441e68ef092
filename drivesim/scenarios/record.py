"""A scenario on the host: NumPy arrays plus where it came from."""

from __future__ import annotations

from dataclasses import dataclass

from drivesim.core.types import Scenario


@dataclass(frozen=True)
class ScenarioRecord:
    """One unpadded host scenario (NumPy fields, N = its real agent count) and its origin.

    family: "highway", "merge", ..., or "commonroad"; source: "synthetic", a file path or a
    store path; name: human-readable id (e.g. the CommonRoad benchmark id); note: what the
    import read but left out of the engine, or made up (e.g. "left out: 17 road edges"), ""
    when nothing.
    """

    scenario: Scenario
    family: str
    source: str
    name: str
    note: str = ""

    @property
    def scenario_id(self) -> int:
        return int(self.scenario.scenario_id)

    @property
    def num_agents(self) -> int:
        return int(self.scenario.agents.valid.sum())
