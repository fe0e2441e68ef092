"""The dashboard's per-worker section: who ran which batches of a Ray campaign, and how fast."""

from __future__ import annotations

import plotly.graph_objects as go

from drivesim.report.blocks import Section, layout, note, table


def workers_section(data) -> Section:
    """Scenarios/s and batches per Ray worker (from the ledger's ``batches.worker``)."""
    from drivesim.pipeline.worker_stats import worker_throughput

    section = Section(
        "Workers",
        "workers",
        empty_note="ran on this machine only: `drivesim run --cluster ray` shows each Ray worker here",
    )
    rows = worker_throughput(data.root)
    if not rows:
        return section
    names = [r["worker"] for r in rows]
    fig = go.Figure()
    fig.add_bar(x=names, y=[r["scenarios_per_s"] or 0.0 for r in rows], name="scenarios/s over its span")
    section.blocks.append(layout(fig, "Throughput per worker", "worker (node:pid)", "scenarios/s"))
    section.blocks.append(
        table(
            ("worker", "batches", "scenarios", "span s", "scenarios/s", "compute s", "compile s"),
            [
                (
                    r["worker"],
                    r["batches"],
                    r["scenarios"],
                    r["span_s"],
                    r["scenarios_per_s"],
                    r["compute_s"],
                    r["compile_s"],
                )
                for r in rows
            ],
        )
    )
    total = sum(r["scenarios"] for r in rows)
    section.blocks.append(
        note(
            f"{len(rows)} workers ran {total:,} scenarios; a worker's rate is its scenarios over the "
            "span from its first batch's start to its last batch's end."
        )
    )
    return section
