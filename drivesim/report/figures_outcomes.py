"""Outcomes section: rates and metric distributions by family and policy, sweeps, failures."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from drivesim.report.blocks import Html, Section, esc, layout, note, table
from drivesim.report.data import CampaignData
from drivesim.report.outcomes import Outcomes

METRIC_LABELS = {
    "progress_m": "progress (m)",
    "min_ttc_s": "min time-to-collision (s)",
    "max_jerk": "max jerk (m/s³)",
    "min_road_edge_distance_m": "min road-edge distance (m, < 0 off-road)",
    "log_div_final": "final log divergence (m)",
}
HEATMAP_COLUMNS = (
    ("collision_rate", "collision rate", True),
    ("offroad_rate", "off-road rate", True),
    ("nan_rate", "NaN rate", True),
    ("progress_m", "progress (m)", False),
    ("min_ttc_s", "median min TTC (s)", False),
    ("max_jerk", "max jerk", True),
    ("agents_collided", "agents collided", True),
)


def outcomes_section(data: CampaignData) -> Section:
    """Collision / off-road rates, metric distributions, the policy × metric heatmap."""
    section = Section(
        "Campaign outcomes",
        "outcomes",
        empty_note="no data yet: run `drivesim run` to fill this (results/*.parquet)",
    )
    out = data.outcomes
    if out is None or out.total == 0:
        return section
    pad = (
        f" Padding efficiency {out.padding_efficiency:.0%} (real agents / agent slots)."
        if out.padding_efficiency is not None
        else ""
    )
    section.blocks.append(note(f"{out.total:,} results ({out.ok:,} ok, {out.failed:,} failed).{pad}"))
    if out.by_family:
        section.blocks.append(
            _rate_bars(out.by_family, "Collision and off-road rate by scenario family", "family")
        )
    if len(out.by_policy) > 1:
        section.blocks.append(_heatmap(out.by_policy, data.root))
    elif out.by_policy:
        section.blocks.append(_rate_bars(out.by_policy, "Collision and off-road rate by policy", "policy"))
    for dim in ("family", "policy"):
        fig = _distributions(out, dim)
        if fig is not None:
            section.blocks.append(fig)
    rows = [
        (
            r["label"],
            r["n"],
            r["ok"],
            r["failed"],
            _percent(r["collision_rate"]),
            _percent(r["offroad_rate"]),
            _percent(r["nan_rate"]),
            r["progress_m"],
            r["min_ttc_s"],
            r["max_jerk"],
            r.get("agents_collided"),
            r.get("agents_offroad"),
            r.get("pedestrians_collided"),
            r.get("cyclists_collided"),
            _percent(r.get("fallback_rate")),
            _percent(r.get("red_light_rate")),
        )
        for r in out.by_family
    ]
    if rows:
        section.blocks.append(
            table(
                (
                    "family",
                    "results",
                    "ok",
                    "failed",
                    "collision %",
                    "off-road %",
                    "NaN %",
                    "mean progress m",
                    "median min TTC s",
                    "mean max jerk",
                    "mean agents collided",
                    "mean agents off-road",
                    "pedestrians collided",
                    "cyclists collided",
                    "exact-fallback %",
                    "red-light violation %",
                ),
                rows,
                caption="By scenario family",
            )
        )
    return section


def _percent(rate) -> float | None:
    """A rate in [0, 1] as percent (the unit of the rate charts), None kept."""
    return None if rate is None else 100.0 * float(rate)


def failures_section(data: CampaignData) -> Section:
    """Failed scenarios with their reasons, failed batches from the ledger, loading warnings."""
    section = Section("Failures", "failures", empty_note="no failed scenarios or batches")
    out: Outcomes | None = data.outcomes
    if out is not None and out.failed:
        section.blocks.append(note(f"{out.failed:,} failed results; the most frequent reasons:"))
        section.blocks.append(table(("reason", "count"), out.failed_reasons))
        cols = [c for c in ("scenario_id", "family", "source", "name", "policy", "error") if c in out.columns]
        shown = f" (first {len(out.failed_rows)})" if len(out.failed_rows) < out.failed else ""
        section.blocks.append(
            table(
                cols, [[r.get(c) for c in cols] for r in out.failed_rows], caption=f"Failed scenarios{shown}"
            )
        )
    bad = [b for b in data.batches if b.get("status") == "failed"]
    if bad:
        section.blocks.append(
            table(
                ("batch", "attempts", "error"),
                [(b.get("batch_id"), b.get("attempts"), b.get("error")) for b in bad],
                caption="Failed batches (redone on --resume)",
            )
        )
    if data.warnings:
        items = "".join(f"<li>{esc(w)}</li>" for w in data.warnings)
        section.blocks.append(Html(f'<ul class="warnings">{items}</ul>'))
    return section


def _rate_bars(rows: list[dict], title: str, axis: str) -> go.Figure | Html:
    """Grouped bars of the collision and off-road rates [%]; a sentence instead when every
    rate is 0 (an empty chart with a -1..1% axis says less)."""
    if all(not r.get(k) for r in rows for k in ("collision_rate", "offroad_rate")):
        n = sum(int(r.get("ok") or 0) for r in rows)
        return note(f"{title}: no collision and no off-road in any {axis} ({n:,} ok results).")
    labels = [esc(r["label"]) for r in rows]
    fig = go.Figure()
    for key, name in (("collision_rate", "collision"), ("offroad_rate", "off-road")):
        values = [np.nan if r[key] is None else 100 * r[key] for r in rows]
        fig.add_bar(
            x=labels,
            y=values,
            name=name,
            customdata=[r["n"] for r in rows],
            hovertemplate="%{x}: %{y:.2f}% of %{customdata} results<extra></extra>",
        )
    fig.update_layout(barmode="group")
    return layout(fig, title, axis, "percent of ok results")


def _standard_errors(rows: list[dict], key: str) -> np.ndarray:
    """(R,) standard error of each row's value: binomial for rates, sd / sqrt(n) for means
    (x 1.25 for medians)."""
    n = np.array([max(float(r.get("ok") or r.get("n") or 0), 1.0) for r in rows])
    if key.endswith("_rate"):
        p = np.array([np.nan if r.get(key) is None else float(r[key]) for r in rows])
        return np.sqrt(np.clip(p * (1 - p), 0.25 / n, None) / n)  # floor: never exactly 0
    sd = np.array([np.nan if r.get(f"{key}_sd") is None else float(r[f"{key}_sd"]) for r in rows])
    return (1.25 if key == "min_ttc_s" else 1.0) * sd / np.sqrt(n)


def noise_scaled(values: np.ndarray, se: np.ndarray, worse_high: bool) -> np.ndarray:
    """(R,) colour in [0, 1]: how many standard errors each row is worse than the best row,
    0 within noise (|z| < 1.96), saturating at 6 standard errors; NaN where unknown."""
    v = np.where(worse_high, values, -values)
    if not np.isfinite(v).any():
        return np.full_like(values, np.nan)
    best = int(np.nanargmin(v))
    spread = np.sqrt(se**2 + se[best] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (v - v[best]) / spread
    z = np.where(np.isfinite(spread) & (spread > 0), z, np.where(v > v[best], 6.0, 0.0))
    out = np.where(z < 1.96, 0.0, np.clip(z / 6.0, 0.0, 1.0))
    return np.where(np.isfinite(values), out, np.nan)


def _heatmap(rows: list[dict], root) -> go.Figure:
    """Policy × metric heatmap; text the value, colour how far each row is worse than the best
    row of its column: 0 where the comparison's paired test (drivesim.report.compare, on the
    scenarios every policy shares) finds no difference (p >= 0.05), else the test's z up to
    6. Without per-scenario rows (a directory of shards only), standard errors instead."""
    cols = [c for c in HEATMAP_COLUMNS if any(r.get(c[0]) is not None for r in rows)]
    raw = np.array([[np.nan if r.get(k) is None else float(r[k]) for k, _, _ in cols] for r in rows])
    z = np.full_like(raw, np.nan)
    arms = _arms_of(rows, root)
    for j, (key, _, worse_high) in enumerate(cols):
        column = PAIRED_COLUMNS.get(key)
        if arms is not None and column is not None:
            z[:, j] = paired_scaled(raw[:, j], arms, column, worse_high)
        else:
            z[:, j] = noise_scaled(raw[:, j], _standard_errors(rows, key), worse_high)
    rate = [key.endswith("_rate") for key, _, _ in cols]
    text = [
        [
            ("n/a" if not np.isfinite(x) else (f"{100 * x:.3g}%" if r else f"{x:.3g}"))
            for x, r in zip(row, rate, strict=True)
        ]
        for row in raw
    ]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[label for _, label, _ in cols],
            y=[esc(r["label"]) for r in rows],
            text=text,
            texttemplate="%{text}",
            colorscale="RdYlGn_r",
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "worse than best (0: p ≥ 0.05, paired)"}},
        )
    )
    fig.update_yaxes(autorange="reversed")
    return layout(
        fig,
        "Policy × metric (sweep) · colour: worse than the best policy beyond noise",
        "",
        "policy",
        height=max(320, 40 + 28 * len(rows)),
    )


# heatmap column -> (result column, is a rate) for the paired test
PAIRED_COLUMNS = {
    "collision_rate": ("ego_collided", True),
    "offroad_rate": ("offroad", True),
    "nan_rate": ("has_nan", True),
    "progress_m": ("progress_m", False),
    "min_ttc_s": ("min_ttc_s", False),
    "max_jerk": ("max_jerk", False),
    "agents_collided": ("agents_collided", False),
}


def _arms_of(rows: list[dict], root) -> list | None:
    """The comparison's arms in the order of ``rows`` (labels ``NAME [ID]``), or None."""
    from drivesim.report.compare import load_arms

    try:
        extra = [c for c, _ in PAIRED_COLUMNS.values()]
        by_label = {f"{a.policy} [{a.policy_id}]": a for a in load_arms([root], extra=extra)}
        arms = [by_label[r["label"]] for r in rows]
    except Exception:  # noqa: BLE001 - a directory without the columns: standard errors instead
        return None
    return arms


