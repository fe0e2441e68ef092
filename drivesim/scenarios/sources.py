"""Scenario sources: what a campaign reads scenarios from, one position at a time.

A source is an indexable sequence of ScenarioRecords: ``len(source)``, ``source.load(p)``
(raises ScenarioError for a bad scenario; the campaign records it and goes on) and
``source.describe()``. Specs on the command line: ``synthetic:highway,merge``,
``commonroad:PATH`` (a file or a directory of *.xml), ``store:PATH``; they are parsed and
opened by the kinds of drivesim.scenarios.registry.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from drivesim.core.validate import ScenarioError, validate_scenario
from drivesim.scenarios.record import ScenarioRecord

__all__ = [
    "ScenarioError",
    "ScenarioSource",
    "SyntheticSource",
    "CommonRoadSource",
    "StoreSource",
    "MixedSource",
    "parse_source",
    "parse_sources",
]


class ScenarioSource(ABC):
    """An indexable sequence of scenarios; ``name`` identifies it in results."""

    name: str = "source"

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def load(self, position: int) -> ScenarioRecord:
        """The scenario at ``position`` in [0, len); raises ScenarioError when it is bad."""

    def describe(self) -> str:
        return f"{self.name} ({len(self)} scenarios)"

    def load_many(self, positions) -> list[ScenarioRecord | Exception]:
        """The records of ``positions`` in order, a scenario that fails to load as its
        exception in its slot; a position outside [0, len) raises IndexError for the call.
        Sources that read or generate several scenarios at once override it."""
        for position in positions:
            self._check(int(position))
        out: list[ScenarioRecord | Exception] = []
        for position in positions:
            try:
                out.append(self.load(position))
            except Exception as exc:  # noqa: BLE001 - one bad scenario, reported in its slot
                out.append(exc)
        return out

    def _check(self, position: int) -> None:
        if not 0 <= position < len(self):
            raise IndexError(f"{self.name}: position {position} outside [0, {len(self)})")


class SyntheticSource(ScenarioSource):
    """Position p -> family ``families[p % len(families)]``, scenario id ``first_id + p``."""

    def __init__(self, families: list[str], count: int, seed: int, first_id: int = 0, config=None):
        from drivesim.scenarios.synthetic import FAMILIES, FamilyConfig

        unknown = [f for f in families if f not in FAMILIES]
        if not families or unknown:
            raise ValueError(f"unknown synthetic family {unknown or families}; known: {sorted(FAMILIES)}")
        if first_id + count - 1 > 2**31 - 1:
            raise ValueError(
                f"synthetic scenario ids must fit in int32: first id {first_id} + count {count} > 2^31"
            )
        self.families = list(families)
        self.count = count
        self.seed = seed
        self.first_id = first_id
        self.config = config or FamilyConfig(seed=seed)
        self.name = "synthetic:" + ",".join(self.families)

    def __len__(self) -> int:
        return self.count

    def load(self, position: int) -> ScenarioRecord:
        from drivesim.scenarios.synthetic import generate

        self._check(position)
        family = self.families[position % len(self.families)]
        return self._validated(generate(family, self.first_id + position, self.config), position)

    def _validated(self, record: ScenarioRecord, position: int) -> ScenarioRecord:
        validate_scenario(record.scenario, where=f"{self.name}#{self.first_id + position}")
        return record

    def load_many(self, positions) -> list[ScenarioRecord | Exception]:
        """Generated a family at a time, ``synthetic.BLOCK`` ids per device call (the
        program a single ``load`` runs, so every record is the same bit for bit); a block
        whose ids do not generate together is loaded one by one. A subclass that overrides
        ``load`` alone is read through its ``load``."""
        from drivesim.scenarios.synthetic import BLOCK

        if type(self).load is not SyntheticSource.load:
            return super().load_many(positions)
        positions = [int(p) for p in positions]
        for p in positions:
            self._check(p)
        out: dict[int, ScenarioRecord | Exception] = {}
        for k, family in enumerate(self.families):
            ours = [p for p in positions if p % len(self.families) == k]
            for mine in (ours[i : i + BLOCK] for i in range(0, len(ours), BLOCK)):
                self._generate_into(out, family, mine)
        return [out[p] for p in positions]

    def _generate_into(self, out: dict, family: str, mine: list[int]) -> None:
        """Records (or exceptions) of positions ``mine`` of ``family`` into ``out``."""
        from drivesim.scenarios.synthetic import generate_many

        if mine:
            try:
                records = generate_many(family, [self.first_id + p for p in mine], self.config)
            except Exception:  # noqa: BLE001 - find the scenario that fails, one at a time
                out.update(zip(mine, ScenarioSource.load_many(self, mine), strict=True))
                return
            for p, record in zip(mine, records, strict=True):
                try:
                    out[p] = self._validated(record, p)
                except Exception as exc:  # noqa: BLE001 - reported in its slot
                    out[p] = exc

    def describe(self) -> str:
        return (
            f"synthetic families {','.join(self.families)}: {self.count} scenarios, ids "
            f"{self.first_id}..{self.first_id + self.count - 1}, seed {self.seed}"
        )


class RecordedFilesSource(ScenarioSource):
    """Recorded scenarios, one file per position, read by ``load_file(path, ImportConfig)``.

    files: the expanded file list; kind: the spec's kind (``commonroad``...), for the name;
    title: what the files are, for ``describe``; replay / dt / ego: the ImportConfig (``ego``
    appears in the name as ``?ego=ID``)."""

    title = "recorded scenarios"

    def __init__(self, files: list[Path], kind: str, paths, replay: bool, dt: float, ego: str | None = None):
        from drivesim.scenarios.commonroad import ImportConfig

        self.paths = files
        self.config = ImportConfig(dt=dt, replay=replay, ego=ego)
        self.name = f"{kind}:" + ",".join(str(p) for p in paths) + (f"?ego={ego}" if ego is not None else "")

    def __len__(self) -> int:
        return len(self.paths)

    def load(self, position: int) -> ScenarioRecord:
        self._check(position)
        return self.load_file(self.paths[position], self.config)

    def load_file(self, path: Path, config) -> ScenarioRecord:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        mode = "replay" if self.config.replay else "IDM from recorded initial states"
        ego = f", ego {self.config.ego}" if self.config.ego is not None else ""
        return f"{self.title}: {len(self.paths)} files ({mode}{ego})"


class CommonRoadSource(RecordedFilesSource):
    """CommonRoad XML files (a directory expands to its *.xml, sorted); one file per position."""

    title = "CommonRoad"

    def __init__(self, paths: list[Path], replay: bool = False, dt: float = 0.1):
        from drivesim.scenarios.input_files import expand_paths

        super().__init__(expand_paths(paths, "*.xml"), "commonroad", paths, replay, dt)

    def load_file(self, path: Path, config) -> ScenarioRecord:
        from drivesim.scenarios.commonroad import load_commonroad

        return load_commonroad(path, config)


class StoreSource(ScenarioSource):
    """drivesim's Parquet scenario store (read lazily, one row group at a time)."""

    def __init__(self, path):
        from drivesim.scenarios.store import ScenarioStore

        self.store = ScenarioStore(path)
        self.path = Path(path)
        self.name = f"store:{path}"
        self._ids: Any = None
        self._first: Any = None

    def __len__(self) -> int:
        return len(self.store)

    def load(self, position: int) -> ScenarioRecord:
        self._check(position)
        first = self.first_row_of(position)
        if first != position:
            sid = self.scenario_id_at(position)
            reason = f"scenario id {sid} is also row {first}'s (one result row per id)"
            raise ScenarioError(reason, path=str(self.path), scenario_id=sid, field="scenario_id")
        record = self.store.load(position)
        validate_scenario(record.scenario, where=f"{self.path}#{record.scenario_id}")
        return record

    def scenario_id_at(self, position: int) -> int:
        """The stored id of row ``position`` (read once for the whole store)."""
        return int(self._stored_ids()[position])

    def first_row_of(self, position: int) -> int:
        """The first row holding row ``position``'s id (``position`` itself unless repeated:
        a repeated id is a failed row, results keep one row per id)."""
        self._stored_ids()
        return int(self._first[position])

    def repeated(self, positions):
        """(n,) bool: which of rows ``positions`` repeat an earlier row's id."""
        import numpy as np

        self._stored_ids()
        positions = np.asarray(positions, np.int64)
        return self._first[positions] != positions

    def _stored_ids(self):
        import numpy as np

        if self._ids is None:
            ids = self.store.reader().read(columns=["scenario_id"]).column(0).to_numpy()
            _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
            self._ids, self._first = ids, first[inverse.reshape(-1)]
        return self._ids

    def describe(self) -> str:
        return f"scenario store {self.path}: {len(self)} scenarios"


