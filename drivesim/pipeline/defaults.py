"""Campaign defaults in one place: what a CampaignConfig with fields left unset means.

No sources means the demo: the synthetic families of DEMO_FAMILIES plus the CommonRoad files
of ``../shared/data`` (or ``$DRIVESIM_DATA``), DEMO_COUNT scenarios, at most DEMO_MAX_AGENTS
agents, the IDM sweep of DEMO_SWEEP (when the policy is ``idm``) and the directory DEMO_OUT.
A campaign with sources has SOURCES_COUNT scenarios per synthetic source unless told, and its
own directory ``runs/run-<hash of what it computes>``, so rerunning a command resumes it and
another command gets another directory. ``drivesim run`` and ``run_campaign`` both resolve a
config here, so the library's ``CampaignConfig()`` is ``make run``'s campaign.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from dataclasses import replace

from drivesim.pipeline.config import CampaignConfig
from drivesim.pipeline.sources import DATA_ENV, find_shared_commonroad

# The demo campaign: a small mix that compiles few buckets (agent classes 8/16/32 per family)
DEMO_FAMILIES = ("highway", "merge", "intersection")
DEMO_COUNT = 600
DEMO_MAX_AGENTS = 32
# IDM beside a tailgating IDM variant, so the demo's outcome charts have collisions to show
DEMO_SWEEP = pathlib.Path(__file__).with_name("demo_sweep.toml")
DEMO_OUT = "runs/demo"
SOURCES_COUNT = 1000  # scenarios of a campaign naming its synthetic sources, unless told


def demo_sources(root: pathlib.Path | None = None) -> tuple[tuple[str, ...], list[str]]:
    """Source specs of the demo campaign and notes for the user.

    DEMO_FAMILIES, plus the CommonRoad files found by
    :func:`drivesim.pipeline.sources.find_shared_commonroad` (skipped with a note when absent).
    """
    from drivesim.scenarios import synthetic

    families = DEMO_FAMILIES if set(DEMO_FAMILIES) <= set(synthetic.FAMILIES) else sorted(synthetic.FAMILIES)
    specs = ["synthetic:" + ",".join(families)]
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


def default_out(config: CampaignConfig) -> str:
    """``runs/run-<8 hex digits of the sha1 of config.identity()>``."""
    digest = hashlib.sha1(json.dumps(config.identity(), sort_keys=True).encode()).hexdigest()[:8]
    return f"runs/run-{digest}"


def resolve(config: CampaignConfig, *, fill_sources: bool = True) -> CampaignConfig:
    """``config`` with every unset default filled in (see the module docstring); idempotent.

    fill_sources: False when the caller passes its own source object (library use): empty
    ``sources`` then stay empty. The demo is a config with no sources and no count; one with a
    count but no sources runs the demo's sources without its sweep, in a directory of its own.
    """
    if config.sources or not fill_sources:
        count = SOURCES_COUNT if config.count is None else config.count
        config = replace(config, count=count)
        return config if config.out is not None else replace(config, out=default_out(config))
    demo = config.count is None
    specs, notes = demo_sources()
    config = replace(
        config,
        sources=specs,
        notes=config.notes + tuple(notes),
        count=DEMO_COUNT if demo else config.count,
        max_agents=config.max_agents or (DEMO_MAX_AGENTS if config.agents is None else None),
        sweep=config.sweep or (str(DEMO_SWEEP) if demo and config.policy == "idm" else None),
    )
    if config.out is None:
        config = replace(config, out=DEMO_OUT if demo else default_out(config))
    return config
