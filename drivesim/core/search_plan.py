"""How the engine searches: one frozen value per program, apart from the model it simulates.

``SimConfig`` says what is simulated (dt, steps, limits, lookahead, lane changes, occlusion,
the ego policy); its ``search`` field, a :class:`SearchPlan`, says how the engine finds
leaders, collisions and road edges, and how it lays out its program. Every search is exact
(a scenario the fast search cannot prove is simulated again with all pairs), so on one kind
of processor the plan changes the time a batch takes, not its metrics, with one exception
named below (``resort_every``).

A plan may leave choices to the platform and the batch ("auto"); ``search_choice.resolved``
fills every one of them when a program is built (the plan a ledger and a benchmark record
lists). The switches that decide how the program stores values (``store``, ``branch_stores``,
``vectorised_trig``) are read while it is traced: :func:`tracing` makes a plan the current
one for the code traced inside it (core.materialize, core.trig read :func:`current`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

NEIGHBOUR_SEARCHES = ("auto", "window", "all_pairs", "window_only")
EDGE_SEARCHES = ("auto", "own_route", "all_lanes")


def _is_count(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


@dataclass(frozen=True)
class SearchPlan:
    """How the engine searches (hashable; part of a program's static key).

    neighbours: "auto" (the platform's: "all_pairs" up to 8 agent slots on the CPU and 32
        on accelerators, "window" above, "all_pairs" on recorded maps; core.search_choice) |
        "window" (sorted-window search, proven exact per step; a batch's scenarios where the
        proof fails are simulated again with "all_pairs") | "all_pairs" (every pair, O(N^2)
        per step) | "window_only" (no fallback: for measuring the window).
    edge_search: how the road edges (off-road, ``min_road_edge_distance_m``) are found each
        step. "own_route": each box corner against its own route, the ego and the few agents
        near their corridor's edge against every lane, a scenario with too many of those
        simulated again with "all_lanes" (core.edges) | "all_lanes": every corner against
        every lane, O(N L S) per step | "auto" ("all_lanes" on accelerators where the
        neighbours come from all pairs and the road has at most 32 segments; else
        "own_route").
    window: neighbour window half-width K (agents ahead / behind in the sorted order), >= 1.
    resort_every: in a rollout, one odd-even re-sort pass (parities alternating) runs every
        this many steps, >= 1. Leaders and collisions are searched exactly whatever the
        order; the order is visible through the MLP's neighbour features and
        ``window_overflow``, so this one field can change an observing policy's metrics.
    block_agents: agents per device per cache block (core.blocking): a larger batch is
        simulated as blocks one after another. "auto": 16384 on CPU, no blocking on
        accelerators; None: never block.
    junction_capacity: most agents the junction zone (core.junction) searches exactly per
        step, >= 1; a scenario with more is simulated again with all pairs. "auto": 8 for
        scenarios of up to 32 agent slots, 16 above.
    bend_capacity: most agents on bent routes (merge ramps, turns, curved lanes) that
        core.bends searches against every agent, >= 0 (0: never). "auto": a quarter of the
        agent slots in multiples of 8, at least 16.
    map_segments: on a recorded map, the real lane segments the road-edge tests keep in one
        table (core.edge_cache.prepare: the padding of lane slots and points left out),
        >= 1; a map with more is simulated again with every segment slot. None: every slot
        (the exact fallback's). "auto": 512.
    store: core.materialize stores each value several fusions read (True), or leaves it to
        XLA's fusion (False: for measuring what storing gains on a backend).
    branch_stores: inside a rollout's step on the CPU, stores pass through a conditional
        (True) or the identity reduction (False: for measuring).
    vectorised_trig: sine, cosine and the IDM's free-road power as vector code
        (core.trig, core.behavior; True) or ``jnp.sin``/``jnp.cos``/``jnp.power`` (False:
        for measuring). Each of the last three changes the compiled program, and may change
        the last bits of a result (FMA contraction), not the searches.
    """

    neighbours: str = "auto"
    edge_search: str = "auto"
    window: int = 6
    resort_every: int = 2
    block_agents: int | str | None = "auto"
    junction_capacity: int | str = "auto"
    bend_capacity: int | str = "auto"
    map_segments: int | str | None = "auto"
    store: bool = True
    branch_stores: bool = True
    vectorised_trig: bool = True

    def __post_init__(self):
        if self.neighbours not in NEIGHBOUR_SEARCHES:
            raise ValueError(
                f"SearchPlan.neighbours: expected {'|'.join(NEIGHBOUR_SEARCHES)}, got {self.neighbours!r}"
            )
        if self.edge_search not in EDGE_SEARCHES:
            raise ValueError(
                f"SearchPlan.edge_search: expected {'|'.join(EDGE_SEARCHES)}, got {self.edge_search!r}"
            )
        if not (_is_count(self.window, 1) and _is_count(self.resort_every, 1)):
            found = f"{self.window!r}, {self.resort_every!r}"
            raise ValueError(f"SearchPlan: window and resort_every must be ints >= 1, got {found}")
        cap = self.junction_capacity
        if not (cap == "auto" or _is_count(cap, 1)):
            raise ValueError(f"SearchPlan.junction_capacity: expected an int >= 1 or 'auto', got {cap!r}")
        cap = self.bend_capacity
        if not (cap == "auto" or _is_count(cap, 0)):
            raise ValueError(f"SearchPlan.bend_capacity: expected an int >= 0 or 'auto', got {cap!r}")
        kept = self.map_segments
        if not (kept in ("auto", None) or _is_count(kept, 1)):
            raise ValueError(f"SearchPlan.map_segments: expected an int >= 1, 'auto' or None, got {kept!r}")
        block = self.block_agents
        if not (block in ("auto", None) or _is_count(block, 1)):
            raise ValueError(f"SearchPlan.block_agents: expected an int >= 1, 'auto' or None, got {block!r}")
        for name in ("store", "branch_stores", "vectorised_trig"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"SearchPlan.{name}: expected True or False, got {getattr(self, name)!r}")

    def replace(self, **changes) -> SearchPlan:
        """This plan with ``changes`` (keywords of the fields)."""
        return dataclasses.replace(self, **changes)

    def record(self) -> dict:
        """{field: value} (JSON values): what a ledger and a benchmark record list."""
        return dataclasses.asdict(self)


DEFAULT = SearchPlan()


class _Current(threading.local):
    """The plans of the programs this thread is tracing (JAX traces per thread), innermost last."""

    def __init__(self) -> None:
        self.stack: list[SearchPlan] = []


_CURRENT = _Current()


@contextlib.contextmanager
def tracing(plan: SearchPlan | None) -> Iterator[None]:
    """Inside, :func:`current` is ``plan`` (None: the enclosing one stays current)."""
    if plan is not None:
        _CURRENT.stack.append(plan)
    try:
        yield
    finally:
        if plan is not None:
            _CURRENT.stack.pop()


def current() -> SearchPlan:
    """The plan of the program being traced (the innermost :func:`tracing`), else DEFAULT."""
    return _CURRENT.stack[-1] if _CURRENT.stack else DEFAULT


def traced_under_config(fn: Callable) -> Callable:
    """``fn`` (a function with a ``config`` argument, a SimConfig) run with its config's
    SearchPlan current (:func:`tracing`): the entry points of a traced step or rollout."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        config = signature.bind_partial(*args, **kwargs).arguments["config"]
        with tracing(config.search):
            return fn(*args, **kwargs)

    return wrapped