def paired_scaled(values: np.ndarray, arms: list, column: tuple[str, bool], worse_high: bool) -> np.ndarray:
    """(R,) colour in [0, 1] of each row against the best row of ``values``: 0 where the
    paired test gives p >= 0.05 (or the row is not worse), else z(p) / 6 clipped at 1."""
    from scipy import stats

    from drivesim.report.compare import ALPHA, paired_p_values

    v = np.where(worse_high, values, -values)
    if not np.isfinite(v).any():
        return np.full_like(values, np.nan)
    best = int(np.nanargmin(v))
    p = np.array(paired_p_values(arms, column[0], column[1], best), float)
    z = np.where(np.isfinite(p), stats.norm.isf(np.clip(p, 1e-300, 1.0) / 2), 0.0)
    out = np.where((p < ALPHA) & (v > v[best]), np.clip(z / 6.0, 0.0, 1.0), 0.0)
    return np.where(np.isfinite(values), out, np.nan)


def _distributions(out: Outcomes, dim: str) -> go.Figure | None:
    """Box plots of each metric's quantiles (q05–q95 whiskers) by family or policy."""
    metrics = [m for (d, m) in out.quantiles if d == dim]
    groups = {r["label"] for m in metrics for r in out.quantiles[(dim, m)]}
    if not metrics or (dim == "policy" and len(groups) < 2):
        return None
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[METRIC_LABELS.get(m, m) for m in metrics])
    for j, metric in enumerate(metrics, start=1):
        rows = out.quantiles[(dim, metric)]
        fig.add_trace(
            go.Box(
                x=[esc(r["label"]) for r in rows],
                q1=[r["q25"] for r in rows],
                median=[r["q50"] for r in rows],
                q3=[r["q75"] for r in rows],
                lowerfence=[r["q05"] for r in rows],
                upperfence=[r["q95"] for r in rows],
                mean=[r["mean"] for r in rows],
                name=METRIC_LABELS.get(metric),
                showlegend=False,
            ),
            row=1,
            col=j,
        )
    return layout(fig, f"Metric distributions by {dim} (box: quartiles, whiskers: p5–p95)", height=380)
