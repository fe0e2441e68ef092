"""Search switches fixed when a program is built.

The junction-zone search (core.junction) and the bent-route search (core.bends) run in each
step under a real conditional on a batch-wide switch (core.neighbours.searches_on), so a
batch that needs neither skips them. The conditional has a price: a GPU reads its predicate
back to the host every step, and on the CPU the searches' results cannot fuse into their
readers. Where the switches are known when the program is built, the engine takes them as
constants instead: the searches the batch needs are inlined, the others are left out of the
program (smaller, and faster to compile).

- ``simulate`` reads them from its batch before building the program (:func:`of_batch`): the
  same switches as the conditionals', so the same results bit for bit, and the most agents
  on bent routes of any of its scenarios, which sizes the bent-route search (fewer rows than
  SearchPlan.bend_capacity: the merge family has at most 10 of 32 agents on its ramp);
- a synthetic family declares the searches its scenarios may need (``SEARCHES``, and
  optionally ``most_bent(slots)``), used for the id batches the devices generate
  (drivesim.parallel.generated);
- a scenario that needs a search its program left out is flagged at reset
  (``window_overflow``, :func:`unsearched`; more agents on bent routes than the search's
  rows: core.bends.search's ``fits``) and simulated again by the exact fallback, so a wrong
  declaration costs time, never exactness.
"""

from __future__ import annotations

import collections
import functools
import os
import threading

import jax
import jax.numpy as jnp

from drivesim.core import exact_rows, neighbours, search_choice, traced_cache
from drivesim.core.bends import search_rows
from drivesim.core.types import METRIC_NAMES, METRICS_TREE, Array, Scenario, SimConfig

_searches_on = jax.jit(neighbours.searches_on, static_argnames="config")
# fast passes FixedSimulate keeps compiled in a process (the least recently used goes first):
# each holds about 1,000 memory mappings of XLA:CPU code (drivesim.parallel.code_memory)
KEPT = 16


def fixed(zone: bool, bends: bool, most_bent: int | None = None) -> neighbours.SearchesOn:
    """SearchesOn of Python values (a static argument of a program); ``most_bent``: the most
    agents on bent routes of any scenario, which sizes the bent-route search
    (core.bends.search_rows; None: SearchPlan.bend_capacity's rows)."""
    rows = None if most_bent is None or not bends else search_rows(int(most_bent))
    return neighbours.SearchesOn(zone=bool(zone), bends=bool(bends), bend_rows=rows)


def is_fixed(on) -> bool:
    """Whether ``on`` is a SearchesOn of constants (not traced switches, not None)."""
    return on is not None and isinstance(on.zone, bool) and isinstance(on.bends, bool)


def _concrete(tree) -> bool:
    """Whether every leaf of ``tree`` holds data: not a tracer of another program being
    built, not a ShapeDtypeStruct."""
    leaves = jax.tree_util.tree_leaves(tree)
    return not any(isinstance(leaf, (jax.core.Tracer, jax.ShapeDtypeStruct)) for leaf in leaves)


def of_batch(scenarios: Scenario, config: SimConfig) -> neighbours.SearchesOn | None:
    """The switches of a batch (leading axis B) as constants; None for a batch without data
    (traced inside another program, or shapes only) and on the all-pairs path. Runs a small
    program and waits for it."""
    config = search_choice.of_scenarios(config, scenarios)
    if config.search.neighbours == "all_pairs" or not _concrete(scenarios):
        return None
    on = jax.device_get(_searches_on(scenarios, config))
    return fixed(on.zone, on.bends, on.bend_rows)


def unsearched(crossings, bent: Array, on) -> Array | None:
    """() bool: the scenario needs a search that the fixed switches ``on`` leave out (it
    has crossing straight routes, core.junction.Crossings ``crossings``, or agents on bent
    routes, ``bent`` (N,)); None where ``on`` is not fixed."""
    if not is_fixed(on):
        return None
    missing = jnp.zeros((), bool)  # the rules of core.neighbours.searches_on, for one scenario
    if not on.zone:
        missing = missing | neighbours.needs_zone(crossings)
    if not on.bends:
        missing = missing | neighbours.needs_bends(bent)
    return missing


