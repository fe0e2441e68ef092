"""The loader stage of a synthetic campaign: id batches instead of host scenario batches.

A synthetic source's scenarios are generated on the devices inside the rollout program (see
drivesim.parallel.generated), so planning a window needs only each position's family and
agent size class. Those come from one vectorized draw over the window's ids (the integer
agent-count draw the generator itself makes); positions are grouped by (family, size class) in
position order and cut into batches of ``batch_size``, the groups that fill no batch together
(one program generates several families: drivesim.parallel.generated). The plan is a pure function of the
window, so a resumed run rebuilds the same batches. Set ``DRIVESIM_HOST_SYNTHETIC=1`` to run
synthetic sources through the host path instead (for comparisons).
"""

from __future__ import annotations

import collections
import functools
import os
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from drivesim.parallel.generated import id_batch
from drivesim.pipeline.columnar import planner_for
from drivesim.pipeline.ledger import Ledger, PlannedBatch
from drivesim.pipeline.plan import HostWork, Planner
from drivesim.pipeline.results import ScenarioInfo
from drivesim.pipeline.timing import Stopwatch
from drivesim.scenarios.batching import SIZE_CLASSES
from drivesim.scenarios.families import agent_counts, generate_batch
from drivesim.scenarios.sources import SyntheticSource


def make_planner(source, directory, settings, positions) -> Planner:
    """The planner of a campaign: id batches for a synthetic source, whole-column batches for
    a store (drivesim.pipeline.columnar), host batches record by record otherwise."""
    if isinstance(source, SyntheticSource) and os.environ.get("DRIVESIM_HOST_SYNTHETIC") != "1":
        return GeneratedPlanner(source, directory, settings, positions)
    return planner_for(source, directory, settings, positions)


