"""Headline figures of a campaign (DuckDB over the results + the ledger's phases)."""

from __future__ import annotations

import pathlib

from drivesim.pipeline import results
from drivesim.pipeline.ledger import LEDGER_NAME, Ledger

SQL = """
SELECT policy_id, any_value(policy) AS policy,
       count(*) FILTER (WHERE status = 'ok') AS ok,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       avg(ego_collided::DOUBLE) AS collision_rate,
       avg(offroad::DOUBLE) AS offroad_rate,
       avg(progress_m) AS progress_mean_m,
       quantile_cont(progress_m, 0.5) AS progress_median_m,
       quantile_cont(min_ttc_s, 0.05) FILTER (WHERE isfinite(min_ttc_s)) AS min_ttc_p5_s,
       quantile_cont(min_ttc_s, 0.5) FILTER (WHERE isfinite(min_ttc_s)) AS min_ttc_p50_s,
       quantile_cont(min_ttc_s, 0.95) FILTER (WHERE isfinite(min_ttc_s)) AS min_ttc_p95_s,
       avg(has_nan::DOUBLE) AS nan_rate
FROM results GROUP BY policy_id ORDER BY policy_id
"""


def campaign_summary(directory) -> dict:
    """{"policies": [per-policy figures], "throughput": {...}} for a campaign directory."""
    directory = pathlib.Path(directory)
    per_policy = results.query(directory, SQL).to_pylist()
    return {"policies": per_policy, "throughput": _throughput(directory)}


def _throughput(directory: pathlib.Path) -> dict:
    if not (directory / LEDGER_NAME).is_file():
        return {}
    with Ledger(directory) as ledger:
        rows = ledger.phase_rows()
        counts = ledger.counts()
    out = {
        "batches_done": counts.get("done", 0),
        "batches_pending": counts.get("pending", 0),
        "batches_failed": counts.get("failed", 0),
    }
    if rows:
        scenarios = sum(r["num_scenarios"] or 0 for r in rows)
        wall = max(r["wall_end"] or 0 for r in rows) - min(r["wall_start"] or 0 for r in rows)
        out["scenarios"] = scenarios
        out["scenarios_per_s"] = scenarios / wall if wall > 0 else None
        for phase in ("load_s", "h2d_s", "compute_s", "d2h_s", "write_s"):
            out[phase] = sum(r[phase] or 0.0 for r in rows)
    return out


def summary_table(summary: dict):
    """A rich Table of :func:`campaign_summary`."""
    from rich.table import Table

    table = Table(title="campaign summary")
    columns = (
        "policy",
        "ok",
        "failed",
        "collision_rate",
        "offroad_rate",
        "progress_mean_m",
        "min_ttc_p5_s",
        "min_ttc_p50_s",
        "min_ttc_p95_s",
    )
    for column in columns:
        table.add_column(column)
    for row in summary["policies"]:
        table.add_row(*[_fmt(row.get(c)) for c in columns])
    tp = summary["throughput"]
    if tp:
        rate = tp.get("scenarios_per_s")
        table.caption = (
            f"batches done {tp['batches_done']}, pending {tp['batches_pending']}, "
            f"failed {tp['batches_failed']}; throughput "
            f"{'n/a' if rate is None else f'{rate:,.1f}'} scenarios/s"
        )
    return table


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