class FixedSimulate:
    """``simulate(scenarios, policy, config, devices=1)``: ``rollout_batch``'s fast pass for
    the batch's switches (:func:`of_batch`), compiled from the StableHLO kept per machine
    (core.traced_cache) where the batch sits on one device of JAX's default backend and the
    policy is built in, else by the jit; then, for a batch whose fast pass flags rows, the
    exact fallback compiled apart (core.exact_rows); inside another program being traced, the
    one program holding both. ``lower`` and ``trace``: the jit's fast pass (the computation
    the kept program holds)."""

    def __init__(self, rollout_batch, exact_rollouts):
        self._rollout_batch = rollout_batch
        self._jit = jax.jit(rollout_batch, static_argnames=("config", "devices", "searches", "exact"))
        self._exact_rollouts = exact_rollouts
        # fast passes compiled through core.traced_cache, by key, the KEPT most recent
        self._programs: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def _bound(self, method, scenarios: Scenario, policy, config: SimConfig, devices: int, exact: bool):
        """``method`` of the jit applied with the batch's switches. A host batch goes to the
        device once: the switches' program and the engine's read the same copy."""
        if _concrete(scenarios):
            scenarios = jax.device_put(scenarios)
        searches = of_batch(scenarios, config)
        return method(scenarios, policy, config=config, devices=devices, searches=searches, exact=exact)

    def __call__(self, scenarios: Scenario, policy, config: SimConfig, devices: int = 1):
        if not _concrete(scenarios) or not _concrete(policy):
            return self._bound(self._jit, scenarios, policy, config, devices, exact=True)
        scenarios, policy = jax.device_put((scenarios, policy))
        searches = of_batch(scenarios, config)
        fast = self._fast(scenarios, policy, config, devices, searches)(scenarios, policy)
        # the plan the fast pass ran (its switches may choose all pairs), for the fallback's rounds
        resolved = search_choice.of_scenarios(config, scenarios, searches)
        run = exact_rows.exact_program(self._exact_rollouts, resolved)
        take = lambda idx: jax.tree_util.tree_map(lambda leaf: leaf[jnp.asarray(idx)], scenarios)  # noqa: E731
        done = exact_rows.complete(fast, take, lambda sub, full: run(sub, policy, full), resolved)
        return fast if done is fast else jax.tree_util.tree_map(jnp.asarray, done)

    def clear(self) -> None:
        """Drop the fast passes compiled through core.traced_cache (a new process's view;
        drivesim.parallel.code_memory drops them with JAX's caches)."""
        with self._lock:
            self._programs.clear()

    def program(self, scenarios: Scenario, policy, config: SimConfig, devices: int = 1):
        """The fast pass's program for this batch, compiled as a call compiles it: a callable
        of (scenarios, policy) giving the fast pass's metrics (flagged rows not simulated
        again), with ``memory_analysis()``. ``scenarios`` and ``policy`` are device arrays
        (jax.device_put)."""
        searches = of_batch(scenarios, config)
        fast = self._fast(scenarios, policy, config, devices, searches)
        if isinstance(fast, traced_cache.FlatProgram):
            return fast
        return fast.func.lower(scenarios, policy, **fast.keywords).compile()

    def _fast(self, scenarios: Scenario, policy, config: SimConfig, devices: int, searches):
        """The fast pass for these arguments: a core.traced_cache.FlatProgram compiled from the
        StableHLO kept per machine (no trace in a later process) where the arguments sit on
        one device and the ego policy is built in, else the jit with its static arguments
        bound (traced in every process)."""
        leaves, tree = jax.tree_util.tree_flatten((scenarios, policy))
        device = traced_cache.one_device(leaves)
        platform = None if device is None else next(iter(device.device_set)).platform
        where = traced_cache.folder()
        # exported for JAX's default backend, whose choices the trace takes (core.search_choice)
        if platform != jax.default_backend() or not traced_cache.keepable(config) or where is None:
            return functools.partial(
                self._jit, config=config, devices=devices, searches=searches, exact=False
            )
        avals = tuple((leaf.shape, leaf.dtype, leaf.weak_type) for leaf in leaves)
        settings = (*traced_cache.trace_settings(), os.environ.get("XLA_FLAGS"))
        key = (config, devices, searches, tree, avals, device, settings, where)
        with self._lock:
            program = self._programs.get(key)
            if program is not None:
                self._programs.move_to_end(key)
                return program
        program = traced_cache.compile_flat(
            lambda sc, p: self._rollout_batch(sc, p, config, devices, searches, False),
            (scenarios, policy),
            in_shardings=[device] * len(leaves),
            out_shardings=[device] * len(METRIC_NAMES),
            donate=(),
            description=f"simulate {devices} {searches} {settings[-1] or ''}",
            sim=config,
            out_tree=METRICS_TREE,
        )
        with self._lock:  # two threads may compile one key: the program is the same
            self._programs[key] = program
            while len(self._programs) > KEPT:
                self._programs.popitem(last=False)
        return program

    def lower(self, scenarios: Scenario, policy, config: SimConfig, devices: int = 1):
        return self._bound(self._jit.lower, scenarios, policy, config, devices, exact=False)

    def lower_exact(self, scenarios: Scenario, policy, config: SimConfig):
        """The exact fallback's program lowered for one chunk of ``scenarios`` (B,) (its first
        core.fallback.chunk_size(B) rows), as a call that needs it compiles it; None where
        ``config`` proves everything itself."""
        resolved = search_choice.of_scenarios(config, scenarios)
        if exact_rows.exact_config(resolved) is None:
            return None
        cap = exact_rows.chunk_size(int(scenarios.valid.shape[0]))
        sub = jax.tree_util.tree_map(lambda leaf: leaf[:cap], scenarios)
        return exact_rows.exact_program(self._exact_rollouts, resolved).lower(sub, policy, jnp.asarray(False))

    def trace(self, scenarios: Scenario, policy, config: SimConfig, devices: int = 1):
        return self._bound(self._jit.trace, scenarios, policy, config, devices, exact=False)
