"""Shared pieces of the on-device synthetic families (pure JAX, importable inside jit).

A scenario is a function of (campaign seed, family, scenario id) only: its key is
``fold_in(key(seed), id)`` salted by the family and every quantity has its own stream (a row
or entry of :class:`Draws`), so a scenario does not depend on the batch, device, chunk or process
that generates it. Shapes are static: ``N`` agent slots (the size class), ``LANES`` lane slots
and ``POINTS`` points per lane; the real counts are traced and the rest is padding with the
fills of ``drivesim.scenarios.batching`` (so slicing a generated scenario to its real agents and
lanes and padding it again on the host gives back the same arrays).

Arc positions are rounded to ``QUANTUM`` metres before they are summed, so every sum is exact in
float32 and its value does not depend on the order XLA adds in.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core.materialize import decided_once
from drivesim.core.signals import NO_SIGNAL
from drivesim.core.types import IDM_DEFAULTS, AgentState, IDMParams, RoadMap, Scenario, SignalPlan

LANES = 8  # lane slots: the smallest lane class of drivesim.scenarios.batching
POINTS = 2  # points per lane slot: the smallest point class (straight lanes need no more)
QUANTUM = 1.0 / 64.0  # [m] arc positions are multiples of this (exact float32 sums)
PASSED = -1.0e6  # stop_s of agents whose route never meets the conflict zone
MAX_ACCEL, MIN_ACCEL = 4.0, -9.0  # [m/s^2] the engine's default acceleration limits
SPEED_CAP = 0.9  # initial speed <= SPEED_CAP * v0 (IDM equilibrium gaps stay finite)
F32 = jnp.float32


@dataclass(frozen=True)
class FamilyConfig:
    """Options of a synthetic family (hashable: a static argument of the generators).

    num_agents: fixed agent count, or None to draw it in [min_agents, max_agents].
    steps: episode length in steps (ragged_length draws it in [steps/2, steps]).
    seed: the campaign seed (the generators take it as a traced argument; the field is the
        default the host helpers pass).
    signals: families that support it (intersection) get fixed-time traffic signals
        (drivesim.scenarios.signal_timing) instead of their priority rule; others ignore it.
    pedestrians: the intersection gets pedestrians crossing its legs at crosswalks
        (drivesim.scenarios.families.crosswalks; 8 more route slots); intersection_turns
        refuses it, highway and merge ignore it.
    """

    num_agents: int | None = None
    min_agents: int = 4
    max_agents: int = 128
    steps: int = 80
    ragged_length: bool = False
    seed: int = 0
    signals: bool = False
    pedestrians: bool = False

    def static(self) -> FamilyConfig:
        """This config without its seed (one compiled generator serves every seed)."""
        return dataclasses.replace(self, seed=0)


def family_salt(family: str) -> int:
    """A family's 31-bit stream salt (the CRC32 of its name)."""
    return zlib.crc32(family.encode()) & 0x7FFFFFFF


def scenario_key(seed, family: str, scenario_id):
    """The key of scenario ``scenario_id`` of ``family`` in campaign ``seed`` (traced ints):
    ``fold_in(key(seed), id)`` with the family salt folded into the key's first word (one
    threefry call: each one costs about a second of XLA:CPU compile time)."""
    key = jax.random.fold_in(
        jax.random.key(jnp.asarray(seed, jnp.uint32)), jnp.asarray(scenario_id, jnp.uint32)
    )
    data = jax.random.key_data(key)
    salted = data.at[0].set(mix32(data[0] ^ jnp.uint32(family_salt(family))))
    return jax.random.wrap_key_data(salted)


def mix32(x):
    """lowbias32 integer hash (C. Wellons) of uint32 x; uint32, same bits on every backend."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def key_words(key):
    """The two uint32 words of a threefry key."""
    data = jax.random.key_data(key)
    return data[..., 0], data[..., 1]


def hashed_uniform(key, counter):
    """Uniform float32 in [0, 1) (exact multiples of 2^-24) at uint32 ``counter`` (any shape)
    of ``key``: a counter-based hash of the key's words."""
    k0, k1 = key_words(key)
    h = mix32(mix32(jnp.asarray(counter, jnp.uint32) ^ k0) + k1)
    return (h >> 8).astype(F32) * F32(2.0**-24)


