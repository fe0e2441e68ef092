"""Dashboard sections: the paired comparison of a sweep's policies (drivesim.report.compare)
and the campaign's run sessions (drivesim.pipeline.sessions)."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from drivesim.report.blocks import Section, esc, layout, note, table

NOISE_GREY = "#9e9e9e"


def comparison_section(data) -> Section:
    """Paired differences of each policy against the first one, with 95% intervals; only
    differences that are significant get a colour."""
    section = Section(
        "Policy comparison",
        "compare",
        empty_note="one policy only: run a sweep (--sweep FILE) or `drivesim compare DIR_A DIR_B`",
    )
    out = data.outcomes
    if out is None or len(out.by_policy) < 2:
        return section
    from drivesim.report.compare import compare_arms, load_arms

    try:
        result = compare_arms(load_arms([data.root]))
    except Exception as exc:  # noqa: BLE001 - the rest of the dashboard still renders
        section.blocks.append(note(f"comparison unavailable: {type(exc).__name__}: {exc}"))
        return section
    section.blocks.append(
        note(
            f"{result.shared:,} scenarios ok under every policy; differences against "
            f"{result.arms[0]} (paired: same scenarios). Grey: within noise (p ≥ 0.05)."
        )
    )
    for metric in dict.fromkeys(d.metric for d in result.differences):
        diffs = [d for d in result.differences if d.metric == metric]
        scale = 100.0 if "rate" in metric else 1.0
        fig = go.Figure()
        fig.add_trace(
            go.Scatter(
                x=[scale * d.diff for d in diffs],
                y=[esc(d.arm) for d in diffs],
                mode="markers",
                marker={"size": 11, "color": [_colour(d) for d in diffs]},
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [_nz(scale * (d.high - d.diff)) for d in diffs],
                    "arrayminus": [_nz(scale * (d.diff - d.low)) for d in diffs],
                },
                hovertemplate="%{y}: %{x:.3g}<extra></extra>",
                showlegend=False,
            )
        )
        fig.add_vline(x=0, line_color="#444", line_width=1)
        unit = " (percentage points)" if scale == 100.0 else ""
        layout(
            fig,
            f"{metric}: difference vs {result.arms[0]}{unit}",
            "difference",
            "",
            height=120 + 40 * len(diffs),
        )
        section.blocks.append(fig)
    rows = [
        (d.metric, d.arm, d.diff, d.low, d.high, d.p_value, "yes" if d.significant else "no")
        for d in result.differences
    ]
    section.blocks.append(
        table(("metric", "policy", "difference", "95% low", "95% high", "p", "significant"), rows)
    )
    flips = [(arm, len(f["new_collisions"]), len(f["avoided_collisions"])) for arm, f in result.flips.items()]
    section.blocks.append(
        table(
            ("policy", "new collisions", "avoided collisions"),
            flips,
            caption="Collision outcome flips vs baseline",
        )
    )
    return section


def _colour(d) -> str:
    if not d.significant:
        return NOISE_GREY
    worse = d.diff > 0 if ("rate" in d.metric) else d.diff < 0
    return "#c44e52" if worse else "#55a868"


def _nz(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def sessions_section(data) -> Section:
    """Every run session of the campaign (start, end, backend, devices, throughput)."""
    from drivesim.pipeline.sessions import read_sessions

    section = Section("Run sessions", "sessions", empty_note="no run sessions recorded")
    sessions = read_sessions(data.root)
    if not sessions:
        return section
    from drivesim.report.dashboard import _date

    rows = [
        (
            _date(s.get("started")),
            "interrupted" if s.get("interrupted") else _date(s.get("ended")),
            s.get("backend"),
            s.get("device_count"),
            s.get("process"),
            s.get("done_this_run"),
            s.get("scenarios_per_s"),
        )
        for s in sessions
    ]
    section.blocks.append(
        table(
            ("started", "ended", "backend", "devices", "process", "scenarios this run", "scenarios/s"), rows
        )
    )
    return section
