"""Scenario sources, size classes and validation as the pipeline sees them.

The scenarios room provides the real sources (``drivesim.scenarios.sources``), size classes
(``drivesim.scenarios.batching``) and validation (``drivesim.core.validate``). This module
resolves a campaign's source specs through them, with a small synthetic-only fallback so the
pipeline also runs where that room is not installed.
"""

from __future__ import annotations

import math
import pathlib

import numpy as np

from drivesim.scenarios.record import ScenarioRecord

FALLBACK_SIZE_CLASSES = (8, 16, 32, 64, 128, 256)

# The demo campaign: a small mix that compiles few buckets (agent classes 8/16/32 per family)
DEMO_FAMILIES = ("highway", "merge", "intersection")
DEMO_COUNT = 600
DEMO_MAX_AGENTS = 32


def size_classes() -> tuple[int, ...]:
    try:
        from drivesim.scenarios.batching import SIZE_CLASSES
    except ImportError:
        return FALLBACK_SIZE_CLASSES
    return tuple(SIZE_CLASSES)


def size_class(num_agents: int) -> int:
    """Smallest size class >= num_agents; ValueError naming the limit if too many agents."""
    for size in size_classes():
        if num_agents <= size:
            return int(size)
    raise ValueError(f"num_agents: {num_agents} agents exceed the largest size class {size_classes()[-1]}")


def validate(record: ScenarioRecord, where: str) -> None:
    """Raise ValueError naming the scenario and field if ``record`` is unusable."""
    try:
        from drivesim.core.validate import validate_scenario
    except ImportError:
        validate_scenario = _fallback_validate
    validate_scenario(record.scenario, where=where)
    size_class(record.num_agents)


def _fallback_validate(scenario, where: str = "") -> None:
    ag = scenario.agents
    for name in ("x", "y", "heading", "speed", "length", "width"):
        values = np.asarray(getattr(ag, name))[np.asarray(ag.valid, bool)]
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{where}: field agents.{name} holds NaN/Inf")


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
    try:
        from drivesim.scenarios import sources as real
    except ImportError:
        real = None
    parts = [
        _open_one(spec, count, seed, family_config(agents, num_steps, seed, max_agents), real)
        for spec in specs
    ]
    return parts[0] if len(parts) == 1 else _mixed(parts, real)


def family_config(agents: int | None, num_steps: int, seed: int, max_agents: int | None = None):
    """The synthetic FamilyConfig of a campaign."""
    from drivesim.scenarios.synthetic import FamilyConfig

    extra = {"max_agents": int(max_agents)} if max_agents else {}
    return FamilyConfig(num_agents=agents, steps=num_steps, seed=seed, **extra)


def _open_one(spec, count, seed, cfg, real):
    kind, _, arg = spec.partition(":")
    families = tuple(f.strip() for f in arg.split(",") if f.strip()) or ("highway",)
    if kind == "synthetic" and real is not None:
        return real.SyntheticSource(list(families), count, seed, config=cfg)
    if kind == "synthetic":
        return FallbackSynthetic(families, count, seed, cfg.num_agents, cfg.steps)
    if real is None:
        raise ValueError(
            f"source {spec!r}: only synthetic sources are available without drivesim.scenarios.sources"
        )
    return real.parse_source(spec, count, seed)


def _mixed(parts, real):
    if real is not None:
        return real.MixedSource(parts)
    return FallbackMixed(parts)


class FallbackSynthetic:
    """Synthetic families round-robin by position; optional fixed agent count / episode length."""

    def __init__(self, families, count, seed, agents=None, steps=80):
        from drivesim.scenarios import synthetic

        unknown = [f for f in families if f not in synthetic.FAMILIES]
        if unknown:
            raise ValueError(f"unknown synthetic families {unknown}; known: {sorted(synthetic.FAMILIES)}")
        self.families, self.count = tuple(families), int(count)
        self.cfg = synthetic.FamilyConfig(num_agents=agents, steps=steps, seed=seed)
        self.name = "synthetic:" + ",".join(families)

    def __len__(self) -> int:
        return self.count

    def load(self, position: int) -> ScenarioRecord:
        from drivesim.scenarios import synthetic

        return synthetic.generate(self.families[position % len(self.families)], position, self.cfg)

    def describe(self) -> str:
        return f"{self.name} x{self.count}"


class FallbackMixed:
    """Concatenation of sources: positions run through each source in turn; a scenario's
    global id is its position (set on the record)."""

    def __init__(self, parts):
        self.parts = list(parts)
        self.offsets = np.cumsum([0] + [len(p) for p in self.parts])
        self.name = "+".join(getattr(p, "name", "?") for p in self.parts)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def load(self, position: int) -> ScenarioRecord:
        index = int(np.searchsorted(self.offsets, position, side="right") - 1)
        return self.parts[index].load(position - int(self.offsets[index]))

    def describe(self) -> str:
        return " + ".join(p.describe() for p in self.parts)


def ceil_div(a: int, b: int) -> int:
    return int(math.ceil(a / b))
