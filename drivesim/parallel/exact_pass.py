"""The exact fallback of an executor's batches, compiled apart and run on this process's rows.

The executor's programs run the fast pass only (``rollout_batch(exact=False)``); when a
batch comes back with flagged rows (``window_overflow``), :class:`ExactPass` simulates them
again with drivesim.core.exact_rows, on this process's first device, from the host copy of
the batch the executor kept (a Scenario batch or an IdBatch, whose rows are generated
inside the program). A batch that flags nothing never compiles the fallback; one that
does compiles it once per shape. Per-scenario results equal the in-program fallback's bit
for bit (tests/parallel/test_exact_pass.py).
"""

from __future__ import annotations

import time

import jax
import numpy as np

from drivesim.core import exact_rows
from drivesim.core.rollout import exact_rollouts
from drivesim.core.search_choice import of_scenarios
from drivesim.core.types import RolloutMetrics, SimConfig
from drivesim.parallel.generated import IdBatch, materialize
from drivesim.parallel.programs import ProgramCache


class ExactPass:
    """Completes fetched metrics of an executor running ``sim``; ``programs``: the process's
    program cache. ``compile_seconds`` / ``run_seconds``: time spent compiling / running the
    fallback (the executor adds the first to its own)."""

    def __init__(self, sim: SimConfig, programs: ProgramCache):
        self.sim, self.programs = sim, programs
        self.compile_seconds = 0.0
        self.run_seconds = 0.0

    def complete(self, metrics: RolloutMetrics, host, policy, sweep: bool) -> RolloutMetrics:
        """``metrics``: this process's real rows as NumPy, (B,) leaves or (P, B) for a sweep
        of stacked policies; ``host``: those rows' host batch (B,). Flagged rows replaced."""
        if not np.any(metrics.window_overflow):
            return metrics
        start, compiled_before = time.perf_counter(), self.compile_seconds
        config = of_scenarios(self.sim, _shapes(host))
        program = exact_rows.exact_program(_generated_rollouts, config)
        take = lambda idx: jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[idx], host)  # noqa: E731
        if not sweep:
            out = exact_rows.complete(metrics, take, self._runner(program, policy), config)
        else:
            parts = []
            for p in range(np.shape(metrics.window_overflow)[0]):
                row = jax.tree_util.tree_map(lambda leaf, p=p: leaf[p], metrics)
                one = jax.tree_util.tree_map(lambda leaf, p=p: leaf[p], policy)
                parts.append(exact_rows.complete(row, take, self._runner(program, one), config))
            out = jax.tree_util.tree_map(lambda *rows: np.stack(rows), *parts)
        spent = time.perf_counter() - start
        self.run_seconds += spent - (self.compile_seconds - compiled_before)
        return out

    def _runner(self, program, policy):
        """run(sub, full) of core.exact_rows: ``program`` compiled once per argument shapes."""

        def run(sub, full: bool):
            args = (sub, policy, np.asarray(full))
            return self._compiled(program, args)(*args)

        return run

    def _compiled(self, program, args):
        leaves, treedef = jax.tree_util.tree_flatten(args)
        shapes = tuple((np.shape(x), str(np.asarray(x).dtype)) for x in leaves)
        sig = ("exact_pass", program, treedef, shapes)

        def build():
            start = time.perf_counter()
            compiled = program.lower(*args).compile()
            self.compile_seconds += time.perf_counter() - start
            return compiled

        return self.programs.get(sig, build)


def _generated_rollouts(sub, policy, config: SimConfig, full_edges) -> RolloutMetrics:
    """core.rollout.exact_rollouts of a Scenario batch or of the rows an IdBatch generates."""
    return exact_rollouts(materialize(sub), policy, config, full_edges)


def _shapes(host):
    """The Scenario batch's shapes (an IdBatch's: those its program generates, traced once
    per family set, family config and size class)."""
    if not isinstance(host, IdBatch):
        return host
    key = (host.families, host.config, host.size_class)
    if key not in _GENERATED_SHAPES:
        row = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[:1], host)
        _GENERATED_SHAPES[key] = jax.eval_shape(materialize, row)
    return _GENERATED_SHAPES[key]


_GENERATED_SHAPES: dict = {}  # (families, config, size class) -> the generated Scenario's shapes
