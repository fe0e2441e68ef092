"""Small real workloads for the pipeline tests (16-agent highway, 10 steps)."""

from __future__ import annotations

import numpy as np

from drivesim.core.types import replace
from drivesim.pipeline.config import CampaignConfig
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.sources import SyntheticSource
from drivesim.scenarios.synthetic import FamilyConfig

COUNT = 160


def small_config(out, count: int = COUNT, **changes) -> CampaignConfig:
    """A campaign of ``count`` 16-agent highway scenarios, 10 steps, batches of 8 (20 batches,
    windows of 3 batches)."""
    values = dict(
        sources=("synthetic:highway",),
        count=count,
        agents=16,
        num_steps=10,
        batch_size=8,
        window_batches=3,
        out=str(out),
        loader_threads=2,
        prefetch=2,
    )
    values.update(changes)
    return CampaignConfig(**values)


class FaultySource:
    """Synthetic highway scenarios where some positions are bad: NaN in the initial state,
    a malformed input (load raises) or too many agents for the largest size class."""

    def __init__(self, count: int, nan=(), broken=(), crowded=()):
        self.inner = SyntheticSource(["highway"], count, 0, config=FamilyConfig(num_agents=16, steps=10))
        self.nan, self.broken, self.crowded = set(nan), set(broken), set(crowded)
        self.name = "faulty"

    def __len__(self) -> int:
        return len(self.inner)

    def load(self, position: int) -> ScenarioRecord:
        if position in self.broken:
            raise ValueError(f"faulty/{position}.xml: malformed file (field obstacle)")
        record = self.inner.load(position)
        if position in self.nan:
            ag = record.scenario.agents
            x = np.asarray(ag.x).copy()
            x[3] = np.nan
            scenario = replace(record.scenario, agents=replace(ag, x=x))
            record = ScenarioRecord(scenario, record.family, record.source, record.name)
        if position in self.crowded:
            from drivesim.scenarios.synthetic import generate

            record = generate("highway", position, FamilyConfig(num_agents=200, steps=10))
        return record

    def describe(self) -> str:
        return "faulty highway"
