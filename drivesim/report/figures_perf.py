"""Performance sections: throughput over time, batch times and phases, memory, device busy time.

Each ``*_section(data)`` returns a :class:`Section`; sections without data carry a note saying
which command fills them.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from drivesim.report import analysis
from drivesim.report.analysis import PHASES, column, downsample
from drivesim.report.blocks import Section, esc, layout, note, table, verdict
from drivesim.report.data import CampaignData, DeviceBusy, device_busy, stat
from drivesim.report.rates import rate

MAX_BARS = 300
MIB = 1024.0 * 1024.0


def throughput_section(data: CampaignData) -> Section:
    """Scenarios/s per batch and rolling, and cumulative scenarios against wall time."""
    section = Section(
        "Throughput",
        "throughput",
        empty_note="no data yet: run `drivesim run` to fill this (ledger batch timings)",
    )
    tp = analysis.throughput(data.phases)
    if tp is not None:
        fig = go.Figure()
        x, y = downsample(tp.t, tp.per_batch)
        fig.add_scatter(
            x=x,
            y=y,
            mode="markers",
            name="per batch (scenarios / batch wall time)",
            marker={"size": 5, "opacity": 0.6},
        )
        x, y = downsample(tp.t, tp.rolling)
        fig.add_scatter(x=x, y=y, mode="lines", name=f"rolling ({tp.window} batches, completions / elapsed)")
        section.blocks.append(layout(fig, "Throughput over time", "wall time (s)", "scenarios/s"))
        fig = go.Figure()
        x, y = downsample(np.concatenate([[0.0], tp.t]), np.concatenate([[0.0], tp.cumulative]))
        fig.add_scatter(x=x, y=y, mode="lines", name="scenarios done", line={"shape": "hv"})
        section.blocks.append(layout(fig, "Cumulative scenarios", "wall time (s)", "scenarios"))
        section.blocks.append(
            note(
                f"{int(tp.cumulative[-1]):,} scenarios in {tp.t[-1]:.1f} s: {rate(tp.mean)} scenarios/s on "
                f"average, {rate(tp.per_batch[-1])}/s in the last batch."
            )
        )
    bench = bench_table(data.bench)
    if bench is not None:
        section.blocks.append(bench)
    return section


def bench_table(records: list[dict]):
    """A table of benchmark rates (engine / pipeline records), or None."""
    rows = []
    for r in records:
        if r.get("kind") not in ("engine", "pipeline"):
            continue
        rate = r.get("scenarios_per_s")
        rows.append(
            (
                r.get("kind"),
                r.get("workload"),
                r.get("backend"),
                r.get("device_count"),
                r.get("batch_size"),
                stat(rate),
                stat(rate, "p5"),
                stat(rate, "p95"),
                stat(r.get("agent_steps_per_s")),
                r.get("compile_s"),
            )
        )
    if not rows:
        return None
    return table(
        (
            "kind",
            "workload",
            "backend",
            "devices",
            "batch",
            "scenarios/s (median)",
            "p5",
            "p95",
            "agent-steps/s",
            "compile s",
        ),
        rows,
        caption="Benchmarks (bench/*.jsonl)",
    )


def phases_section(data: CampaignData) -> Section:
    """Batch-time histogram, per-batch phase stacked bars and the bottleneck verdict."""
    section = Section(
        "Batch times and phases",
        "phases",
        empty_note="no data yet: run `drivesim run` or `drivesim bench pipeline` to fill this",
    )
    tp = analysis.throughput(data.phases)
    if tp is not None:
        fig = go.Figure(
            go.Histogram(x=tp.batch_s, nbinsx=min(60, max(5, len(tp.batch_s) // 2)), name="batches")
        )
        section.blocks.append(layout(fig, "Batch wall-time distribution", "seconds per batch", "batches"))
    if data.phases:
        section.blocks.append(_phase_bars(data.phases))
        found = analysis.bottleneck(data.phases, data.loader_threads)
        if found is not None:
            section.blocks.append(verdict(found.text))
    for r in data.bench:
        if r.get("kind") == "pipeline" and r.get("bottleneck"):
            advice = r.get("recommendation") or ""
            text = f"Benchmark {r.get('workload', '')}: bottleneck {r['bottleneck']}. {advice}"
            section.blocks.append(verdict(text))
    return section


def _phase_bars(phases: list[dict]) -> go.Figure:
    """Stacked bars of phase seconds per batch (binned to at most MAX_BARS bars), one bar
    per batch in id order, equally spaced whatever gaps the ids have (a campaign's sources
    number their batches apart), each labelled with its batch id or id range."""
    ids = column(phases, "batch_id")
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    fig = go.Figure()
    edges = np.linspace(0, len(order), min(MAX_BARS, len(order)) + 1).astype(int)
    binned = len(order) > MAX_BARS
    x = [
        _id_range(sorted_ids[start], sorted_ids[stop - 1])
        for start, stop in zip(edges[:-1], edges[1:], strict=True)
    ]
    for key, label in PHASES:
        values = np.nan_to_num(column(phases, key)[order])
        y = np.add.reduceat(values, edges[:-1]) / np.diff(edges)
        fig.add_bar(x=x, y=y, name=label)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(type="category")
    title = "Phase breakdown per batch" + (" (mean per group of batches)" if binned else "")
    return layout(fig, title, "batch id", "seconds")


def _id_range(first, last) -> str:
    """A bar's label: one batch id, or the first and last of a group."""
    return f"{int(first)}" if first == last else f"{int(first)}-{int(last)}"