class MixedSource(ScenarioSource):
    """Concatenation of sources: positions run through each source in turn."""

    def __init__(self, sources: list[ScenarioSource]):
        if not sources:
            raise ValueError("MixedSource needs at least one source")
        self.sources = list(sources)
        self._starts = [0]
        for s in self.sources:
            self._starts.append(self._starts[-1] + len(s))
        self.name = "+".join(s.name for s in self.sources)

    def __len__(self) -> int:
        return self._starts[-1]

    def locate(self, position: int) -> tuple[ScenarioSource, int]:
        """(source, position inside it) of a global position."""
        k, local = self._part(position)
        return self.sources[k], local

    def _part(self, position: int) -> tuple[int, int]:
        """(index of the source, position inside it) of a global position."""
        self._check(position)
        k = bisect.bisect_right(self._starts, position) - 1
        return k, position - self._starts[k]

    def load(self, position: int) -> ScenarioRecord:
        source, local = self.locate(position)
        return source.load(local)

    def load_many(self, positions) -> list[ScenarioRecord | Exception]:
        """Each part's positions read by that part's ``load_many`` (where it has one)."""
        parts: dict[int, list[tuple[int, int]]] = {}
        for slot, position in enumerate(positions):
            k, local = self._part(int(position))
            parts.setdefault(k, []).append((slot, local))
        out: list[Any] = [None] * len(positions)
        for index, slots in parts.items():
            source = self.sources[index]
            locals_ = [local for _, local in slots]
            many = getattr(source, "load_many", None)
            got = many(locals_) if callable(many) else ScenarioSource.load_many(source, locals_)
            for (slot, _), item in zip(slots, got, strict=True):
                out[slot] = item
        return out

    def scenario_id_at(self, position: int) -> int:
        """The id of ``position`` in its source (its own ``scenario_id_at``, else the global
        position)."""
        source, local = self.locate(position)
        at = getattr(source, "scenario_id_at", None)
        return int(at(local)) if callable(at) else position

    def describe(self) -> str:
        return "; ".join(s.describe() for s in self.sources)


def parse_source(spec: str, count: int, seed: int) -> ScenarioSource:
    """A source from a spec through the registry (drivesim.scenarios.registry):
    "synthetic:FAM[,FAM...]" (``count`` scenarios, ``seed``), "commonroad:PATH[,PATH...]"
    ("commonroad:replay:PATH" replays the logs), "store:PATH" or a registered user kind."""
    from drivesim.scenarios.registry import SourceContext, open_spec

    return open_spec(spec, SourceContext(count=count, seed=seed))


def parse_sources(specs: list[str], count: int, seed: int) -> ScenarioSource:
    """One source for several specs (a MixedSource when more than one)."""
    from drivesim.scenarios.registry import SourceContext, open_specs

    return open_specs(specs, SourceContext(count=count, seed=seed))
