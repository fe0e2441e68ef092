"""Scaling section: throughput against devices with the ideal line, speed-up, efficiency, Amdahl."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import plotly.graph_objects as go

from drivesim.report import analysis
from drivesim.report.blocks import Section, layout, note, verdict
from drivesim.report.data import CampaignData, stat


def scaling_section(data: CampaignData) -> Section:
    """Strong/weak scaling curves from ``scale/*.jsonl`` (kind="scale" plus kind="amdahl")."""
    section = Section("Scaling", "scaling", empty_note="no data yet: run `drivesim scale` to fill this")
    records = data.scale + [r for r in data.bench if r.get("kind") in ("scale", "amdahl")]
    series = _series(records)
    if not series:
        return section
    fits = [r for r in records if r.get("kind") == "amdahl"]
    thr, spd, eff = go.Figure(), go.Figure(), go.Figure()
    top = 1
    for label, rows in series.items():
        n = np.array([r["device_count"] for r in rows], dtype=float)
        rate = np.array([stat(r.get("scenarios_per_s")) or np.nan for r in rows])
        lo = np.array([stat(r.get("scenarios_per_s"), "p5") or np.nan for r in rows])
        hi = np.array([stat(r.get("scenarios_per_s"), "p95") or np.nan for r in rows])
        top = max(top, int(n.max()))
        err = {
            "type": "data",
            "symmetric": False,
            "array": np.nan_to_num(hi - rate),
            "arrayminus": np.nan_to_num(rate - lo),
        }
        thr.add_scatter(x=n, y=rate, mode="lines+markers", name=label, error_y=err)
        thr.add_scatter(
            x=n,
            y=rate[0] * n / n[0],
            mode="lines",
            name=f"ideal ({label})",
            line={"dash": "dash", "color": "grey"},
        )
        speedup = _field(rows, "speedup", rate / rate[0])
        efficiency = _field(rows, "efficiency", speedup / (n / n[0]))
        spd.add_scatter(x=n, y=speedup, mode="lines+markers", name=label)
        eff.add_scatter(x=n, y=efficiency, mode="lines+markers", name=label)
    ideal = np.arange(1, top + 1, dtype=float)
    spd.add_scatter(x=ideal, y=ideal, mode="lines", name="ideal", line={"dash": "dash", "color": "grey"})
    eff.add_hline(y=1.0, line_dash="dash", line_color="grey")
    fit_text = _amdahl(spd, fits, series, top)
    section.blocks += [
        layout(thr, "Throughput against devices", "devices", "scenarios/s"),
        layout(spd, "Speed-up", "devices", "speed-up"),
        layout(eff, "Parallel efficiency", "devices", "efficiency"),
    ]
    section.blocks.append(
        note(
            "Efficiency = throughput(N) / (N × throughput(1)); the dashed lines are "
            "perfect scaling. Error bars span p5 to p95 of the repeats."
        )
    )
    if fit_text:
        section.blocks.append(verdict(fit_text))
    return section


def _series(records: list[dict]) -> dict[str, list[dict]]:
    """Scale records grouped by (mode, backend, workload), each sorted by device count."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        if r.get("kind") != "scale" or not isinstance(r.get("device_count"), int):
            continue
        if stat(r.get("scenarios_per_s")) is None:
            continue
        label = " ".join(str(r.get(k)) for k in ("mode", "backend", "workload") if r.get(k))
        groups[label or "scaling"].append(r)
    return {k: sorted(v, key=lambda r: r["device_count"]) for k, v in groups.items()}


def _field(rows: list[dict], key: str, fallback: np.ndarray) -> np.ndarray:
    values = np.array([stat(r.get(key)) if stat(r.get(key)) is not None else np.nan for r in rows])
    return np.where(np.isfinite(values), values, fallback)


def _amdahl(fig: go.Figure, fits: list[dict], series: dict[str, list[dict]], top: int) -> str:
    """Draw the Amdahl curve (recorded fit, else a fit of the first strong series) and describe it."""
    from drivesim.bench.amdahl import ceiling_claim, claimed_ceiling, fit_amdahl

    s, std, points = None, None, None
    if fits:
        s, std = stat(fits[-1].get("serial_fraction")), stat(fits[-1].get("serial_fraction_std"))
        points = (fits[-1].get("extra") or {}).get("points", fits[-1].get("points"))
    else:
        for label, rows in series.items():
            if "weak" in label or len(rows) < 2:
                continue
            n = np.array([r["device_count"] for r in rows], dtype=float)
            rate = np.array([stat(r.get("scenarios_per_s")) for r in rows], dtype=float)
            fit = fit_amdahl(n / n[0], rate / rate[0])
            s, std, points = fit.serial_fraction, fit.serial_fraction_std, fit.points
            break
    if s is None or not np.isfinite(s):
        return ""
    claim = ceiling_claim(s, std, points)
    s = float(np.clip(s, 0.0, 1.0))
    n = np.linspace(1, max(top, 2) * 2, 100)
    fig.add_scatter(
        x=n,
        y=analysis.amdahl_speedup(n, s),
        mode="lines",
        name=f"Amdahl fit (s = {s:.3f})",
        line={"color": "crimson"},
    )
    claimed = claimed_ceiling(s, std, points)
    if claimed is not None:
        label = f"ceiling {claimed[0]:.1f}×"
        fig.add_hline(y=claimed[0], line_dash="dot", line_color="crimson", annotation_text=label)
    return f"Amdahl fit: {claim}."
