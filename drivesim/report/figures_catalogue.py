"""Catalogue section: per family, collision rate and median min TTC over its two most swept
parameters (heatmaps, one panel per policy; a line chart with one swept parameter) and the
boundary cases, each linked to its viewer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from drivesim.report.blocks import Html, Section, esc, fmt, layout, note
from drivesim.report.catalogue import BINS, FamilyMap, load_catalogue
from drivesim.report.worst import viewer_link

MAX_PANELS = 6  # policies drawn per figure (the first by policy id)
PANEL_COLUMNS = 2
TEXT_CELLS = 400  # cells up to which a heatmap prints its values


@dataclass(frozen=True)
class Metric:
    """A drawn FamilyMap array: ``field``, its ``title``, colour ``scale``, fixed colour
    ``limits`` (values beyond take the end colour) and the colour bar's title ``bar``."""

    field: str
    title: str
    scale: str
    limits: tuple[float, float]
    bar: str


METRICS = (
    Metric("collision_rate", "collision rate", "Reds", (0.0, 1.0), "collision rate"),
    Metric("median_ttc", "median min TTC (s)", "RdYlGn", (0.0, 6.0), "median min TTC s (6: 6 or more)"),
)


def catalogue_section(data) -> Section | None:
    """The section, or None when the campaign has no catalogue results."""
    if data.outcomes is None or not data.outcomes.total:
        return None
    section = Section("Catalogue", "catalogue")
    try:
        maps = load_catalogue(data.root)
    except Exception as exc:  # noqa: BLE001 - the rest of the dashboard still renders
        section.blocks.append(note(f"catalogue maps unavailable: {type(exc).__name__}: {exc}"))
        return section
    if not maps:
        return None
    for fmap in maps:
        section.blocks.append(Html(f"<h3>{esc(fmap.family)}</h3>"))
        section.blocks.append(note(_describe(fmap)))
        if fmap.axes[0].distinct <= 1:
            continue  # one point: the outcomes section has its rates
        for metric in METRICS:
            if np.isfinite(getattr(fmap, metric.field)).any():
                draw = _heatmap if len(fmap.axes) == 2 else _lines
                section.blocks.append(draw(fmap, metric))
        section.blocks.extend(_boundary_blocks(data, fmap))
    return section


def _describe(fmap: FamilyMap) -> str:
    """One line: results, axes (binned or grid), pooled parameters, policies shown."""
    axes = [
        f"{a.name} ({a.distinct} values{f', {BINS} bins' if a.binned else ''}, {a.lo:g}..{a.hi:g})"
        for a in fmap.axes
        if a.distinct > 1
    ]
    text = f"{fmap.rows:,} ok results"
    text += f" over {' × '.join(axes)}." if axes else ", one parameter point."
    if fmap.pooled:
        text += f" Pooled over {', '.join(fmap.pooled)} (each cell: every result with its axis values)."
    if len(fmap.policies) > MAX_PANELS:
        text += f" The first {MAX_PANELS} of {len(fmap.policies)} policies are drawn."
    if fmap.refined is not None:
        text += (
            f" Refined near the boundary in {fmap.refined.rounds} rounds: {fmap.refined.points:,} more points"
            " (markers: × collided, ○ safe); the maps' cells are the base grid's."
        )
    return text


