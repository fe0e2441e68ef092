"""Per-scenario metrics accumulated in the scan carry (no trajectory kept)."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.types import Array, RolloutMetrics, pytree_dataclass

# Horizons [s] of the displacement errors against the log (RolloutMetrics ade_*/fde_*).
LOG_HORIZONS_S = (1.0, 3.0, 8.0)


def horizon_steps(dt: float) -> tuple[int, ...]:
    """The step after which each of LOG_HORIZONS_S is reached (step t ends at (t + 1) dt)."""
    return tuple(max(1, round(h / dt)) for h in LOG_HORIZONS_S)


@pytree_dataclass
class StepInfo:
    """What one step observed about the scenario; every field () per scenario.

    active: the step was simulated (scenario valid and t < episode length).
    ego_collided, offroad: ego state after the step (offroad: a box corner outside the
    drivable area). collision_pairs: overlapping pairs. ego_progress: ego arc length minus
    its start [m]. ego_ttc: time-to-collision with the ego's vehicle leader before the
    step [s]. ego_jerk: |da/dt| of the ego [m/s^3]. has_nan: a valid agent's state is not
    finite. div_sum, div_count: distance to the log summed over non-replayed logged agents
    and their count. overflow: the window search was not proven exact this step.
    ego_edge: signed distance of the ego's worst corner to the road edge [m].
    collided_with: id of the agent the ego overlaps (-1: none). agents_collided,
    agents_offroad: agents that collided / had a corner off-road so far.
    red_light: the ego's front bumper crossed its signal stop line on red this step.
    """

    active: Array
    ego_collided: Array
    offroad: Array
    collision_pairs: Array
    ego_progress: Array
    ego_ttc: Array
    ego_jerk: Array
    has_nan: Array
    div_sum: Array
    div_count: Array
    overflow: Array
    ego_edge: Array
    collided_with: Array
    agents_collided: Array
    agents_offroad: Array
    red_light: Array


@pytree_dataclass
class MetricsState:
    """Running metrics of one scenario; fields () (see RolloutMetrics)."""

    ego_collided: Array
    collision_step: Array
    collision_pairs: Array
    offroad: Array
    progress_m: Array
    min_ttc_s: Array
    max_jerk: Array
    steps: Array
    has_nan: Array
    div_sum: Array
    div_count: Array
    div_final: Array
    overflow: Array
    min_edge: Array
    collided_with: Array
    agents_collided: Array
    agents_offroad: Array
    red_light_violation: Array
    # one () array per LOG_HORIZONS_S (none for a scenario without a log): distance to the
    # log summed over the steps up to the horizon, their count, and the mean distance at the
    # horizon's step (NaN: not reached)
    horizon_sum: tuple[Array, ...]
    horizon_count: tuple[Array, ...]
    horizon_final: tuple[Array, ...]


def init_metrics(logged: bool = True) -> MetricsState:
    """Metrics before the first step; ``logged``: the scenario has a log (else the program
    carries no displacement horizons)."""
    f32 = jnp.float32
    horizons = LOG_HORIZONS_S if logged else ()
    return MetricsState(
        ego_collided=jnp.zeros((), bool),
        collision_step=jnp.full((), -1, jnp.int32),
        collision_pairs=jnp.zeros((), jnp.int32),
        offroad=jnp.zeros((), bool),
        progress_m=jnp.zeros((), f32),
        min_ttc_s=jnp.full((), jnp.inf, f32),
        max_jerk=jnp.zeros((), f32),
        steps=jnp.zeros((), jnp.int32),
        has_nan=jnp.zeros((), bool),
        div_sum=jnp.zeros((), f32),
        div_count=jnp.zeros((), f32),
        div_final=jnp.full((), jnp.nan, f32),
        overflow=jnp.zeros((), bool),
        min_edge=jnp.full((), jnp.inf, f32),
        collided_with=jnp.full((), -1, jnp.int32),
        agents_collided=jnp.zeros((), jnp.int32),
        agents_offroad=jnp.zeros((), jnp.int32),
        red_light_violation=jnp.zeros((), bool),
        horizon_sum=tuple(jnp.zeros((), f32) for _ in horizons),
        horizon_count=tuple(jnp.zeros((), f32) for _ in horizons),
        horizon_final=tuple(jnp.full((), jnp.nan, f32) for _ in horizons),
    )


def update_metrics(m: MetricsState, info: StepInfo, t: Array, horizons: tuple[int, ...]) -> MetricsState:
    """Fold step ``t`` into the running metrics; a step with active=False changes nothing.
    Jerk is measured from step 1 (step 0's jump from the scenario's initial acceleration
    says nothing about driving). ``horizons``: horizon_steps(dt), the steps after which
    each log horizon is reached."""
    on = info.active
    first_hit = on & info.ego_collided & ~m.ego_collided
    logged = on & (info.div_count > 0)
    step_mean = info.div_sum / jnp.maximum(info.div_count, 1.0)
    final = jnp.where(info.div_count > 0, step_mean, m.div_final)
    horizons = horizons[: len(m.horizon_sum)]  # none without a log
    within = [on & (t + 1 <= h) for h in horizons]
    at = [logged & (t + 1 == h) for h in horizons]
    return MetricsState(
        ego_collided=m.ego_collided | (on & info.ego_collided),
        collision_step=jnp.where(first_hit, t.astype(jnp.int32), m.collision_step),
        collision_pairs=jnp.where(
            on, jnp.maximum(m.collision_pairs, info.collision_pairs), m.collision_pairs
        ),
        offroad=m.offroad | (on & info.offroad),
        progress_m=jnp.where(on, info.ego_progress, m.progress_m),
        min_ttc_s=jnp.where(on, jnp.minimum(m.min_ttc_s, info.ego_ttc), m.min_ttc_s),
        max_jerk=jnp.where(on & (t >= 1), jnp.maximum(m.max_jerk, info.ego_jerk), m.max_jerk),
        steps=m.steps + on.astype(jnp.int32),
        has_nan=m.has_nan | (on & info.has_nan),
        div_sum=m.div_sum + jnp.where(on, info.div_sum, 0.0),
        div_count=m.div_count + jnp.where(on, info.div_count, 0.0),
        div_final=jnp.where(on, final, m.div_final),
        overflow=m.overflow | (on & info.overflow),
        min_edge=jnp.where(on, jnp.minimum(m.min_edge, info.ego_edge), m.min_edge),
        collided_with=jnp.where(first_hit, info.collided_with, m.collided_with),
        agents_collided=jnp.where(on, info.agents_collided, m.agents_collided).astype(jnp.int32),
        agents_offroad=jnp.where(on, info.agents_offroad, m.agents_offroad).astype(jnp.int32),
        red_light_violation=m.red_light_violation | (on & info.red_light),
        horizon_sum=tuple(
            s + jnp.where(w, info.div_sum, 0.0) for s, w in zip(m.horizon_sum, within, strict=True)
        ),
        horizon_count=tuple(
            c + jnp.where(w, info.div_count, 0.0) for c, w in zip(m.horizon_count, within, strict=True)
        ),
        horizon_final=tuple(jnp.where(a, step_mean, f) for f, a in zip(m.horizon_final, at, strict=True)),
    )


def finalize_metrics(m: MetricsState, has_log: bool, by_kind: dict[str, Array]) -> RolloutMetrics:
    """Turn running metrics into RolloutMetrics (log divergences NaN without a log);
    ``by_kind``: the per-type fields (drivesim.core.road_users.kind_metrics)."""
    nan = jnp.full((), jnp.nan, jnp.float32)
    mean = jnp.where(m.div_count > 0, m.div_sum / jnp.maximum(m.div_count, 1.0), nan)
    fde = list(m.horizon_final) if has_log else [nan for _ in LOG_HORIZONS_S]
    ade = (
        [
            jnp.where(jnp.isnan(f), nan, s / jnp.maximum(c, 1.0))
            for f, s, c in zip(fde, m.horizon_sum, m.horizon_count, strict=True)
        ]
        if has_log
        else fde
    )
    return RolloutMetrics(
        ego_collided=m.ego_collided,
        collision_step=m.collision_step,
        collision_pairs=m.collision_pairs,
        offroad=m.offroad,
        progress_m=m.progress_m,
        min_ttc_s=m.min_ttc_s,
        max_jerk=m.max_jerk,
        steps=m.steps,
        has_nan=m.has_nan,
        log_div_mean=mean if has_log else nan,
        log_div_final=m.div_final if has_log else nan,
        window_overflow=m.overflow,
        min_road_edge_distance_m=m.min_edge,
        collided_with=m.collided_with,
        agents_collided=m.agents_collided,
        agents_offroad=m.agents_offroad,
        **by_kind,
        red_light_violation=m.red_light_violation,
        **{f"ade_{h:g}s": v for h, v in zip(LOG_HORIZONS_S, ade, strict=True)},
        **{f"fde_{h:g}s": v for h, v in zip(LOG_HORIZONS_S, fde, strict=True)},
    )
