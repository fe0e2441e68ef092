"""A plain NumPy reference of the drivesim core model (per agent, step by step, float64).

It implements the documented model independently of drivesim.core: kinematic bicycle
(explicit Euler), projection on the agent's own route polyline, IDM with a leader found by
brute force over all agents, pure-pursuit lane keeping, the ego policies, the yield rule at
conflict zones, oriented-box collisions over all pairs, and the metrics of RolloutMetrics.
The sorted agent order (by (route group, position), see ``reference_order``; stable sort
once, then both odd-even passes every
``resort_every`` steps, also after the episode ended) is kept only
for what is defined on it: the MLP observation's neighbours. Metric definitions: min TTC
against vehicle leaders only (stop lines excluded), jerk from step 1 on, off-road and the
road-edge distance from the box corners, per-agent outcome counts, the ego's first
collision partner.

``margins`` collects, for every discrete decision, how far from its threshold it was, so a
test can reject a borderline scenario instead of blaming float32 rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from drivesim.core.policies import policy_of
from drivesim.core.types import CYCLIST, IDM_DEFAULTS, PEDESTRIAN

from .reference_boxes import box_corners, polygon_overlap, sat_separation  # noqa: F401
from .reference_order import bent_alone, route_groups
from .reference_road_users import kind_limits
from .reference_signals import ReferenceSignals

MIN_GAP = 0.01


# ----------------------------------------------------------------------------- IDM


def idm(v, gap, dv, v0, T, s0, a, b, delta):
    """dv/dt = a [1 - (v/v0)^delta - (s*/s)^2], s* = s0 + max(0, vT + v dv / (2 sqrt(ab)))."""
    s_star = s0 + max(0.0, v * T + v * dv / (2.0 * np.sqrt(a * b)))
    return a * (1.0 - (v / v0) ** delta - (s_star / gap) ** 2)


# ----------------------------------------------------------------------------- geometry


@dataclass
class Route:
    """One route polyline (P, 2), float64, with the core's segment conventions."""

    points: np.ndarray
    a: np.ndarray = field(init=False)
    u: np.ndarray = field(init=False)
    length: np.ndarray = field(init=False)
    s0: np.ndarray = field(init=False)
    real: np.ndarray = field(init=False)

    def __post_init__(self):
        pts = np.asarray(self.points, np.float64)
        self.a = pts[:-1]
        diff = pts[1:] - pts[:-1]
        self.length = np.hypot(diff[:, 0], diff[:, 1])
        self.real = self.length > 1e-6
        self.u = np.where(
            self.real[:, None], diff / np.where(self.real, self.length, 1.0)[:, None], [1.0, 0.0]
        )
        self.s0 = np.cumsum(self.length) - self.length
        self.last = int(np.max(np.where(self.real, np.arange(len(self.length)), 0)))

    def project(self, x, y):
        """(s, d, tx, ty): nearest point over real segments, open first/last segment."""
        best = None
        for k in range(len(self.length)):
            if not self.real[k]:
                continue
            p = np.array([x, y]) - self.a[k]
            along = p @ self.u[k]
            lo = -np.inf if k == 0 else 0.0
            hi = np.inf if k == self.last else self.length[k]
            along = min(max(along, lo), hi)
            e = p - along * self.u[k]
            dist2 = e @ e
            if best is None or dist2 < best[0]:
                d = -e[0] * self.u[k][1] + e[1] * self.u[k][0]
                best = (dist2, self.s0[k] + along, d, self.u[k][0], self.u[k][1])
        return best[1:]

    def point_at(self, s):
        """Point at arc length s; before the start: extend segment 0, past the end: the last."""
        if s < self.s0[0]:
            k = 0
        else:
            k = self.last
            for j in range(len(self.length)):
                if self.real[j] and self.s0[j] <= s < self.s0[j] + self.length[j]:
                    k = j
                    break
        return self.a[k] + (s - self.s0[k]) * self.u[k]


def edge_distance(x, y, road, margins=None):
    """Signed distance to the drivable area's edge: max over valid lanes of (width / 2 -
    distance to the lane's segments, clipped at both ends); > 0 inside."""
    best = np.inf
    for lane in range(len(road["widths"])):
        if not road["lane_valid"][lane]:
            continue
        pts = road["centers"][lane]
        for k in range(len(pts) - 1):
            seg = pts[k + 1] - pts[k]
            length = math.hypot(*seg)
            if length <= 1e-6:
                continue
            u = seg / length
            p = np.array([x, y]) - pts[k]
            along = min(max(p @ u, 0.0), length)
            e = p - along * u
            best = min(best, math.sqrt(e @ e) - 0.5 * road["widths"][lane])
    if margins is not None:
        margins.append(("on_road", abs(best)))
    return -best


