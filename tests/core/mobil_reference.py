"""MOBIL (Kesting, Treiber, Helbing 2007) in float64 NumPy, one agent at a time, for
straight lanes along +x (lane k centred at y = k * width): the reference of
drivesim.core.mobil."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tests.core.reference import MIN_GAP, ReferenceSim, Route, _np, idm, reference_rollout


@dataclass
class Traffic:
    """Agents (N,) float64: x, y, v, length, lane (int), idm (dict of (N,) arrays),
    mobil (dict politeness, b_safe, threshold of (N,)), enabled (bool); lanes: count;
    width: lane width."""

    x: np.ndarray
    y: np.ndarray
    v: np.ndarray
    length: np.ndarray
    lane: np.ndarray
    idm: dict
    mobil: dict
    enabled: np.ndarray
    lanes: int
    width: float
    claims: np.ndarray | None = None  # (N,) lane an agent is changing into (-1: none)


def follow(tr: Traffic, i: int, gap: float, lead_v: float) -> float:
    """IDM acceleration of agent i behind a leader at ``gap`` (+inf: none)."""
    p = {k: float(v[i]) for k, v in tr.idm.items()}
    if not np.isfinite(gap):
        return idm(tr.v[i], np.inf, 0.0, **p)
    return idm(tr.v[i], max(gap, MIN_GAP), tr.v[i] - lead_v, **p)


def neighbours(tr: Traffic, i: int, lane: int):
    """(leader, its gap, follower, its gap to i) of agent i in lane ``lane`` (index or None,
    gaps +inf without one): agents whose centre lies in the lane's corridor or who are
    changing into it."""
    lead, follower, lead_ds, follow_ds = None, None, np.inf, -np.inf
    for j in range(len(tr.x)):
        claimed = tr.claims is not None and tr.claims[j] == lane
        if j == i or (abs(tr.y[j] - lane * tr.width) >= 0.5 * tr.width and not claimed):
            continue
        ds = tr.x[j] - tr.x[i]
        if ds > 0.0 and ds < lead_ds:
            lead, lead_ds = j, ds
        if ds <= 0.0 and ds > follow_ds:
            follower, follow_ds = j, ds
    lead_gap = lead_ds - 0.5 * (tr.length[i] + tr.length[lead]) if lead is not None else np.inf
    follow_gap = -follow_ds - 0.5 * (tr.length[i] + tr.length[follower]) if follower is not None else np.inf
    return lead, lead_gap, follower, follow_gap


def accel_now(tr: Traffic) -> np.ndarray:
    """Every agent's IDM acceleration behind its leader in its own lane."""
    out = np.zeros(len(tr.x))
    for i in range(len(tr.x)):
        lead, gap, _f, _g = neighbours(tr, i, int(tr.lane[i]))
        out[i] = follow(tr, i, gap, tr.v[lead] if lead is not None else 0.0)
    return out


def side(tr: Traffic, c: int, target: int, acc: np.ndarray):
    """MOBIL towards lane ``target`` for agent c: (allowed, incentive, safety margin
    ã_n + b_safe, fit margin min(new gaps))."""
    lead, lead_gap, n, n_gap = neighbours(tr, c, target)
    own_lead, own_gap, o, o_gap = neighbours(tr, c, int(tr.lane[c]))
    acc_c_new = follow(tr, c, lead_gap, tr.v[lead] if lead is not None else 0.0)
    acc_n = acc[n] if n is not None else 0.0
    acc_n_new = follow(tr, n, n_gap, tr.v[c]) if n is not None else 0.0
    acc_o = acc[o] if o is not None else 0.0
    own_lead_v = tr.v[own_lead] if own_lead is not None else 0.0
    acc_o_new = follow(tr, o, o_gap + tr.length[c] + own_gap, own_lead_v) if o is not None else 0.0
    p, b_safe, threshold = (float(tr.mobil[k][c]) for k in ("politeness", "b_safe", "threshold"))
    safe = acc_n_new >= -b_safe
    incentive = acc_c_new - acc[c] + p * ((acc_n_new - acc_n) + (acc_o_new - acc_o))
    fits = lead_gap > 0.0 and n_gap > 0.0
    allowed = bool(safe and incentive > threshold and fits)
    return allowed, incentive - threshold, acc_n_new + b_safe, min(lead_gap, n_gap)


def decisions(tr: Traffic):
    """New lane of every agent (N,) int and the smallest decision margin of each (N,)."""
    acc = accel_now(tr)
    lane = tr.lane.copy()
    margin = np.full(len(tr.x), np.inf)
    for c in range(len(tr.x)):
        if not tr.enabled[c]:
            continue
        results = {}
        for target in (lane[c] + 1, lane[c] - 1):  # left (larger y) first
            if 0 <= target < tr.lanes:
                allowed, inc, safe_m, fit_m = side(tr, c, int(target), acc)
                results[int(target)] = (allowed, inc)
                margin[c] = min(margin[c], abs(inc), abs(safe_m), abs(fit_m))
        left, right = results.get(int(lane[c]) + 1, (False, 0.0)), results.get(int(lane[c]) - 1, (False, 0.0))
        if left[0] and (not right[0] or left[1] >= right[1]):
            lane[c] = lane[c] + 1
        elif right[0]:
            lane[c] = lane[c] - 1
    return lane, margin


