"""Scenario sources as the pipeline sees them: a campaign's source specs opened through
``drivesim.scenarios.registry`` with the campaign's synthetic FamilyConfig, and the demo mix.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

# A directory holding ``commonroad/*.xml``, searched for the demo after the current directory
DATA_ENV = "DRIVESIM_DATA"

# The demo campaign: a small mix that compiles few buckets (agent classes 8/16/32 per family)
DEMO_FAMILIES = ("highway", "merge", "intersection")
DEMO_COUNT = 600
DEMO_MAX_AGENTS = 32
# IDM beside a tailgating IDM variant, so the demo's outcome charts have collisions to show
DEMO_SWEEP = pathlib.Path(__file__).with_name("demo_sweep.toml")


def demo_sources(root: pathlib.Path | None = None) -> tuple[tuple[str, ...], list[str]]:
    """Source specs of the demo campaign and notes for the user.

    DEMO_FAMILIES, plus the CommonRoad files found by :func:`find_shared_commonroad`
    (skipped with a note when absent).
    """
    from drivesim.scenarios import synthetic

    specs = [
        "synthetic:"
        + ",".join(
            DEMO_FAMILIES if set(DEMO_FAMILIES) <= set(synthetic.FAMILIES) else sorted(synthetic.FAMILIES)
        )
    ]
    notes = []
    data = find_shared_commonroad(root)
    if data is None:
        notes.append(
            f"no CommonRoad data found at ../shared/data/commonroad or ${DATA_ENV}/commonroad: "
            "running synthetic families only"
        )
    else:
        specs.append(f"commonroad:{data}")
    return tuple(specs), notes


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


def family_config(agents: int | None, num_steps: int, seed: int, max_agents: int | None = None):
    """The synthetic FamilyConfig of a campaign."""
    from drivesim.scenarios.synthetic import FamilyConfig

    extra: dict[str, Any] = {"max_agents": int(max_agents)} if max_agents else {}
    return FamilyConfig(num_agents=agents, steps=num_steps, seed=seed, **extra)