class Draws:
    """Every random number of one scenario from a counter-based hash of its threefry key
    (threefry itself is used for the key only: it compiles slowly on XLA:CPU, seconds per
    call). ``ROWS`` rows of per-agent uniforms (size,) and ``SCALARS`` scalar uniforms; row /
    scalar ``stream`` k is a fixed quantity of the family, and agent slot i's draws do not
    depend on the size class."""

    ROWS = 24
    SCALARS = 24
    STRIDE = 1024  # counters of row k: k * STRIDE + slot

    def __init__(self, key, size: int):
        self.size = size
        rows = jnp.arange(self.ROWS, dtype=jnp.uint32)[:, None] * self.STRIDE + jnp.arange(
            size, dtype=jnp.uint32
        )
        scalars = (self.ROWS + 1) * self.STRIDE + jnp.arange(self.SCALARS, dtype=jnp.uint32)
        # hashed once and stored (core.materialize): XLA would copy the whole hash into
        # each of the tens of fusions that read a draw, a longer compile for the same bits
        self.rows, self.scalars = decided_once((hashed_uniform(key, rows), hashed_uniform(key, scalars)))

    def u(self, stream: int, lo, hi):
        """Per-agent uniforms (size,) in [lo, hi)."""
        return lo + (hi - lo) * self.rows[stream]

    def lane(self, stream: int, lo, hi):
        """Per-lane-slot uniforms (LANES,) in [lo, hi) (size >= LANES)."""
        return lo + (hi - lo) * self.rows[stream, :LANES]

    def s(self, stream: int, lo, hi):
        """A scalar uniform in [lo, hi)."""
        return lo + (hi - lo) * self.scalars[stream]

    def i(self, stream: int, lo, hi):
        """Per-agent integers (size,) in [lo, hi) (traced bounds allowed), int32."""
        return _to_int(self.rows[stream], lo, hi)

    def si(self, stream: int, lo, hi):
        """A scalar integer in [lo, hi), int32."""
        return _to_int(self.scalars[stream], lo, hi)

    def normal(self, stream: int, scale: float):
        """Per-agent normal draws (size,) with standard deviation ``scale``."""
        x = jnp.clip(2.0 * self.rows[stream] - 1.0, -0.99999994, 0.99999994)
        return scale * jnp.sqrt(F32(2.0)) * jax.scipy.special.erfinv(x)


COUNT_COUNTER = 0xFFFFFFF0  # the agent count's counter (outside every Draws counter)


def _to_int(u, lo, hi):
    lo = jnp.asarray(lo, jnp.int32)
    span = (jnp.asarray(hi, jnp.int32) - lo).astype(F32)
    return lo + jnp.minimum(jnp.floor(u * span).astype(jnp.int32), jnp.asarray(hi, jnp.int32) - lo - 1)


def log_thresholds(lo: int, hi: int) -> np.ndarray:
    """uint32 thresholds (hi - lo,) of a log-uniform integer in [lo, hi]: P(n <= k) =
    log((k + 1) / lo) / log((hi + 1) / lo), scaled to 2^32 (host NumPy, static)."""
    k = np.arange(lo, hi, dtype=np.float64)
    cdf = np.log((k + 1) / lo) / np.log((hi + 1) / lo)
    return np.minimum(np.floor(cdf * 2.0**32), 2.0**32 - 1).astype(np.uint32)


def agent_count(key, cfg: FamilyConfig, log_uniform: bool):
    """The scenario's real agent count () int32, from integer operations only (so it is the
    same on every backend, and a host-side draw groups ids by size class exactly)."""
    if cfg.num_agents is not None:
        return jnp.asarray(cfg.num_agents, jnp.int32)
    k0, k1 = key_words(key)
    bits = mix32(mix32(jnp.uint32(COUNT_COUNTER) ^ k0) + k1)
    if log_uniform:
        thresholds = jnp.asarray(log_thresholds(cfg.min_agents, cfg.max_agents))
        return cfg.min_agents + jnp.sum(bits >= thresholds).astype(jnp.int32)
    span = jnp.uint32(cfg.max_agents - cfg.min_agents + 1)
    return cfg.min_agents + (bits % span).astype(jnp.int32)


