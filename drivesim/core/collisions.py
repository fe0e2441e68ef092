"""Collision outcome of one step: pair count, agents involved, the ego's partner."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core import exact, interactions
from drivesim.core.materialize import materialize
from drivesim.core.types import Array, SimConfig


def collisions(agents, config: SimConfig, zone=None) -> tuple[Array, Array, Array]:
    """From SortedAgents ``agents`` (N,): overlapping pairs () int32, agents in an
    overlap (N,) bool, and the id of the agent the ego overlaps (the smallest, -1 if
    none) () int32; by the window (plus the junction zone's pairs beyond it, ``zone``: a
    core.junction.ZoneSearch) or the all-pairs search."""
    ids = agents.agent_id
    none = jnp.iinfo(jnp.int32).max
    if config.search.neighbours == "all_pairs":
        upper = exact.all_pairs_hits(agents)
        both = upper | upper.T
        partner = jnp.min(jnp.where(both & agents.is_ego[:, None], ids[None, :], none))
        pairs = jnp.sum(upper.astype(jnp.int32))
        return pairs, jnp.any(both, axis=1), jnp.where(partner == none, -1, partner)
    window = config.search.window
    hits = interactions.window_pair_hits(
        agents.x, agents.y, agents.cos_h, agents.sin_h, agents.length, agents.width, agents.valid, window
    )
    hits = materialize(hits)  # box tests once, whatever reads them
    n = ids.shape[0]
    ego_p = interactions.padded(agents.is_ego, window, False)
    ids_p = interactions.padded(ids, window, none)
    hit_any = jnp.zeros(n, bool)
    partner = jnp.full(n, none, jnp.int32)
    count = jnp.zeros(n, jnp.int32)
    for k, hit in enumerate(hits, start=1):
        back = interactions.view(interactions.padded(hit, window, False), window, -k, n)
        hit_any = hit_any | hit | back
        count = count + hit.astype(jnp.int32)
        other = jnp.where(agents.is_ego, interactions.view(ids_p, window, k, n), none)
        other = jnp.where(interactions.view(ego_p, window, k, n), ids, other)
        partner = jnp.minimum(partner, jnp.where(hit, other, none))
    partner = jnp.min(partner)
    pairs = jnp.sum(count)
    if zone is not None:
        pairs = pairs + zone.pairs
        hit_any = hit_any | zone.hit
        partner = jnp.minimum(partner, jnp.where(zone.partner < 0, none, zone.partner))
    return pairs, hit_any, jnp.where(partner == none, -1, partner)