class GeneratedPlanner(Planner):
    """Produces HostWork whose ``scenario`` is an IdBatch, window by window (loader thread)."""

    source: SyntheticSource

    def __call__(self, stop: threading.Event):
        ledger = Ledger(self.directory)
        try:
            for window in self.walk(ledger):
                window_id = window.window_id
                if window.planned:
                    batches = ledger.open_batches(window_id)
                else:  # the plan is known whole before its first batch: recorded at once
                    plan = self.plan_window(window.start, window.stop, window.batch_size)
                    done = ledger.done_ids(window_id)
                    ledger.record_plan(window_id, window_id, window.stop, plan)
                    batches = [b for b in plan if b.batch_id not in done]
                for batch in batches:
                    if stop.is_set():
                        return
                    yield batch.batch_id, self.work(batch)
        finally:
            ledger.close()

    def _family(self, positions: np.ndarray) -> np.ndarray:
        return positions % len(self.source.families)

    def _counts(self, positions: np.ndarray) -> np.ndarray:
        """Real agent count (n,) of each position (vectorized per family)."""
        src, counts = self.source, np.zeros(len(positions), np.int64)
        which = self._family(positions)
        for k, name in enumerate(src.families):
            rows = which == k
            if rows.any():
                counts[rows] = agent_counts(name, src.first_id + positions[rows], src.config, src.config.seed)
        return counts

    def plan_window(self, start: int, stop: int, batch_size: int | None = None) -> list[PlannedBatch]:
        """Batches of positions [start, stop): per (family, size class) in position order,
        cut into ``batch_size`` (default: the settings'); scenarios larger than every class
        form one failed batch (size class 0). The remainders of the (family, size class)
        groups that filled no batch are merged as a file source's are (batching's
        merge_partial): the families that generate one scenario structure, at their largest
        class, cut in position order. Sorted by batch id."""
        positions = np.arange(start, stop)
        counts = self._counts(positions)
        fits = counts <= SIZE_CLASSES[-1]
        classes = np.zeros(len(positions), np.int64)
        classes[fits] = np.asarray(SIZE_CLASSES)[np.searchsorted(SIZE_CLASSES, np.maximum(counts[fits], 1))]
        which, size = self._family(positions), batch_size or self.settings.batch_size
        batches, rare = [], collections.defaultdict(list)
        for key in np.unique(which * 1024 + classes):
            group = positions[(which * 1024 + classes) == key]
            step = len(group) if key % 1024 == 0 else size
            if key % 1024 and len(group) < size:  # a remainder of a group that filled no batch
                rare[self.shape_group(int(key // 1024))].append((int(key % 1024), group))
                continue
            for k in range(0, len(group), step):
                part = group[k : k + step]
                batches.append(PlannedBatch(int(part[0]), tuple(part.tolist()), int(key % 1024)))
        for parts in rare.values():
            size_class = max(c for c, _ in parts)
            merged = np.sort(np.concatenate([g for _, g in parts]))
            for k in range(0, len(merged), size):
                part = merged[k : k + size]
                batches.append(PlannedBatch(int(part[0]), tuple(part.tolist()), size_class))
        return sorted(batches, key=lambda b: b.batch_id)

    def shape_group(self, index: int) -> tuple[str, ...]:
        """The source's families that generate the scenario structure family ``index`` does
        (one program generates them together: drivesim.parallel.generated.materialize)."""
        src, mine = self.source, structure(self.source.families[index], self.source.config)
        return tuple(name for name in src.families if structure(name, src.config) == mine)

    def work(self, batch: PlannedBatch) -> HostWork:
        """HostWork of a planned batch: an IdBatch padded to the padded batch length."""
        with Stopwatch() as sw:
            src = self.source
            positions = np.asarray(batch.positions, np.int64)
            family = src.families[int(positions[0]) % len(src.families)]
            ids = src.first_id + positions
            if batch.size_class == 0:
                reason = f"ScenarioError: agents exceeds the largest class {SIZE_CLASSES[-1]}"
                failed = [
                    (ScenarioInfo(int(p), family, "synthetic", f"{family}-{i}", None, None), reason)
                    for p, i in zip(positions, ids, strict=True)
                ]
                return HostWork(batch.batch_id, 0, None, [], failed, sw.seconds)
            which = self._family(positions)
            names = [src.families[k] for k in which]
            infos = info_columns(names, positions, ids, self._counts(positions), batch.size_class)
            rows = max(self.settings.padded_batch, len(ids))  # a window begun with larger batches
            families = (family,) if len(set(which.tolist())) == 1 else self.shape_group(int(which[0]))
            index = [families.index(name) for name in names]
            scenario = id_batch(families, ids, src.config.seed, src.config, batch.size_class, rows, index)
        return HostWork(batch.batch_id, batch.size_class, scenario, infos, [], sw.seconds)


def info_columns(family, positions: np.ndarray, ids: np.ndarray, counts: np.ndarray, size_class: int):
    """The result rows' info columns of a synthetic batch as an Arrow table (no Python per
    scenario): ``family`` (a name, or one per row), positions (n,) as scenario_id, names
    ``family-<id>``, counts (n,) agents."""
    n = len(positions)
    families = pa.repeat(pa.scalar(family), n) if isinstance(family, str) else pa.array(family, pa.string())
    names = pc.binary_join_element_wise(
        families, pc.cast(pa.array(ids, pa.int64()), pa.string()), pa.scalar("-")
    )
    return pa.table(
        {
            "scenario_id": pa.array(positions, pa.int64()),
            "family": families,
            "source": pa.repeat(pa.scalar("synthetic"), n),
            "name": names,
            "num_agents": pa.array(counts, pa.int32()),
            "size_class": pa.array(np.full(n, size_class, np.int32)),
        }
    )


@functools.cache
def structure(family: str, config) -> str:
    """The tree structure of the scenarios ``family`` generates under FamilyConfig ``config``
    (shapes aside): families of one structure can share a generating program."""
    ids = jax.ShapeDtypeStruct((2,), jnp.int32)
    shapes = jax.eval_shape(lambda i: generate_batch(family, 0, i, config, SIZE_CLASSES[0]), ids)
    return str(jax.tree_util.tree_structure(shapes))
