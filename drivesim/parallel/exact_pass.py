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

import functools
import time

import jax
import numpy as np

from drivesim.core import exact_rows
from drivesim.core.fallback import exact_config
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
        start = time.perf_counter()
        config = of_scenarios(self.sim, _shapes(host))
        take = lambda idx: jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[idx], host)  # noqa: E731
        if not sweep:
            out = exact_rows.complete(metrics, take, self._runner(policy), config)
        else:
            parts = []
            for p in range(np.shape(metrics.window_overflow)[0]):
                row = jax.tree_util.tree_map(lambda leaf, p=p: leaf[p], metrics)
                one = jax.tree_util.tree_map(lambda leaf, p=p: leaf[p], policy)
                parts.append(exact_rows.complete(row, take, self._runner(one), config))
            out = jax.tree_util.tree_map(lambda *rows: np.stack(rows), *parts)
        self.run_seconds += time.perf_counter() - start
        return out

    def _runner(self, policy):
        def run(sub, full: bool):
            args = (sub, policy, np.asarray(full))
            return self._compiled(args)(*args)

        return run

    def _compiled(self, args):
        leaves, treedef = jax.tree_util.tree_flatten(args)
        shapes = tuple((np.shape(x), str(np.asarray(x).dtype)) for x in leaves)
        sig = ("exact_pass", self.sim, treedef, shapes)

        def build():
            start = time.perf_counter()
            compiled = _program(self.sim).lower(*args).compile()
            spent = time.perf_counter() - start
            self.compile_seconds += spent
            self.run_seconds -= spent  # counted as compiling, not running
            return compiled

        return self.programs.get(sig, build)


@functools.lru_cache(maxsize=16)
def _program(sim: SimConfig):
    """jit of (batch (c,), policy, full_edges) -> exact RolloutMetrics (c,) for ``sim``."""

    def run(sub, policy, full):
        scenarios = materialize(sub)
        proving = exact_config(of_scenarios(sim, scenarios))
        assert proving is not None  # complete() runs nothing where there is nothing to prove
        return exact_rollouts(scenarios, policy, proving, full)

    return jax.jit(run)


def _shapes(host):
    """The Scenario batch's shapes (an IdBatch's are those its program generates)."""
    if isinstance(host, IdBatch):
        return jax.eval_shape(materialize, jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[:1], host))
    return host