def memory_section(data: CampaignData) -> Section:
    """Compiled / device peak memory per batch, host RSS, and the batch-size sweep with its knee."""
    section = Section(
        "Memory",
        "memory",
        empty_note="no data yet: run `drivesim run` or `drivesim bench memory` to fill this",
    )
    if data.phases:
        ids = column(data.phases, "batch_id")
        order = np.argsort(ids, kind="stable")
        fig = go.Figure()
        for key, label in (
            ("compiled_bytes", "compiled (memory_analysis)"),
            ("device_peak_bytes", "device peak"),
            ("device_bytes_in_use", "device in use"),
            ("host_rss_bytes", "host resident"),
        ):
            values = column(data.phases, key)[order]
            if np.isfinite(values).any():
                x, y = downsample(ids[order], values / MIB)
                fig.add_scatter(x=x, y=y, mode="lines+markers", name=label, marker={"size": 4})
        if fig.data:
            section.blocks.append(layout(fig, "Memory per batch", "batch id", "MiB"))
    sweep = _batch_sweep(data.bench)
    if sweep is not None:
        section.blocks.extend(sweep)
    return section


def _batch_sweep(records: list[dict]):
    """Throughput and memory against batch size (kind="memory" records), knee marked."""
    rows = [r for r in records if r.get("kind") == "memory" and isinstance(r.get("batch_size"), int)]
    if len({r["batch_size"] for r in rows}) < 2:
        return None
    rows.sort(key=lambda r: r["batch_size"])
    sizes = np.array([r["batch_size"] for r in rows], dtype=float)
    rates = np.array([stat(r.get("scenarios_per_s")) or np.nan for r in rows], dtype=float)
    marked = [i for i, r in enumerate(rows) if r.get("knee")]
    knee = marked[0] if marked else analysis.knee(sizes, rates)
    fig = go.Figure()
    fig.add_scatter(x=sizes, y=rates, mode="lines+markers", name="scenarios/s")
    for key, label in (
        ("compiled_bytes", "compiled MiB"),
        ("device_peak_bytes", "device peak MiB"),
        ("host_rss_bytes", "host RSS MiB"),
    ):
        mem = np.array([r.get(key) if isinstance(r.get(key), int | float) else np.nan for r in rows], float)
        if np.isfinite(mem).any():
            fig.add_scatter(
                x=sizes, y=mem / MIB, mode="lines+markers", name=label, yaxis="y2", line={"dash": "dot"}
            )
    if knee is not None:
        fig.add_vline(
            x=sizes[knee], line_dash="dash", line_color="crimson", annotation_text=f"knee: {int(sizes[knee])}"
        )
    fig.update_layout(yaxis2={"title": {"text": "MiB"}, "overlaying": "y", "side": "right"})
    fig.update_xaxes(type="log")
    blocks = [layout(fig, "Batch-size sweep", "batch size (scenarios)", "scenarios/s")]
    if knee is not None:
        blocks.append(
            note(
                f"Knee at batch size {int(sizes[knee])}: it reaches 90% of the best throughput; "
                "larger batches cost memory for little gain."
            )
        )
    return blocks


def devices_section(data: CampaignData) -> Section:
    """Per-device busy fraction (profiler trace) and GPU utilisation where measured."""
    section = Section(
        "Devices",
        "devices",
        empty_note="no data yet: run `drivesim profile` to fill this (per-device busy time)",
    )
    busy = device_busy(data.busy)
    for record in data.bench + data.scale:
        fields = {k: record[k] for k in ("busy", "gpu_util") if isinstance(record.get(k), dict)}
        found = device_busy(fields)
        if found.names and not busy.names:
            busy = DeviceBusy(found.names, found.fractions, busy.gpu_util)
        if found.gpu_util and not busy.gpu_util:
            busy = DeviceBusy(busy.names, busy.fractions, found.gpu_util)
    if busy.names:
        fig = _bar(
            busy.names,
            [100 * f for f in busy.fractions],
            "Device busy fraction (profiler trace)",
            "percent busy",
        )
        fig.update_yaxes(range=[0, 100])
        section.blocks.append(fig)
        fr = busy.fractions
        section.blocks.append(
            note(
                f"Mean busy fraction {sum(fr) / len(fr):.0%} over {len(fr)} devices; "
                f"least busy {min(fr):.0%}, most busy {max(fr):.0%}."
            )
        )
    if busy.gpu_util:
        fig = _bar(list(busy.gpu_util), list(busy.gpu_util.values()), "GPU utilisation (NVML)", "percent")
        section.blocks.append(fig)
    return section


def _bar(names: list[str] | tuple[str, ...], values: list[float], title: str, y: str) -> go.Figure:
    fig = go.Figure(go.Bar(x=[esc(n) for n in names], y=values, name=esc(y)))
    return layout(fig, title, "device", y)
