"""The agents of one scenario in sorted order: SortedAgents and its packed static rows.

The props rows (PROP_ROWS, then the route segments) move together under one permutation;
each row reads as an attribute (``a.length``, ``a.is_ego``, ...).
"""

from __future__ import annotations

from typing import overload

import jax.numpy as jnp

from drivesim.core.road import RouteSegments, from_rows
from drivesim.core.trig import sin_cos
from drivesim.core.types import Array, IDMParams, pytree_dataclass

PROP_ROWS = (
    "length",
    "width",
    "lane_width",
    "stop_s",
    "v0",
    "T",
    "s0",
    "a",
    "b",
    "delta",
    "base_valid",
    "is_ego",
    "agent_id",
    "replay",
    "route",
    "group",
    "kind",
    "bent",
)
_BOOL_ROWS = {"base_valid", "is_ego", "replay", "bent"}
_INT_ROWS = {"agent_id", "route", "kind"}


class _PropRow:
    """A static row of ``SortedAgents.props`` read as an attribute: (N,) float32, bool for
    the PROP_ROWS flags, int32 for agent_id, route and kind."""

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.index = name, PROP_ROWS.index(name)

    @overload
    def __get__(self, agents: None, owner=None) -> _PropRow: ...
    @overload
    def __get__(self, agents: SortedAgents, owner=None) -> Array: ...
    def __get__(self, agents, owner=None) -> _PropRow | Array:
        if agents is None:
            return self
        row = agents.props[self.index]
        if self.name in _BOOL_ROWS:
            return row > 0.5
        return row.astype(jnp.int32) if self.name in _INT_ROWS else row


@pytree_dataclass
class SortedAgents:
    """Per-agent arrays in sorted order.

    x, y, heading, cos_h, sin_h, speed, accel: (N,) float32 dynamic state (cos/sin of the
        heading cached; accel is the last applied acceleration); valid: (N,) bool, the
        agent is present now; outcome: (N,) int32 bits of what happened to the agent so
        far (1: collided, 2: off-road). Separate leaves: stacking them would make XLA transpose
        (rows, B, N) -> (B, rows, N) inside the step's main loop.
    props: (18 + 6 S + 1, N) float32 static rows PROP_ROWS then the route segments
        (core.road.route_rows), packed so one permutation moves them all. base_valid: slot
        holds an agent; agent_id: slot index in the scenario's original order; bent: the
        agent's route bends and its pairs are searched directly (drivesim.core.bends). Read them
        through the row attributes below (``a.length``, ``a.idm``, ``a.seg`` ...): (N,)
        arrays, bool for flags.
    signal: (5, N) float32 packed SignalPlan rows (drivesim.core.signals.ROWS) in sorted
        order, or None in a scenario without signals.
    lane: (LANE_ROWS, N) float32 MOBIL parameters and lane-change state of each agent
        (drivesim.core.mobil), or None without lane changes; moved with the other rows.
    edges: (core.edge_cache.ROWS, N) float32 each agent's road-edge candidates on a large
        map, or None; moved with the other rows.
    """

    x: Array
    y: Array
    heading: Array
    cos_h: Array
    sin_h: Array
    speed: Array
    accel: Array
    valid: Array
    outcome: Array
    props: Array
    signal: Array | None = None
    lane: Array | None = None
    edges: Array | None = None

    length = _PropRow()
    width = _PropRow()
    lane_width = _PropRow()
    stop_s = _PropRow()
    v0 = _PropRow()
    T = _PropRow()
    s0 = _PropRow()
    a = _PropRow()
    b = _PropRow()
    delta = _PropRow()
    base_valid = _PropRow()
    is_ego = _PropRow()
    agent_id = _PropRow()
    replay = _PropRow()
    route = _PropRow()
    group = _PropRow()
    kind = _PropRow()
    bent = _PropRow()

    @property
    def idm(self) -> IDMParams:
        return IDMParams(v0=self.v0, T=self.T, s0=self.s0, a=self.a, b=self.b, delta=self.delta)

    @property
    def seg(self) -> RouteSegments:
        return from_rows(self.props[len(PROP_ROWS) :])


def dyn_fields(x, y, heading, speed, accel, valid) -> dict:
    """The dynamic SortedAgents fields (each (N,)), cos/sin of the heading included."""
    sin_h, cos_h = sin_cos(heading)
    return dict(
        x=x,
        y=y,
        heading=heading,
        cos_h=cos_h,
        sin_h=sin_h,
        speed=speed,
        accel=accel,
        valid=valid,
    )
