"""Scenario sources as the pipeline sees them: a campaign's source specs opened through
``drivesim.scenarios.registry`` with the campaign's synthetic FamilyConfig, and where the demo's
CommonRoad files are (the demo itself: drivesim.pipeline.defaults).
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

# A directory holding ``commonroad/*.xml``, searched for the demo after the current directory
DATA_ENV = "DRIVESIM_DATA"


def find_shared_commonroad(root: pathlib.Path | None = None) -> pathlib.Path | None:
    """The CommonRoad demo data, if it holds XML files: ``shared/data/commonroad`` beside or
    inside ``root`` (when given), then beside or inside the current directory (the project root
    under ``make run`` and the tests), then ``$DRIVESIM_DATA/commonroad``."""
    bases = [pathlib.Path(root)] if root else []
    bases.append(pathlib.Path.cwd())
    candidates = [p / "shared" / "data" / "commonroad" for base in bases for p in (base.parent, base)]
    if os.environ.get(DATA_ENV):
        candidates.append(pathlib.Path(os.environ[DATA_ENV]) / "commonroad")
    for path in candidates:
        if path.is_dir() and any(path.glob("*.xml")):
            return path.resolve()
    return None


def open_source(
    specs: tuple[str, ...],
    count: int,
    seed: int,
    agents: int | None,
    num_steps: int,
    max_agents: int | None = None,
):
    """One source over all ``specs``: ``len(source)`` positions, ``source.load(position)``.

    Opened through drivesim.scenarios.registry; synthetic specs get a FamilyConfig with the
    campaign's agent count (fixed, or drawn up to ``max_agents``), episode length and seed, so
    scenario ``p`` is a pure function of (spec, seed, p) and a resume regenerates it bit for bit.
    """
    from drivesim.scenarios.registry import SourceContext, open_specs

    context = SourceContext(count=count, seed=seed, family=family_config(agents, num_steps, seed, max_agents))
    return open_specs(specs, context)


def campaign_source(config):
    """:func:`open_source` of a resolved CampaignConfig (drivesim.pipeline.defaults.resolve)."""
    if config.count is None:
        raise ValueError("CampaignConfig.count unset: resolve the config first (drivesim.pipeline.defaults)")
    return open_source(
        config.sources, config.count, config.seed, config.agents, config.num_steps, config.max_agents
    )


def family_config(agents: int | None, num_steps: int, seed: int, max_agents: int | None = None):
    """The synthetic FamilyConfig of a campaign."""
    from drivesim.scenarios.synthetic import FamilyConfig

    extra: dict[str, Any] = {"max_agents": int(max_agents)} if max_agents else {}
    return FamilyConfig(num_agents=agents, steps=num_steps, seed=seed, **extra)