def box_edge_distance(x, y, h, length, width, road, margins=None):
    """Smallest signed edge distance over the four corners of a box."""
    corners = box_corners(x, y, h, length, width)
    return min(edge_distance(cx, cy, road, margins) for cx, cy in corners)


# ----------------------------------------------------------------------------- rollout


@dataclass
class RefResult:
    """Reference metrics (dict of RolloutMetrics names) and trajectory arrays (S, N)."""

    metrics: dict
    x: np.ndarray
    y: np.ndarray
    heading: np.ndarray
    speed: np.ndarray
    valid: np.ndarray
    margins: list
    leader_rank_gap: int  # most sorted-order slots between an agent and its true leader


def _np(tree_leaf):
    return np.asarray(tree_leaf, np.float64)


class ReferenceSim:
    """Per-agent, step-by-step simulation of one host scenario (no log replay)."""

    def __init__(self, scenario, policy, config):
        if scenario.log is not None:
            raise NotImplementedError("the reference does not replay logs")
        self.cfg = config
        self.policy = policy
        ag = scenario.agents
        self.n = len(ag.x)
        self.x, self.y = _np(ag.x), _np(ag.y)
        self.h, self.v, self.acc = _np(ag.heading), _np(ag.speed), _np(ag.accel)
        self.length, self.width = _np(ag.length), _np(ag.width)
        self.valid = np.asarray(ag.valid, bool).copy()
        self.route_id = np.asarray(ag.route)
        self.kind = np.asarray(ag.kind)
        self.idm_p = {k: _np(getattr(scenario.idm, k)) for k in ("v0", "T", "s0", "a", "b", "delta")}
        self.stop_s = _np(scenario.stop_s)
        self.signals = ReferenceSignals(scenario.signal, self.n)
        road = scenario.road
        self.road = {
            "centers": _np(road.centers),
            "widths": _np(road.widths),
            "lane_valid": np.asarray(road.lane_valid, bool),
        }
        self.routes = [Route(self.road["centers"][r]) for r in self.route_id]
        self.lane_w = self.road["widths"][self.route_id]
        self.sort_axis = _np(road.sort_axis)
        self.conflict_xy, self.conflict_r = _np(road.conflict_xy), float(road.conflict_radius)
        self.ego = int(scenario.ego_index)
        self.episode_length = int(scenario.episode_length)
        self.scenario_valid = bool(scenario.valid)
        self.margins: list = []
        alone = bent_alone(self.road, self.route_id, self.valid, self.cfg)
        self.group = route_groups(self.road, alone=alone)[self.route_id].astype(float)
        self.group = np.where(self.valid, self.group, len(self.road["widths"]))
        self.order = np.lexsort((self._keys(), self.group))
        self.ego_s0 = self.routes[self.ego].project(self.x[self.ego], self.y[self.ego])[0]
        self.leader_rank_gap = 0
        self.ever_hit = np.zeros(self.n, bool)
        self.ever_off = np.zeros(self.n, bool)

    # -- helpers
    def _keys(self):
        key = self.x * self.sort_axis[0] + self.y * self.sort_axis[1]
        return np.where(self.valid, key, np.inf)

    def _odd_even(self, parity):
        key, group = self._keys()[self.order], self.group[self.order]
        for i in range(parity, self.n - 1, 2):
            if group[i] == group[i + 1] and (np.isfinite(key[i]) or np.isfinite(key[i + 1])):
                self.margins.append(("sort", abs(key[i] - key[i + 1])))
            if (group[i], key[i]) > (group[i + 1], key[i + 1]):
                self.order[[i, i + 1]] = self.order[[i + 1, i]]

    def _leader(self, i, proj):
        """Brute force over all agents: (gap, leader speed, found)."""
        s, d, tx, ty = proj[i]
        best = (np.inf, np.inf, 0.0, None)
        for j in range(self.n):
            if j == i or not self.valid[j]:
                continue
            rx, ry = self.x[j] - self.x[i], self.y[j] - self.y[i]
            ds = rx * tx + ry * ty
            lat = -rx * ty + ry * tx + d
            if ds > 0.0:
                self.margins.append(("leader_lat", abs(abs(lat) - 0.5 * self.lane_w[i])))
            if ds > 0.0 and abs(lat) < 0.5 * self.lane_w[i]:
                self.margins.append(("leader_ds", abs(ds)))
                if ds < best[0]:
                    if best[3] is not None:
                        self.margins.append(("leader_tie", best[0] - ds))
                    best = (ds, ds - 0.5 * (self.length[i] + self.length[j]), self.v[j], j)
        if best[3] is not None:
            rank = np.argsort(self.order)
            self.leader_rank_gap = max(self.leader_rank_gap, abs(int(rank[best[3]]) - int(rank[i])))
        return best[1], best[2], best[3] is not None

    def _busy(self):
        if self.conflict_r <= 0:
            return False
        busy = False
        for j in range(self.n):
            if not (self.valid[j] and np.isinf(self.stop_s[j])):
                continue
            c = self.conflict_xy - np.array([self.x[j], self.y[j]])
            dist = math.hypot(*c)
            ahead = c @ np.array([math.cos(self.h[j]), math.sin(self.h[j])]) + self.conflict_r
            reach = self.conflict_r + self.v[j] * self.cfg.yield_horizon_s + 2.0
            self.margins += [("busy_past", abs(ahead)), ("busy_near", abs(dist - reach))]
            busy = busy or (ahead > 0 and dist < reach)
        return busy

    def _ego_b(self):
        """The ego's comfortable deceleration for the amber rule: its IDM policy's b."""
        if policy_of(self.cfg).name == "idm":
            return float(np.asarray(self.policy.b))
        return self.idm_p["b"][self.ego]

    def _follow(self, v, gap, lead_v, p):
        if not np.isfinite(gap):
            return idm(v, np.inf, 0.0, **p)
        return idm(v, max(gap, MIN_GAP), v - lead_v, **p)

    def _steer(self, i, proj):
        look = max(self.cfg.min_lookahead, self.cfg.lookahead_time * self.v[i])
        tgt = self.routes[i].point_at(proj[i][0] + look)
        dx, dy = tgt[0] - self.x[i], tgt[1] - self.y[i]
        dist2 = max(dx * dx + dy * dy, 1e-6)
        lateral = -dx * math.sin(self.h[i]) + dy * math.cos(self.h[i])
        return math.atan(2.0 * self.cfg.wheelbase_ratio * self.length[i] * lateral / dist2)

    def _observation(self, proj, vehicle_leader):
        e = self.ego
        s, d, tx, ty = proj[e]
        c, sn = math.cos(self.h[e]), math.sin(self.h[e])
        feats = [
            self.v[e] / 30.0,
            d / 2.0,
            math.atan2(sn * tx - c * ty, c * tx + sn * ty),
            (s - self.ego_s0) / 100.0,
        ]
        gap, lead_v = vehicle_leader[0][e], vehicle_leader[1][e]
        if np.isfinite(gap):
            feats += [min(gap, 100.0) / 50.0, (lead_v - self.v[e]) / 30.0, 1.0]
        else:
            feats += [2.0, 0.0, 0.0]
        slot = int(np.argsort(self.order)[e])
        k_max = self.cfg.obs_neighbours
        for k in [k for k in range(-k_max, k_max + 1) if k != 0]:
            j = slot + k
            if 0 <= j < self.n and self.valid[self.order[j]]:
                a = self.order[j]
                dx, dy = self.x[a] - self.x[e], self.y[a] - self.y[e]
                feats += [
                    (dx * c + dy * sn) / 50.0,
                    (-dx * sn + dy * c) / 50.0,
                    (self.v[a] - self.v[e]) / 30.0,
                    1.0,
                ]
            else:
                feats += [0.0, 0.0, 0.0, 0.0]
        return np.array(feats)

    def _ego_action(self, t, proj, gap, lead_v, lane_steer, vehicle_leader):
        kind, e = policy_of(self.cfg).name, self.ego
        if kind == "idm":
            p = {k: float(np.asarray(getattr(self.policy, k))) for k in self.idm_p}
            return self._follow(self.v[e], gap[e], lead_v[e], p), lane_steer[e]
        if kind == "constant":
            return 0.0, lane_steer[e]
        if kind == "open_loop":
            actions = _np(self.policy.actions)
            return tuple(actions[min(t, len(actions) - 1)])
        h = self._observation(proj, vehicle_leader)
        weights = [_np(w) for w in self.policy.weights]
        for k, (w, b) in enumerate(zip(weights, self.policy.biases, strict=True)):
            h = h @ w + _np(b)
            if k < len(weights) - 1:
                h = np.tanh(h)
        u = np.tanh(h)
        correction_accel = u[0] * self.cfg.max_accel if u[0] >= 0 else -u[0] * self.cfg.min_accel
        # the learned acceleration corrects the ego's IDM follower (published defaults)
        accel = self._follow(self.v[e], gap[e], lead_v[e], dict(IDM_DEFAULTS)) + correction_accel
        tan_max = math.tan(self.cfg.max_steer)
        correction = math.tan(
            float(np.clip(u[1] * self.cfg.max_steer, -self.cfg.max_steer, self.cfg.max_steer))
        )
        lane = math.tan(float(np.clip(lane_steer[e], -self.cfg.max_steer, self.cfg.max_steer)))
        return accel, math.atan(float(np.clip(lane + correction, -tan_max, tan_max)))

    def _collisions(self):
        """All-pairs oriented-box overlaps: (agents involved (N,) bool, pair count)."""
        hit = np.zeros(self.n, bool)
        partners = [[] for _ in range(self.n)]
        pairs = 0
        corners = [
            box_corners(self.x[i], self.y[i], self.h[i], self.length[i], self.width[i]) for i in range(self.n)
        ]
        for i in range(self.n):
            for j in range(i + 1, self.n):
                if not (self.valid[i] and self.valid[j]):
                    continue
                sep = sat_separation(corners[i], corners[j])
                self.margins.append(("overlap", abs(sep)))
                if sep <= 0.0:
                    hit[i] = hit[j] = True
                    partners[i].append(j)
                    partners[j].append(i)
                    pairs += 1
        return hit, pairs, partners

    def _limits(self, i):
        return kind_limits(self.kind[i], self.cfg)

    # -- one step
    def step(self, t, m):
        cfg = self.cfg
        active = self.scenario_valid and t < self.episode_length
        proj = [self.routes[i].project(self.x[i], self.y[i]) for i in range(self.n)]
        gap = np.full(self.n, np.inf)
        lead_v = np.zeros(self.n)
        has_lead = np.zeros(self.n, bool)
        for i in range(self.n):
            if self.valid[i]:
                gap[i], lead_v[i], has_lead[i] = self._leader(i, proj)
        veh_gap, veh_v = gap.copy(), lead_v.copy()
        busy = self._busy()
        for i in range(self.n):
            stop_gap = self.stop_s[i] - proj[i][0] - 0.5 * self.length[i]
            if busy and np.isfinite(stop_gap):
                self.margins += [
                    ("stop_line", abs(stop_gap + 1.0)),
                    ("stop_vs_leader", abs(stop_gap - gap[i])),
                ]
            if busy and stop_gap > -1.0 and stop_gap < gap[i]:
                gap[i], lead_v[i], has_lead[i] = stop_gap, 0.0, True
            b = self._ego_b() if i == self.ego else self.idm_p["b"][i]
            brakes = (b, -cfg.min_accel)
            line_gap = self.signals.stop_gap(
                i, proj[i][0], self.length[i], self.v[i], brakes, t * cfg.dt, self.margins
            )
            if line_gap is not None and line_gap < gap[i]:
                self.margins.append(("signal_vs_leader", abs(line_gap - gap[i])))
                gap[i], lead_v[i], has_lead[i] = line_gap, 0.0, True
        accel = np.array(
            [
                self._follow(self.v[i], gap[i], lead_v[i], {k: p[i] for k, p in self.idm_p.items()})
                for i in range(self.n)
            ]
        )
        steer = np.array([self._steer(i, proj) for i in range(self.n)])
        ego_a, ego_s = self._ego_action(t, proj, gap, lead_v, steer, (veh_gap, veh_v))
        accel[self.ego], steer[self.ego] = ego_a, ego_s
        accel = np.array([np.clip(accel[i], *self._limits(i)[:2]) for i in range(self.n)])
        steer = np.clip(steer, -cfg.max_steer, cfg.max_steer)
        old_v, old_acc = self.v.copy(), self.acc.copy()
        e = self.ego
        front_before = proj[e][0] + 0.5 * self.length[e]
        if active:
            for i in range(self.n):
                if not self.valid[i]:
                    continue
                wheelbase = cfg.wheelbase_ratio * self.length[i]
                v = min(max(self.v[i] + accel[i] * cfg.dt, 0.0), self._limits(i)[2])
                travel = self.v[i] if cfg.position_update == "euler" else 0.5 * (self.v[i] + v)
                x = self.x[i] + travel * math.cos(self.h[i]) * cfg.dt
                y = self.y[i] + travel * math.sin(self.h[i]) * cfg.dt
                h = self.h[i] + travel * math.tan(steer[i]) / wheelbase * cfg.dt
                self.x[i], self.y[i], self.h[i], self.v[i] = x, y, h, v
                self.acc[i] = (v - old_v[i]) / cfg.dt
        if t % cfg.search.resort_every == 0:  # one odd-even pass, parities alternating
            self._odd_even((t // cfg.search.resort_every) % 2)
        if not active:
            return
        hit, pairs, partners = self._collisions()
        m["steps"] += 1
        if hit[e] and not m["ego_collided"]:
            m["ego_collided"], m["collision_step"] = True, t
            m["collided_with"] = min(partners[e])
            m["collided_with_kind"] = int(self.kind[m["collided_with"]])
        self.ever_hit |= hit
        m["agents_collided"] = int(np.sum(self.ever_hit))
        m["pedestrians_collided"] = int(np.sum(self.ever_hit & (self.kind == PEDESTRIAN)))
        m["cyclists_collided"] = int(np.sum(self.ever_hit & (self.kind == CYCLIST)))
        for i in range(self.n):
            if self.valid[i]:
                edge = box_edge_distance(
                    self.x[i], self.y[i], self.h[i], self.length[i], self.width[i], self.road, self.margins
                )
                self.ever_off[i] |= edge < 0.0
                if i == e:
                    m["min_road_edge_distance_m"] = min(m["min_road_edge_distance_m"], edge)
                    m["offroad"] = m["offroad"] or edge < 0.0
        m["agents_offroad"] = int(np.sum(self.ever_off))
        m["collision_pairs"] = max(m["collision_pairs"], pairs)
        s_after = self.routes[e].project(self.x[e], self.y[e])[0]
        m["progress_m"] = s_after - self.ego_s0
        ran = self.signals.ran_red(e, front_before, s_after + 0.5 * self.length[e], t * cfg.dt, self.margins)
        m["red_light_violation"] = m["red_light_violation"] or ran
        closing = old_v[e] - veh_v[e]
        if np.isfinite(veh_gap[e]) and closing > 0:
            m["min_ttc_s"] = min(m["min_ttc_s"], max(veh_gap[e], 0.0) / closing)
        if t >= 1:
            m["max_jerk"] = max(m["max_jerk"], abs(self.acc[e] - old_acc[e]) / cfg.dt)
        finite = np.isfinite(self.x) & np.isfinite(self.y) & np.isfinite(self.h) & np.isfinite(self.v)
        m["has_nan"] = m["has_nan"] or bool(np.any(self.valid & ~finite))


def reference_rollout(scenario, policy, config, sim_class=None) -> RefResult:
    """Run ``config.num_steps`` steps of one host scenario; see :class:`ReferenceSim`
    (``sim_class``: a subclass of it, e.g. with lane changes)."""
    sim = (sim_class or ReferenceSim)(scenario, policy, config)
    m = dict(
        ego_collided=False,
        collision_step=-1,
        collision_pairs=0,
        offroad=False,
        progress_m=0.0,
        min_ttc_s=np.inf,
        max_jerk=0.0,
        steps=0,
        has_nan=False,
        min_road_edge_distance_m=np.inf,
        collided_with=-1,
        agents_collided=0,
        agents_offroad=0,
        collided_with_kind=-1,
        pedestrians_collided=0,
        cyclists_collided=0,
        red_light_violation=False,
    )
    traj = {k: [] for k in ("x", "y", "heading", "speed", "valid")}
    for t in range(config.num_steps):
        sim.step(t, m)
        for name, values in (
            ("x", sim.x),
            ("y", sim.y),
            ("heading", sim.h),
            ("speed", sim.v),
            ("valid", sim.valid),
        ):
            traj[name].append(values.copy())
    m["log_div_mean"] = m["log_div_final"] = np.nan
    return RefResult(
        metrics=m,
        margins=sim.margins,
        leader_rank_gap=sim.leader_rank_gap,
        **{k: np.stack(v) for k, v in traj.items()},
    )
