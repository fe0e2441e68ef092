"""Realism section: how far the simulated traffic drifts from the recorded log (ADE/FDE)."""

from __future__ import annotations

import plotly.colors
import plotly.graph_objects as go

from drivesim.report.blocks import Section, esc, layout, note, table
from drivesim.report.data import CampaignData
from drivesim.report.outcomes import LOG_HORIZON_COLUMNS


def realism_section(data: CampaignData) -> Section | None:
    """FDE and ADE against the log by horizon and family; None for campaigns without a log
    (synthetic and catalogue scenarios have none)."""
    out = data.outcomes
    if out is None or not out.realism:
        return None
    section = Section("Realism against the log", "realism")
    section.blocks.append(
        note(
            "Distance of each simulated agent that is not replayed (IDM traffic, the ego) from its "
            "recorded position: ADE averages it over the steps up to the horizon, FDE takes it at "
            "the horizon. A row counts at a horizon only where its run and its log reach it."
        )
    )
    section.blocks.append(_fde_by_horizon(out.realism))
    rows = []
    for r in out.realism:
        for h in LOG_HORIZON_COLUMNS:
            if f"n_{h}" in r:
                rows.append(
                    (
                        r["label"],
                        h,
                        r[f"n_{h}"],
                        r.get(f"ade_{h}"),
                        r.get(f"fde_{h}"),
                        r.get(f"fde_{h}_q50"),
                        r.get(f"fde_{h}_q95"),
                    )
                )
    section.blocks.append(
        table(
            ("family", "horizon", "results", "mean ADE m", "mean FDE m", "median FDE m", "95th pct FDE m"),
            rows,
            caption="Displacement from the log by family and horizon",
        )
    )
    return section


def _fde_by_horizon(realism: list[dict]) -> go.Figure:
    """Mean FDE (solid) and ADE (dotted) against the horizon, one colour per family."""
    fig = go.Figure()
    palette = plotly.colors.qualitative.Plotly
    for k, r in enumerate(realism):
        colour = palette[k % len(palette)]
        horizons = [h for h in LOG_HORIZON_COLUMNS if r.get(f"n_{h}")]
        seconds = [float(h.rstrip("s")) for h in horizons]
        label = esc(r["label"])
        fig.add_trace(
            go.Scatter(
                x=seconds,
                y=[r[f"fde_{h}"] for h in horizons],
                mode="lines+markers",
                line={"color": colour},
                name=f"{label} FDE",
                text=[f"{r[f'n_{h}']} results" for h in horizons],
            )
        )
        fig.add_trace(
            go.Scatter(
                x=seconds,
                y=[r[f"ade_{h}"] for h in horizons],
                mode="lines+markers",
                line={"dash": "dot", "color": colour},
                name=f"{label} ADE",
            )
        )
    return layout(fig, "Displacement from the log by horizon", x="horizon (s)", y="mean distance (m)")
