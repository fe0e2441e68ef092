"""Synthetic scenario families as pure JAX functions of (campaign seed, family, scenario id).

Each family is a module with ``NAME``, ``LOG_UNIFORM`` (how its agent count is drawn),
``POINTS`` (points per lane polyline before padding), ``SEARCHES`` (whether its batches may need
the junction-zone and the bent-route searches, core.switches), optionally ``most_bent(slots)``
(the most agents on bent routes in a scenario of that size: the rows of the bent-route
search), optionally ``REFUSED_OPTIONS`` (FamilyConfig
flags it cannot honour -> why) and ``build(seed, scenario_id, cfg,
size) -> Scenario`` (one scenario padded to ``size`` agent slots, ``common.LANES`` lanes, or
16 route slots for intersection_turns and intersection with pedestrians, and ``common.POINTS``
points (2: straight lanes), 4 for merge, 8 for intersection_turns). Everything here runs
inside jit; nothing touches files.

    batch = generate_batch("merge", seed, ids, FamilyConfig(), size=32)   # ids (B,) int32

Ids are grouped by size class first, from :func:`agent_counts` (the same integer draw the
generator makes, run here on the host CPU device).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core.types import Scenario, replace
from drivesim.scenarios.families import common, highway, intersection, merge, turns
from drivesim.scenarios.families.common import FamilyConfig

FAMILIES = {m.NAME: m for m in (highway, merge, intersection, turns)}
# Raised whenever a family's scenarios change for some (seed, id): a campaign's fingerprint
# records it, so a resume never mixes two generators' scenarios. 2: long highway and merge
# queues get a road long enough for them (2026-11-24). intersection_turns' 8-point routes
# (2026-11-27) changed no campaign's scenarios: that family only became a campaign source then.
GENERATOR_VERSION = 2

__all__ = [
    "FAMILIES",
    "GENERATOR_VERSION",
    "FamilyConfig",
    "agent_counts",
    "build",
    "check_options",
    "family",
    "generate_batch",
    "count_of",
]


def family(name: str):
    """The module of family ``name``; ValueError naming the known ones otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown synthetic family {name!r}; known: {sorted(FAMILIES)}") from None


def check_options(name: str, cfg: FamilyConfig) -> None:
    """One-line ValueError when family ``name`` refuses a flag set in ``cfg``."""
    for option, why in getattr(family(name), "REFUSED_OPTIONS", {}).items():
        if getattr(cfg, option):
            raise ValueError(f"synthetic family {name} {why}")


def build(name: str, seed, scenario_id, cfg: FamilyConfig, size: int) -> Scenario:
    """One scenario (traced seed and id; static family, config and size class)."""
    check_options(name, cfg)
    return family(name).build(seed, scenario_id, cfg.static(), size)


def count_of(name: str, seed, scenario_id, cfg: FamilyConfig):
    """Real agent count () int32 of a scenario (traced seed and id)."""
    key = common.scenario_key(seed, name, scenario_id)
    return common.agent_count(key, cfg, family(name).LOG_UNIFORM)


def generate_batch(name: str, seed, ids, cfg: FamilyConfig, size: int) -> Scenario:
    """Scenarios ``ids`` (B,) int32 of campaign ``seed`` (() or (B,) uint32), padded to ``size``
    agents; a scenario whose count exceeds ``size`` (or whose id is < 0) has valid=False."""
    seeds = jnp.broadcast_to(jnp.asarray(seed, jnp.uint32), jnp.shape(ids))
    one = lambda s, i: build(name, s, i, cfg, size)  # noqa: E731
    batch = jax.vmap(one)(seeds, ids)
    fits = jax.vmap(lambda s, i: count_of(name, s, i, cfg))(seeds, ids) <= size
    return replace(batch, valid=batch.valid & fits)


def _count_fn(name: str, cfg: FamilyConfig):
    key = (name, cfg.static())
    if key not in _COUNT_FNS:
        _COUNT_FNS[key] = jax.jit(jax.vmap(lambda s, i: count_of(name, s, i, cfg), in_axes=(None, 0)))
    return _COUNT_FNS[key]


_COUNT_FNS: dict = {}
COUNT_BLOCK = 64  # fewest ids agent_counts computes in one call


def agent_counts(name: str, ids, cfg: FamilyConfig, seed: int | None = None) -> np.ndarray:
    """Real agent counts (B,) int32 of scenarios ``ids`` (host, vectorized; computed on the
    CPU device with integer operations only, so equal to the generator's own draw)."""
    ids = np.asarray(ids, np.int64)
    if ids.size and (ids.min() < 0 or ids.max() > 2**31 - 1):
        raise ValueError(f"synthetic scenario ids must be in [0, 2^31): got {ids.min()}..{ids.max()}")
    if cfg.num_agents is not None:
        return np.full(ids.shape, cfg.num_agents, np.int32)
    seed = cfg.seed if seed is None else seed
    flat = ids.astype(np.int32).reshape(-1)
    # padded to a power of two, at least COUNT_BLOCK: one small program per length class, not
    # one per count of ids asked for (a scenario's count does not depend on its neighbours)
    padded = np.zeros(max(COUNT_BLOCK, 1 << max(len(flat) - 1, 0).bit_length()), np.int32)
    padded[: len(flat)] = flat
    with jax.default_device(jax.devices("cpu")[0]):
        out = _count_fn(name, cfg)(np.uint32(seed), padded)
    return np.asarray(out)[: len(flat)].reshape(ids.shape)
