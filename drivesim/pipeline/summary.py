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
       avg(red_light_violation::DOUBLE) AS red_light_rate,
       avg(progress_m) AS progress_mean_m,
       quantile_cont(progress_m, 0.5) AS progress_median_m,
       quantile_cont(min_ttc_s, 0.05) FILTER (WHERE isfinite(min_ttc_s)) AS min_ttc_p5_s,
       quantile_cont(min_ttc_s, 0.5) FILTER (WHERE isfinite(min_ttc_s)) AS min_ttc_p50_s,
       quantile_cont(min_ttc_s, 0.95) FILTER (WHERE isfinite(min_ttc_s)) AS min_ttc_p95_s,
       avg(has_nan::DOUBLE) AS nan_rate
FROM results GROUP BY policy_id ORDER BY policy_id
"""


# per policy: how often the ego's first collision was with a pedestrian / cyclist, and how
# many pedestrians / cyclists were in a collision (results without the columns: none)
ROAD_USERS_SQL = """
SELECT policy_id, any_value(policy) AS policy,
       avg((collided_with_kind = 1)::DOUBLE) AS ego_hit_pedestrian_rate,
       avg((collided_with_kind = 2)::DOUBLE) AS ego_hit_cyclist_rate,
       sum(pedestrians_collided) AS pedestrians_collided,
       sum(cyclists_collided) AS cyclists_collided
FROM results WHERE status = 'ok' GROUP BY policy_id ORDER BY policy_id
"""
ROAD_USER_COLUMNS = ("collided_with_kind", "pedestrians_collided", "cyclists_collided")


def campaign_summary(directory) -> dict:
    """{"policies": [per-policy figures], "road_users": [per-policy pedestrian and cyclist
    collision figures], "throughput": {...}} for a campaign directory."""
    directory = pathlib.Path(directory)
    per_policy = results.query(directory, SQL).to_pylist()
    columns = set(results.query(directory, "SELECT * FROM results LIMIT 0").column_names)
    has_types = set(ROAD_USER_COLUMNS) <= columns
    road_users = results.query(directory, ROAD_USERS_SQL).to_pylist() if has_types else []
    return {"policies": per_policy, "road_users": road_users, "throughput": _throughput(directory)}


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
        for phase in ("load_s", "h2d_s", "compute_s", "d2h_s", "write_s", "compile_s"):
            out[phase] = sum(r.get(phase) or 0.0 for r in rows)
        out["shapes_compiled"] = sum(1 for r in rows if (r.get("compile_s") or 0.0) > 0)
    return out


def summary_table(summary: dict):
    """A rich Table of :func:`campaign_summary`."""
    from rich.table import Table

    table = Table(title="campaign summary (rates in %, TTC quantiles over finite values)")
    for column, header in SUMMARY_COLUMNS:
        table.add_column(header, overflow="fold", justify="left" if column == "policy" else "right")
    for row in summary["policies"]:
        table.add_row(*[_fmt(row.get(c), c) for c, _ in SUMMARY_COLUMNS])
    tp = summary["throughput"]
    if tp:
        rate = tp.get("scenarios_per_s")
        table.caption = (
            f"batches done {tp['batches_done']}, pending {tp['batches_pending']}, "
            f"failed {tp['batches_failed']}; throughput "
            f"{'n/a' if rate is None else f'{rate:,.1f}'} scenarios/s"
        )
        if tp.get("compile_s"):
            table.caption += f"; {tp['shapes_compiled']} shapes compiled in {tp['compile_s']:.1f} s"
    return table


# (summary key, short header): the table fits 80 columns
SUMMARY_COLUMNS = (
    ("policy", "policy"),
    ("ok", "ok"),
    ("failed", "fail"),
    ("collision_rate", "coll%"),
    ("offroad_rate", "off%"),
    ("red_light_rate", "red%"),
    ("progress_mean_m", "prog m"),
    ("min_ttc_p5_s", "ttc p5"),
    ("min_ttc_p50_s", "ttc p50"),
    ("min_ttc_p95_s", "ttc p95"),
)


def road_users_table(summary: dict):
    """A rich Table of the pedestrian and cyclist collision figures, or None when no
    pedestrian or cyclist was in a collision."""
    from rich.table import Table

    rows = summary.get("road_users") or []
    if not any((r["pedestrians_collided"] or 0) + (r["cyclists_collided"] or 0) for r in rows):
        return None
    table = Table(title="pedestrians and cyclists (ego's first collision partner, in %)")
    for header in ("policy", "ego-ped%", "ego-cyc%", "peds hit", "cyclists hit"):
        table.add_column(header, justify="left" if header == "policy" else "right")
    for r in rows:
        table.add_row(
            _fmt(r["policy"]),
            _fmt(r["ego_hit_pedestrian_rate"], "_rate"),
            _fmt(r["ego_hit_cyclist_rate"], "_rate"),
            _fmt(r["pedestrians_collided"]),
            _fmt(r["cyclists_collided"]),
        )
    return table


def sessions_table(sessions: list[dict]):
    """A rich Table of the run sessions (drivesim.pipeline.sessions.read_sessions)."""
    import datetime as dt

    from rich.table import Table

    def when(stamp) -> str:
        if stamp is None:
            return "-"
        return dt.datetime.fromtimestamp(float(stamp), dt.UTC).strftime("%m-%d %H:%M:%S")

    table = Table(title="run sessions (UTC)")
    for header in ("started", "ended", "backend", "devices", "done", "scen/s"):
        table.add_column(header, justify="right")
    for s in sessions:
        ended = "interrupted" if s.get("interrupted") else when(s.get("ended"))
        table.add_row(
            when(s.get("started")),
            ended,
            str(s.get("backend") or "-"),
            str(s.get("device_count") or "-"),
            _fmt(s.get("done_this_run")),
            _fmt(s.get("scenarios_per_s")),
        )
    return table


def _fmt(value, column: str = "") -> str:
    if value is None:
        return "-"
    if column.endswith("_rate") and isinstance(value, (int, float)):
        return f"{100 * value:.2f}"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