# ----------------------------------------------------------------------------- rollout


def path_offset(d0: float, age: float, duration: float) -> float:
    """d0 (1 - q(u)), q(u) = 10u^3 - 15u^4 + 6u^5, u = clip(age / duration, 0, 1)."""
    u = min(max(age / duration, 0.0), 1.0)
    return d0 * (1.0 - u**3 * (10.0 - 15.0 * u + 6.0 * u * u))


class LaneChangingReference(ReferenceSim):
    """ReferenceSim with MOBIL lane changes (drivesim.core.mobil) on straight lanes along +x,
    lane k centred at y = k * width: decisions after step t when (t + 1) % decide_every == 0,
    the quintic lateral path, the route switch once the centre is inside the target lane."""

    def __init__(self, scenario, policy, config):
        super().__init__(scenario, policy, config)
        lc = config.lane_changes
        n = self.n
        mob = scenario.mobil
        pick = lambda k: np.full(n, getattr(lc, k)) if mob is None else _np(getattr(mob, k))  # noqa: E731
        self.mob = {k: pick(k) for k in ("politeness", "b_safe", "threshold")}
        allowed = np.ones(n, bool) if mob is None else np.asarray(mob.enabled, bool)
        self.enabled = self.valid & (np.arange(n) != self.ego) & allowed
        self.route_id = np.array(self.route_id, copy=True)  # changes here, not in the scenario
        self.target = self.route_id.astype(int).copy()
        self.shift, self.d0, self.t0 = np.zeros(n), np.zeros(n), np.full(n, -1.0e9)
        self.lane_width = float(self.road["widths"][0])
        self.num_lanes = int(np.sum(self.road["lane_valid"]))
        self.group = np.where(self.valid, 0.0, len(self.road["widths"]))  # one group: every lane
        self.order = np.lexsort((self._keys(), self.group))
        self.t = 0

    def _steer(self, i, proj):
        look = max(self.cfg.min_lookahead, self.cfg.lookahead_time * self.v[i])
        tgt = self.routes[i].point_at(proj[i][0] + look)
        _s, _d, tx, ty = proj[i]
        age = (self.t - self.t0[i]) * self.cfg.dt + look / max(self.v[i], 1.0)
        off = path_offset(self.d0[i], age, self.cfg.lane_changes.duration_s) + self.shift[i]
        dx, dy = tgt[0] - off * ty - self.x[i], tgt[1] + off * tx - self.y[i]
        dist2 = max(dx * dx + dy * dy, 1e-6)
        lateral = -dx * math.sin(self.h[i]) + dy * math.cos(self.h[i])
        return math.atan(2.0 * self.cfg.wheelbase_ratio * self.length[i] * lateral / dist2)

    def step(self, t, m):
        self.t = t
        super().step(t, m)
        lc = self.cfg.lane_changes
        if self.scenario_valid and t < self.episode_length and (t + 1) % lc.decide_every == 0:
            self._decide(t + 1)

    def _decide(self, now: int):
        w, lc = self.lane_width, self.cfg.lane_changes
        for i in range(self.n):  # the centre inside the target lane: take it as the route
            if self.shift[i] != 0.0 and abs(self.y[i] - self.target[i] * w) < 0.5 * w:
                self.route_id[i] = self.target[i]
                self.routes[i] = Route(self.road["centers"][self.target[i]])
                self.lane_w[i] = self.road["widths"][self.target[i]]
                self.shift[i] = 0.0
        idle = ((now - self.t0) * self.cfg.dt >= lc.duration_s) & (self.shift == 0.0)
        traffic = Traffic(
            x=self.x,
            y=self.y,
            v=self.v,
            length=self.length,
            lane=np.asarray(self.route_id, int),
            idm=self.idm_p,
            mobil=self.mob,
            enabled=self.enabled & self.valid & idle,
            lanes=self.num_lanes,
            width=w,
            claims=np.where(self.shift != 0.0, self.target, -1),
        )
        lanes, _margin = decisions(traffic)
        for c in np.flatnonzero(lanes != traffic.lane):
            self.target[c] = lanes[c]
            self.d0[c] = self.y[c] - lanes[c] * w
            self.shift[c] = (lanes[c] - traffic.lane[c]) * w
            self.t0[c] = now


def lane_changing_rollout(scenario, policy, config):
    """reference_rollout with :class:`LaneChangingReference`."""
    return reference_rollout(scenario, policy, config, sim_class=LaneChangingReference)