def _panels(fmap: FamilyMap):
    """(figure with one panel per drawn policy, [(row, col)] per panel)."""
    count = min(len(fmap.policies), MAX_PANELS)
    cols = min(count, PANEL_COLUMNS)
    rows = math.ceil(count / cols)
    titles = [esc(p) for p in fmap.policies[:count]] if len(fmap.policies) > 1 else None
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.12)
    return fig, [(k // cols + 1, k % cols + 1) for k in range(count)]


def _heatmap(fmap: FamilyMap, metric: Metric) -> go.Figure:
    """Heatmap of the metric's (P, Ly, Lx) values over the two axes, one panel per policy."""
    x_axis, y_axis = fmap.axes
    values = getattr(fmap, metric.field)
    fig, spots = _panels(fmap)
    show_text = values.shape[1] * values.shape[2] <= TEXT_CELLS
    for k, (row, col) in enumerate(spots):
        z = values[k]
        fig.add_trace(
            go.Heatmap(
                z=_json_ready(z),
                x=list(x_axis.levels),
                y=list(y_axis.levels),
                customdata=fmap.count[k],
                coloraxis="coloraxis",
                text=[[fmt(float(v)) if np.isfinite(v) else "" for v in line] for line in z]
                if show_text
                else None,
                texttemplate="%{text}" if show_text else None,
                hovertemplate=(
                    f"{esc(x_axis.name)}=%{{x:.4g}}, {esc(y_axis.name)}=%{{y:.4g}}: %{{z:.3g}}"
                    " (%{customdata} results)<extra></extra>"
                ),
            ),
            row=row,
            col=col,
        )
        if fmap.refined is not None and fmap.refined.y is not None:
            fig.add_trace(_refined_markers(fmap, k, fmap.refined.y[k]), row=row, col=col)
        fig.update_xaxes(title_text=_axis_title(x_axis), row=row, col=col)
        fig.update_yaxes(title_text=_axis_title(y_axis), row=row, col=col)
    low, high = metric.limits
    bar = {"title": {"text": esc(metric.bar)}}
    fig.update_layout(coloraxis={"colorscale": metric.scale, "cmin": low, "cmax": high, "colorbar": bar})
    height = 80 + 300 * math.ceil(len(spots) / PANEL_COLUMNS)
    return layout(fig, f"{fmap.family}: {metric.title} over {x_axis.name} × {y_axis.name}", height=height)


def _lines(fmap: FamilyMap, metric: Metric) -> go.Figure:
    """Line chart of the metric's (P, 1, Lx) values over the one swept axis, a line per policy."""
    axis = fmap.axes[0]
    values = getattr(fmap, metric.field)
    fig = go.Figure()
    for k, policy in enumerate(fmap.policies[:MAX_PANELS]):
        fig.add_trace(
            go.Scatter(
                x=list(axis.levels),
                y=_json_ready(values[k, 0]),
                mode="lines+markers",
                name=esc(policy),
                customdata=fmap.count[k, 0],
                hovertemplate=(
                    f"{esc(axis.name)}=%{{x:.4g}}: %{{y:.3g}} (%{{customdata}} results)<extra></extra>"
                ),
            )
        )
    if fmap.refined is not None and metric.field == "collision_rate":
        for k in range(min(len(fmap.policies), MAX_PANELS)):
            ys = tuple(None if h is None else float(h) for h in fmap.refined.hit[k])
            fig.add_trace(_refined_markers(fmap, k, ys))
    return layout(fig, f"{fmap.family}: {metric.title} over {axis.name}", _axis_title(axis), metric.title)


def _refined_markers(fmap: FamilyMap, k: int, y: tuple) -> go.Scatter:
    """The refined points of policy ``k`` at (x, ``y``): x collided, open circle safe."""
    assert fmap.refined is not None
    hits = fmap.refined.hit[k]
    names = [a.name for a in fmap.axes]
    where = f"{esc(names[0])}=%{{x:.6g}}" + (f", {esc(names[1])}=%{{y:.6g}}" if len(names) > 1 else "")
    return go.Scatter(
        x=list(fmap.refined.x[k]),
        y=list(y),
        mode="markers",
        name=esc(f"refined points ({fmap.refined.rounds} rounds)"),
        showlegend=k == 0,
        marker={
            "symbol": ["x" if h else "circle-open" for h in hits],
            "size": 6,
            "color": "black",
        },
        customdata=["collided" if h else "safe" if h is not None else "unknown" for h in hits],
        hovertemplate=f"refined: {where}: %{{customdata}}<extra></extra>",
    )


def _axis_title(axis) -> str:
    return esc(f"{axis.name} (bin centres)" if axis.binned else axis.name)


def _json_ready(values: np.ndarray) -> list:
    """Nested lists with NaN as None (empty cells)."""
    return np.where(np.isfinite(values), values.astype(object), np.array(None)).tolist()


def _boundary_blocks(data, fmap: FamilyMap) -> list:
    """The boundary cases table (or a line saying there are none, and why)."""
    if not fmap.boundary:
        why = "" if fmap.searched else " (sampled points have no grid neighbours)"
        return [note(f"No boundary cases: no collided point has a safe grid neighbour{why}.")]
    order = "" if fmap.refined is not None else " by policy and scenario"
    shown = f" (the first {len(fmap.boundary)}{order})" if fmap.boundary_total > len(fmap.boundary) else ""
    several = len(fmap.policies) > 1
    heads = ["scenario", *(["policy"] if several else []), *fmap.params, "safe neighbour", "viewer"]
    rows = []
    for case in fmap.boundary:
        cells = [case["scenario_id"], *([case["policy"]] if several else [])]
        cells += ["" if case["params"][p] is None else f"{case['params'][p]:g}" for p in fmap.params]
        cells.append("; ".join(case["safe"]))
        row = "".join(f"<td>{esc(fmt(c))}</td>" for c in cells)
        rows.append(f"<tr>{row}<td>{viewer_link(data, case['scenario_id'], case['policy_id'])}</td></tr>")
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    finest = ", refined points included, the finest first" if fmap.refined is not None else ""
    caption = (
        f"Boundary cases: {fmap.boundary_total} collided points with a neighbour along one parameter "
        f"that did not collide{finest}{shown}"
    )
    return [
        Html(
            f'<table class="data boundary" data-family="{esc(fmap.family)}"><caption>{esc(caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    ]