def episode_length(d: Draws, cfg: FamilyConfig):
    """Steps to simulate () int32."""
    if not cfg.ragged_length:
        return jnp.asarray(cfg.steps, jnp.int32)
    return d.si(1, max(1, cfg.steps // 2), cfg.steps + 1)


def draw_idm(d: Draws) -> IDMParams:
    """Mixed traffic: IDM parameters spread around the published defaults (agent rows 0-4);
    fields (size,)."""
    return IDMParams(
        v0=d.u(0, 25.0, 38.0),
        T=d.u(1, 1.0, 2.2),
        s0=d.u(2, 1.5, 3.0),
        a=d.u(3, 0.6, 1.6),
        b=d.u(4, 1.4, 2.5),
        delta=jnp.full((d.size,), 4.0, F32),
    )


def draw_sizes(d: Draws):
    """Box lengths and widths (size,): cars, with about 10% trucks (agent rows 5-7)."""
    truck = d.u(5, 0.0, 1.0) < 0.1
    size = d.u(6, 0.0, 1.0)
    length = jnp.where(truck, 8.0 + 4.0 * size, 4.0 + 1.2 * size)
    width = jnp.where(truck, 2.3 + 0.3 * d.rows[7], 1.7 + 0.3 * d.rows[7])
    return length, width


def cap_speed(speed, idm: IDMParams) -> IDMParams:
    """IDM parameters whose desired speed v0 is at least speed / SPEED_CAP (drivers start
    below their desired speed, so equilibrium gaps are finite); fields (n,)."""
    return IDMParams(
        v0=jnp.maximum(idm.v0, speed / SPEED_CAP), T=idm.T, s0=idm.s0, a=idm.a, b=idm.b, delta=idm.delta
    )


RUNWAY_SPEED = 40.0  # m/s: roads run this far past their front agent per second of episode


def runway(cfg: FamilyConfig) -> float:
    """Road [m] a generated scenario keeps ahead of its front agent: what an agent drives in
    ``cfg.steps`` steps of 0.1 s (SimConfig.dt's default) at RUNWAY_SPEED, plus 100 m."""
    return RUNWAY_SPEED * 0.1 * cfg.steps + 100.0


def quantize(s):
    """Arc lengths rounded to multiples of QUANTUM [m]."""
    return jnp.round(s / QUANTUM) * QUANTUM


def equilibrium_gap(speed, leader_speed, idm: IDMParams):
    """Smallest bumper gap [m] at which IDM does not brake: s*(v, dv) / sqrt(1 - (v/v0)^delta),
    with s* = s0 + vT + max(0, v dv / (2 sqrt(ab))) (the clamped desired gap); (n,)."""
    approach = speed * (speed - leader_speed) / (2.0 * jnp.sqrt(idm.a * idm.b))
    s_star = idm.s0 + speed * idm.T + jnp.maximum(approach, 0.0)
    free = 1.0 - jnp.power(speed / idm.v0, idm.delta)
    return s_star / jnp.sqrt(jnp.maximum(free, 1e-3))


def idm_accel(speed, gap, leader_speed, idm: IDMParams):
    """IDM acceleration with the clamped desired gap, clipped to the engine's limits; gap
    +inf for free road; (n,)."""
    approach = jnp.where(jnp.isfinite(gap), speed - leader_speed, 0.0)
    s_star = idm.s0 + speed * idm.T + jnp.maximum(speed * approach / (2.0 * jnp.sqrt(idm.a * idm.b)), 0.0)
    interaction = jnp.where(jnp.isfinite(gap), jnp.square(s_star / jnp.maximum(gap, 0.01)), 0.0)
    accel = idm.a * (1.0 - jnp.power(speed / idm.v0, idm.delta) - interaction)
    return jnp.clip(accel, MIN_ACCEL, MAX_ACCEL)


@dataclass(frozen=True)
class Queue:
    """Agents queued in groups (lanes), rearmost first: ``offset`` (N,) arc position relative
    to the group's rearmost agent [m] (quantized), ``head`` (N,) bool (the group's front agent),
    ``lead_gap`` (N,) bumper gap to the agent ahead in the group (+inf at the head) and
    ``lead_speed`` (N,) its speed."""

    offset: jax.Array
    head: jax.Array
    lead_gap: jax.Array
    lead_speed: jax.Array

    def of_head(self, group, values):
        """``values`` (N,) of each agent's group head (N,) (0 where the group has none)."""
        same = (group[:, None] == group[None, :]) & self.head[None, :]
        return jnp.sum(jnp.where(same, values[None, :], 0.0), axis=1)

    def from_head(self, group):
        """Arc offset (N,) <= 0 of each agent behind its group head [m] (exact)."""
        return self.offset - self.of_head(group, self.offset)


def queue(d: Draws, stream: int, group, valid, length, speed, idm: IDMParams, margin=(1.0, 1.4)) -> Queue:
    """Queue the valid agents of each group in slot order (a later slot drives ahead), each
    follower at ``U(margin)`` times its IDM equilibrium gap behind its leader; all (N,)."""
    n = group.shape[0]
    slot = jnp.arange(n)
    same = (group[:, None] == group[None, :]) & valid[:, None] & valid[None, :]
    ahead = same & (slot[None, :] > slot[:, None])  # [i, j]: j is ahead of i in i's group
    # leader of i: the nearest slot ahead in the group; follower of j: the nearest behind
    leader = jnp.argmin(jnp.where(ahead, slot[None, :], n), axis=1)
    has_leader = jnp.any(ahead, axis=1)
    lead_speed = jnp.where(has_leader, speed[leader], speed)
    want = equilibrium_gap(speed, lead_speed, idm) * d.u(stream, *margin)
    # step from follower i to its leader: half lengths + gap, quantized; credited to the leader
    step = quantize(0.5 * (length + length[leader]) + want)
    behind = same & (slot[None, :] < slot[:, None])  # [j, i]: i is behind j in j's group
    follower = jnp.argmax(jnp.where(behind, slot[None, :], -1), axis=1)
    has_follower = jnp.any(behind, axis=1)
    gained = jnp.where(has_follower, step[follower], 0.0)  # (N,) step that put j ahead
    upto = same & (slot[None, :] <= slot[:, None])  # [j, k]: k at or behind j
    offset = jnp.sum(jnp.where(upto, gained[None, :], 0.0), axis=1)
    gap = jnp.where(has_leader, step - 0.5 * (length + length[leader]), jnp.inf)
    return Queue(offset=offset, head=valid & ~has_leader, lead_gap=gap, lead_speed=lead_speed)


def pad_agents(agents: AgentState, idm: IDMParams, stop_s, valid):
    """Agent fields with padding slots set to batching's fills (AGENT_FILL, IDM defaults)."""
    fill = dict(x=0.0, y=0.0, heading=0.0, speed=0.0, accel=0.0, length=1.0, width=1.0)
    fields = {k: jnp.where(valid, getattr(agents, k), F32(v)) for k, v in fill.items()}
    fields["route"] = jnp.where(valid, agents.route, 0).astype(jnp.int32)
    fields["kind"] = jnp.where(valid, agents.kind, 0).astype(jnp.int32)
    padded = AgentState(**fields, valid=valid)
    idm = IDMParams(**{k: jnp.where(valid, getattr(idm, k), F32(IDM_DEFAULTS[k])) for k in IDM_DEFAULTS})
    return padded, idm, jnp.where(valid, stop_s, jnp.inf).astype(F32)


def edge_pad(lines, points: int = POINTS):
    """(L, P, 2) polylines -> (L, points, 2) by repeating each one's last point."""
    extra = points - lines.shape[1]
    if extra <= 0:
        return lines
    return jnp.concatenate([lines, jnp.repeat(lines[:, -1:], extra, axis=1)], axis=1)


def road(centers, widths, lane_valid, sort_axis, conflict_xy, conflict_radius) -> RoadMap:
    """A RoadMap with padding lane slots zeroed (centers (LANES, POINTS, 2), widths (LANES,))."""
    return RoadMap(
        centers=jnp.where(lane_valid[:, None, None], centers, 0.0).astype(F32),
        widths=jnp.where(lane_valid, widths, 0.0).astype(F32),
        lane_valid=lane_valid,
        sort_axis=sort_axis.astype(F32),
        conflict_xy=conflict_xy.astype(F32),
        conflict_radius=jnp.asarray(conflict_radius, F32),
    )


def rotate(xy, angle):
    """Points (..., 2) rotated by ``angle`` [rad] about the origin."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    return jnp.stack([xy[..., 0] * c - xy[..., 1] * s, xy[..., 0] * s + xy[..., 1] * c], axis=-1)


def scenario(
    d: Draws, cfg: FamilyConfig, *, agents, idm, stop_s, road_map, n, scenario_id, signal=None
) -> Scenario:
    """Assemble a padded Scenario: ego drawn among the real agents, episode length drawn;
    ``signal``: an optional SignalPlan (padding slots get no signal)."""
    valid_slot = jnp.arange(agents.x.shape[0]) < n
    agents, idm, stop_s = pad_agents(agents, idm, stop_s, valid_slot)
    if signal is not None:
        signal = SignalPlan(
            **{k: jnp.where(valid_slot, getattr(signal, k), F32(v)).astype(F32) for k, v in NO_SIGNAL.items()}
        )
    ego = jnp.floor(d.s(0, 0.0, 1.0) * n).astype(jnp.int32)
    return Scenario(
        agents=agents,
        idm=idm,
        stop_s=stop_s,
        road=road_map,
        ego_index=jnp.minimum(ego, n - 1),
        episode_length=episode_length(d, cfg),
        scenario_id=jnp.asarray(scenario_id, jnp.int32),
        valid=jnp.asarray(scenario_id, jnp.int32) >= 0,
        log=None,
        signal=signal,
    )
