"""Fidelity of the neighbour search: a float64 all-pairs reference on the engine's own states.

``brute_force`` recomputes, in NumPy float64 over every agent pair, the leader of each
agent and the agents in a box overlap, from a :class:`drivesim.core.trace.NeighbourTrace`;
``compare`` counts where the engine's search differs (misses and false alarms), leaving
out decisions within ``tol`` of their threshold (float32 vs float64 rounding), which are
counted apart as borderline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOL = 1e-3  # [m] decisions closer than this to their threshold are borderline


@dataclass
class Counts:
    """Agent-steps compared and the differences found (see :func:`compare`)."""

    leader_relations: int = 0
    leader_misses: int = 0
    leader_false: int = 0
    collision_agent_steps: int = 0
    collision_misses: int = 0
    collision_false: int = 0
    pair_count_errors: int = 0
    borderline: int = 0

    def add(self, other: Counts) -> Counts:
        return Counts(**{k: getattr(self, k) + getattr(other, k) for k in self.__dataclass_fields__})


def _leaders(tr, b: int):
    """Reference leader slot (T, N) (-1: none) and borderline mask (T, N) of scenario b."""
    x, y = tr.x[b].astype(np.float64), tr.y[b].astype(np.float64)
    tx, ty, d = (getattr(tr, k)[b].astype(np.float64) for k in ("tx", "ty", "d"))
    hw = 0.5 * tr.lane_width[b].astype(np.float64)
    valid = tr.valid[b]
    rx = x[:, None, :] - x[:, :, None]  # (T, i, j): j - i
    ry = y[:, None, :] - y[:, :, None]
    ds = rx * tx[..., None] + ry * ty[..., None]
    lat = -rx * ty[..., None] + ry * tx[..., None] + d[..., None]
    n = x.shape[1]
    pair = valid[:, :, None] & valid[:, None, :] & ~np.eye(n, dtype=bool)[None]
    inside = np.abs(lat) < hw[..., None]
    cand = pair & (ds > 0.0) & inside
    ds_c = np.where(cand, ds, np.inf)
    lead = np.where(cand.any(-1), np.argmin(ds_c, -1), -1)
    near_lat = pair & (ds > 0.0) & (np.abs(np.abs(lat) - hw[..., None]) < TOL)
    near_ds = pair & inside & (np.abs(ds) < TOL)
    srt = np.sort(ds_c, axis=-1)
    with np.errstate(invalid="ignore"):  # inf - inf where no second candidate
        tie = np.isfinite(srt[..., 1]) & (srt[..., 1] - srt[..., 0] < TOL)
    return lead, near_lat.any(-1) | near_ds.any(-1) | tie


def _separation(tr, b: int):
    """(T, N, N) largest separating-axis gap between boxes i and j (<= 0: overlap)."""
    x, y, h = (getattr(tr, k)[b].astype(np.float64) for k in ("x", "y", "heading"))
    hl, hw = 0.5 * tr.length[b].astype(np.float64), 0.5 * tr.width[b].astype(np.float64)
    c, s = np.cos(h), np.sin(h)
    dx = x[:, None, :] - x[:, :, None]
    dy = y[:, None, :] - y[:, :, None]
    ci, si, cj, sj = c[:, :, None], s[:, :, None], c[:, None, :], s[:, None, :]
    cc = np.abs(ci * cj + si * sj)
    ss = np.abs(ci * sj - si * cj)
    hli, hwi, hlj, hwj = hl[:, :, None], hw[:, :, None], hl[:, None, :], hw[:, None, :]
    gaps = (
        np.abs(dx * ci + dy * si) - (hli + hlj * cc + hwj * ss),
        np.abs(-dx * si + dy * ci) - (hwi + hlj * ss + hwj * cc),
        np.abs(dx * cj + dy * sj) - (hlj + hli * cc + hwi * ss),
        np.abs(-dx * sj + dy * cj) - (hwj + hli * ss + hwi * cc),
    )
    return np.max(np.stack(gaps), axis=0)


def brute_force(tr, b: int):
    """Reference of scenario b: leader (T, N), hit (T, N), pairs (T,), borderline (T, N)."""
    lead, border = _leaders(tr, b)
    valid = tr.valid[b]
    n = valid.shape[1]
    pair = valid[:, :, None] & valid[:, None, :] & ~np.eye(n, dtype=bool)[None]
    sep = _separation(tr, b)
    overlap = pair & (sep <= 0.0)
    border = border | (pair & (np.abs(sep) < TOL)).any(-1)
    pairs = np.triu(overlap, 1).sum((-1, -2))
    return lead, overlap.any(-1), pairs, border


def compare(tr, b: int) -> Counts:
    """Differences between the engine's trace and the reference in scenario b (active
    steps, valid agents, borderline agent-steps left out)."""
    lead, hit, pairs, border = brute_force(tr, b)
    use = tr.valid[b] & tr.active[b][:, None]
    ok = use & ~border
    got_lead, got_hit = tr.leader[b], tr.hit[b]
    steps_clean = tr.active[b] & ~(use & border).any(-1)
    return Counts(
        leader_relations=int(np.sum(ok & (lead >= 0))),
        leader_misses=int(np.sum(ok & (lead >= 0) & (got_lead != lead))),
        leader_false=int(np.sum(ok & (got_lead >= 0) & (got_lead != lead))),
        collision_agent_steps=int(np.sum(ok & hit)),
        collision_misses=int(np.sum(ok & hit & ~got_hit)),
        collision_false=int(np.sum(ok & got_hit & ~hit)),
        pair_count_errors=int(np.sum(steps_clean & (tr.pairs[b] != pairs))),
        borderline=int(np.sum(use & border)),
    )


def batch_counts(tr, valid) -> Counts:
    """:func:`compare` summed over the scenarios with ``valid`` (B,) True."""
    total = Counts()
    for b in np.flatnonzero(np.asarray(valid)):
        total = total.add(compare(tr, int(b)))
    return total


def delivered_traces(batch, policy, config):
    """(window-only trace, the trace of what the engine delivers, fallback flags (B,)) as
    NumPy trees: scenarios whose window search was not proven exact at some step are
    traced with the all-pairs search, as ``rollout_batch`` simulates them."""

    import jax

    from drivesim.core.trace import trace_batch

    win = jax.device_get(trace_batch(batch, policy, config.with_search(neighbours="window_only")))
    flag = ~np.all(win.certified | ~win.active, axis=1)
    if not flag.any():
        return win, win, flag
    ap = jax.device_get(trace_batch(batch, policy, config.with_search(neighbours="all_pairs")))
    pick = lambda w, a: np.where(flag.reshape(flag.shape + (1,) * (w.ndim - 1)), a, w)  # noqa: E731
    return win, jax.tree_util.tree_map(pick, win, ap), flag


def hard_braking_share(tr, threshold: float = -4.0) -> float:
    """Share of valid agents whose step-0 acceleration is below ``threshold`` [m/s^2]."""
    valid = tr.valid[:, 0]
    return float(np.sum(valid & (tr.accel0 < threshold)) / max(1, np.sum(valid)))


def outside_lanes(x, y, centers: np.ndarray, widths: np.ndarray, lane_valid: np.ndarray) -> np.ndarray:
    """(...) bool: centres (x, y) (...) of one scenario outside every valid lane corridor
    (segments clipped at the lane ends), in float64. centers (L, P, 2), widths (L,),
    lane_valid (L,)."""
    p = np.stack([x, y], -1).astype(np.float64)[..., None, None, :]  # (..., 1, 1, 2)
    a = centers[:, :-1].astype(np.float64)
    seg = centers[:, 1:].astype(np.float64) - a
    length = np.linalg.norm(seg, axis=-1)
    u = seg / np.maximum(length, 1e-9)[..., None]
    rel = p - a
    along = np.clip(np.sum(rel * u, -1), 0.0, length)
    dist = np.linalg.norm(rel - along[..., None] * u, axis=-1)
    dist = np.where(length > 1e-6, dist, np.inf).min(-1)  # (..., L)
    inside = (dist <= 0.5 * widths) & lane_valid
    return ~inside.any(-1)


def offroad_agent_steps(tr, centers: np.ndarray, widths: np.ndarray, lane_valid: np.ndarray) -> int:
    """Active agent-steps of simulated (not replayed) valid agents whose centre lies outside
    every lane corridor (segments clipped at the lane ends): off the mapped road. Inputs of
    one batch: centers (B, L, P, 2), widths (B, L), lane_valid (B, L)."""
    total = 0
    for b in range(tr.x.shape[0]):
        outside = outside_lanes(tr.x[b], tr.y[b], centers[b], widths[b], lane_valid[b])  # (T, N)
        off = tr.valid[b] & outside & ~tr.replay[b][None] & tr.active[b][:, None]
        total += int(np.sum(off))
    return total
