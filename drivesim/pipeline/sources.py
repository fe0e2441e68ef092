"""Scenario sources as the pipeline sees them: a campaign's source specs resolved through
``drivesim.scenarios.sources``, and the demo mix.
"""

from __future__ import annotations

import pathlib
from typing import Any

from drivesim.scenarios import sources as real

# The demo campaign: a small mix that compiles few buckets (agent classes 8/16/32 per family)
DEMO_FAMILIES = ("highway", "merge", "intersection")
DEMO_COUNT = 600
DEMO_MAX_AGENTS = 32
# IDM beside a tailgating IDM variant, so the demo's outcome charts have collisions to show
DEMO_SWEEP = pathlib.Path(__file__).with_name("demo_sweep.toml")


def demo_sources(root: pathlib.Path | None = None) -> tuple[tuple[str, ...], list[str]]:
    """Source specs of the demo campaign and notes for the user.

    Every synthetic family, plus the CommonRoad files of ``../shared/data/commonroad`` found
    relative to the project root or the current directory (skipped with a note when absent).
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
        notes.append("no CommonRoad data found at ../shared/data/commonroad: running synthetic families only")
    else:
        specs.append(f"commonroad:{data}")
    return tuple(specs), notes


def find_shared_commonroad(root: pathlib.Path | None = None) -> pathlib.Path | None:
    """``../shared/data/commonroad`` beside the project root or the cwd, if it holds XML files."""
    project = pathlib.Path(__file__).resolve().parents[2]
    candidates = [pathlib.Path(root)] if root else []
    candidates += [project, pathlib.Path.cwd()]
    for base in candidates:
        for path in (base.parent / "shared" / "data" / "commonroad", base / "shared" / "data" / "commonroad"):
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

    Uses drivesim.scenarios.sources; synthetic specs get a FamilyConfig with the campaign's
    agent count (fixed, or drawn up to ``max_agents``), episode length and seed, so scenario
    ``p`` is a pure function of (spec, seed, p) and a resume regenerates it bit for bit.
    """
    parts = [
        _open_one(spec, count, seed, family_config(agents, num_steps, seed, max_agents)) for spec in specs
    ]
    return parts[0] if len(parts) == 1 else real.MixedSource(parts)


def family_config(agents: int | None, num_steps: int, seed: int, max_agents: int | None = None):
    """The synthetic FamilyConfig of a campaign."""
    from drivesim.scenarios.synthetic import FamilyConfig

    extra: dict[str, Any] = {"max_agents": int(max_agents)} if max_agents else {}
    return FamilyConfig(num_agents=agents, steps=num_steps, seed=seed, **extra)


def _open_one(spec, count, seed, cfg):
    kind, _, arg = spec.partition(":")
    if kind == "synthetic":
        families = tuple(f.strip() for f in arg.split(",") if f.strip()) or ("highway",)
        return real.SyntheticSource(list(families), count, seed, config=cfg)
    return real.parse_source(spec, count, seed)
