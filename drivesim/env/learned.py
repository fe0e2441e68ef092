"""Which agents of an environment learn, and what each of them observed of a step.

Learned agents are named by their slot in the scenario's original agent order (the rows of
``Scenario.agents``; ``Scenario.ego_index`` is the ego's). The engine keeps agents in a
sorted order that changes as they pass each other; :func:`view` finds each learned agent's
sorted slot, so per-agent values read the same agent every step.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core.metrics import StepInfo
from drivesim.core.rollout import SimState
from drivesim.core.types import Array, SimConfig, pytree_dataclass, replace


def learned_ids(learned: str | Sequence[int], num_slots: int) -> tuple[int, ...]:
    """The learned agents' slots (original order) of ``learned``: "all" (every slot) or
    slot indices in [0, num_slots), each at most once; a clear ValueError otherwise."""
    if isinstance(learned, str):
        if learned != "all":
            raise ValueError(f"drivesim.env: learned={learned!r}: expected 'ego', 'all' or agent slots")
        return tuple(range(num_slots))
    ids = tuple(int(i) for i in learned)
    if not ids:
        raise ValueError("drivesim.env: learned: name at least one agent slot")
    bad = [i for i in ids if not 0 <= i < num_slots]
    if bad:
        raise ValueError(f"drivesim.env: learned slots {bad} outside the pool's [0, {num_slots}) agents")
    if len(set(ids)) != len(ids):
        raise ValueError(f"drivesim.env: learned slots {list(ids)} name an agent twice")
    return ids


def lookup_table(ids: tuple[int, ...], num_slots: int) -> np.ndarray:
    """(num_slots,) int32: each slot's index among the learned agents, -1 where not learned."""
    table = np.full(num_slots, -1, np.int32)
    table[list(ids)] = np.arange(len(ids), dtype=np.int32)
    return table


@pytree_dataclass
class AgentView:
    """Where the learned agents are in one SimState; (K,) each.

    slots: int32 sorted slot of each learned agent; present: bool, the slot holds an agent
    (a pool scenario with fewer agents pads the rest).
    """

    slots: Array
    present: Array


def view(sim: SimState, ids: Array) -> AgentView:
    """The sorted slots of agents ``ids`` ((K,) int32, original order) in ``sim``."""
    a = sim.agents
    n = a.x.shape[0]
    slot_of = jnp.zeros(n, jnp.int32).at[a.agent_id].set(jnp.arange(n, dtype=jnp.int32))
    slots = slot_of[ids]
    return AgentView(slots=slots, present=a.base_valid[slots])


def at(values: Array, where: AgentView) -> Array:
    """(K,) the learned agents' entries of ``values`` (N,) (zero where absent)."""
    picked = values[where.slots]
    return jnp.where(where.present, picked, jnp.zeros((), picked.dtype))


@pytree_dataclass
class AgentStep:
    """What one step did to each learned agent; (K,) each.

    collided, offroad: bool, the agent has collided / had a box corner off the drivable area
    in the episode (the engine's outcome bits); arc: route arc length after the step [m];
    lane_offset: lateral offset from its lane's centre line [m]; ttc: time to collision with
    its vehicle leader before the step [s] (+inf: not closing); jerk: |da/dt| [m/s^3]. An
    absent agent (a padding slot) reads zeros (+inf ttc).
    """

    collided: Array
    offroad: Array
    arc: Array
    lane_offset: Array
    ttc: Array
    jerk: Array


def agent_step(
    before: SimState, after: SimState, ids: Array, config: SimConfig
) -> tuple[AgentStep, AgentView]:
    """The learned agents' AgentStep between two states, and their view after the step."""
    old, new = view(before, ids), view(after, ids)
    outcome = at(after.agents.outcome, new)
    gap, lead = at(before.lead_gap, old), at(before.lead_speed, old)
    closing = at(before.agents.speed, old) - lead
    ttc_ok = jnp.isfinite(gap) & (closing > 0)
    ttc = jnp.where(ttc_ok, jnp.maximum(gap, 0.0) / jnp.where(ttc_ok, closing, 1.0), jnp.inf)
    jerk = jnp.abs(at(after.agents.accel, new) - at(before.agents.accel, old)) / config.dt
    step = AgentStep(
        collided=(outcome & 1) > 0,
        offroad=(outcome & 2) > 0,
        arc=at(after.proj.s, new),
        lane_offset=at(after.proj.d, new),
        ttc=ttc,
        jerk=jerk,
    )
    return step, new


def agent_infos(info: StepInfo, step: AgentStep, start_arc: Array) -> StepInfo:
    """The step's StepInfo as each learned agent's own, fields (K,): ``ego_collided``,
    ``offroad``, ``ego_progress`` (arc length minus ``start_arc``), ``ego_ttc`` and
    ``ego_jerk`` are the agent's; ``ego_edge`` is NaN, ``collided_with`` -1 and ``red_light``
    False (the engine keeps those for the ego only); the rest are the scenario's."""
    k = step.arc.shape[0]
    spread = jax.tree_util.tree_map(lambda v: jnp.broadcast_to(v, (k,) + jnp.shape(v)), info)
    return replace(
        spread,
        ego_collided=step.collided,
        offroad=step.offroad,
        ego_progress=step.arc - start_arc,
        ego_ttc=step.ttc,
        ego_jerk=step.jerk,
        ego_edge=jnp.full((k,), jnp.nan, jnp.float32),
        collided_with=jnp.full((k,), -1, jnp.int32),
        red_light=jnp.zeros((k,), bool),
    )
