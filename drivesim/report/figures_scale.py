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
    s, std = None, None
    if fits:
        s, std = stat(fits[-1].get("serial_fraction")), stat(fits[-1].get("serial_fraction_std"))
    else:
        for label, rows in series.items():
            if "weak" in label or len(rows) < 2:
                continue
            n = np.array([r["device_count"] for r in rows], dtype=float)
            rate = np.array([stat(r.get("scenarios_per_s")) for r in rows], dtype=float)
            s = analysis.fit_amdahl(n / n[0], rate / rate[0])
            break
    if s is None:
        return ""
    n = np.linspace(1, max(top, 2) * 2, 100)
    fig.add_scatter(
        x=n,
        y=analysis.amdahl_speedup(n, s),
        mode="lines",
        name=f"Amdahl fit (s = {s:.3f})",
        line={"color": "crimson"},
    )
    ceiling = 1.0 / s if s > 0 else float("inf")
    if np.isfinite(ceiling):
        fig.add_hline(
            y=ceiling, line_dash="dot", line_color="crimson", annotation_text=f"ceiling {ceiling:.1f}×"
        )
    spread = f" ± {std:.3f}" if std is not None else ""
    ceiling_text = f"{ceiling:.1f}×" if np.isfinite(ceiling) else "unbounded"
    return (
        f"Amdahl fit: serial fraction {s:.3f}{spread}, so the speed-up can never exceed {ceiling_text} "
        f"however many devices are added."
    )
