"""The exact fallback compiled apart, run only for a batch that needs it.

The fast pass (core.rollout.fast_pass) flags the scenarios whose window or road-edge search
it could not prove exact (``window_overflow``). ``rollout_batch`` can simulate them again
inside its own program (core.fallback), but then every program carries a second, all-pairs
rollout that doubles its compile time, while most batches flag nothing (0 of 256 W32
highway or merge scenarios, a few of 256 at 128 agents). :func:`complete` runs that second
rollout as a program of its own, for the flagged rows only, after the fast pass's flags have
reached the host: a batch that flags nothing never compiles it.

The rounds are the in-program fallback's: chunks of flagged scenarios (core.fallback.chunk_size)
simulated with core.fallback.exact_config, first with the own-route edge search, then the
rows still unproven with every lane's edges (one program: the switch is an argument).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import numpy as np

from drivesim.core.fallback import chunk_size, exact_config, one_round
from drivesim.core.types import RolloutMetrics, SimConfig

# run(sub, full_edges) -> RolloutMetrics (c,): exact rollouts of the scenarios ``sub`` (c,)
ExactRun = Callable[[object, bool], RolloutMetrics]


def flagged_rows(fast: RolloutMetrics) -> np.ndarray:
    """Rows (k,) int64 of a fast pass's metrics (B,) that the exact fallback must redo."""
    return np.flatnonzero(np.asarray(fast.window_overflow))


def complete(fast: RolloutMetrics, take: Callable[[np.ndarray], object], run: ExactRun, config: SimConfig):
    """``fast`` (metrics (B,), NumPy or device arrays, of the fast pass of ``config``, resolved
    for the platform) with its flagged rows replaced by exact rollouts: NumPy metrics (B,),
    or ``fast`` itself where nothing is flagged or nothing can be proven (exact_config None).
    ``take(idx)``: the scenarios of rows ``idx`` (c,) as ``run`` reads them. Replaced rows
    keep ``window_overflow`` True (it records the fallback), as in core.fallback."""
    rows = flagged_rows(fast)
    if rows.size == 0 or exact_config(config) is None:
        return fast
    out = jax.tree_util.tree_map(np.array, jax.device_get(fast))  # writable copies
    cap = chunk_size(int(np.shape(out.window_overflow)[0]))
    pending = rows
    for full in (True,) if one_round(config) else (False, True):
        chunks = [pending[start : start + cap] for start in range(0, pending.size, cap)]
        # every chunk dispatched before the first is read: the devices queue them
        runs = [run(take(np.concatenate([idx, np.repeat(idx[-1:], cap - idx.size)])), full) for idx in chunks]
        unproven = []
        for idx, got in zip(chunks, jax.device_get(runs), strict=True):
            _write_rows(out, idx, got)
            unproven.append(idx[np.asarray(got.window_overflow)[: idx.size]])
        pending = np.concatenate(unproven)
        if pending.size == 0:
            break
    out.window_overflow[rows] = True
    return out


def _write_rows(out: RolloutMetrics, idx: np.ndarray, got: RolloutMetrics) -> None:
    """out[idx] = the first idx.size rows of ``got``, leaf by leaf (NumPy, in place)."""
    for leaf, new in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(got), strict=True):
        leaf[idx] = new[: idx.size]


@functools.lru_cache(maxsize=64)
def exact_program(rollouts, config: SimConfig):
    """(sub, policy, full_edges) -> RolloutMetrics (c,): the jit of ``rollouts``
    (core.rollout.exact_rollouts) with exact_config(``config``) fixed; one per config."""
    proving = exact_config(config)
    return jax.jit(lambda sub, policy, full: rollouts(sub, policy, proving, full))
