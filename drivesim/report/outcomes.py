"""Campaign outcomes: DuckDB aggregates over the ``results`` view (one row per scenario × policy).

Everything is reduced in SQL (rates, quantiles, the failure list capped at ``MAX_FAILED_ROWS``),
so the dashboard stays small and quick for campaigns of millions of rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

MAX_FAILED_ROWS = 200
MAX_REASONS = 20
MAX_GROUPS = 40
DISTRIBUTION_METRICS = ("progress_m", "min_ttc_s", "max_jerk", "min_road_edge_distance_m", "log_div_final")


@dataclass
class Outcomes:
    """Aggregates of one campaign's results.

    by_family / by_policy: one dict per group with n, ok, failed, collision_rate, offroad_rate,
    nan_rate, per-metric means (rates over ok rows, in [0, 1]) and the pedestrians and cyclists
    in a collision (sums).
    quantiles: {(dimension, metric): rows}; dimension is "family" or "policy"; a row holds the
    group label, n and q0, q05, q25, q50, q75, q95, q100, mean of the metric over finite values.
    failed_rows: up to MAX_FAILED_ROWS failed rows (scenario_id, family, source, name, policy, error).
    failed_reasons: (error, count) pairs, most frequent first.
    realism: per family with a log, the displacement of the simulated traffic from it: label,
    n (rows with a finite ADE at the first horizon), and for each horizon H of
    LOG_HORIZON_COLUMNS (``1s``, ``3s``, ``8s``) ``ade_H``/``fde_H`` (means over the rows that
    reach H), ``fde_H_q50``/``fde_H_q95`` and ``n_H`` (rows that reach H).
    """

    total: int = 0
    ok: int = 0
    failed: int = 0
    columns: frozenset[str] = frozenset()
    by_family: list[dict] = field(default_factory=list)
    by_policy: list[dict] = field(default_factory=list)
    quantiles: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    failed_rows: list[dict] = field(default_factory=list)
    failed_reasons: list[tuple[str, int]] = field(default_factory=list)
    realism: list[dict] = field(default_factory=list)
    padding_efficiency: float | None = None


def open_results(shards: list[Path]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the view ``results`` over ``shards``."""
    con = duckdb.connect()
    rel = con.read_parquet([str(p) for p in shards], union_by_name=True)
    rel.create_view("results")
    return con


def load_outcomes(shards: list[Path]) -> Outcomes:
    """Aggregate the result shards (Parquet files with the documented ``results`` schema)."""
    con = open_results(shards)
    try:
        cols = frozenset(r[0] for r in con.execute("DESCRIBE results").fetchall())
        out = Outcomes(columns=cols)
        ok_expr = "status = 'ok'" if "status" in cols else "TRUE"
        counts = con.execute(f"SELECT count(*), count(*) FILTER ({ok_expr}) FROM results").fetchone()
        assert counts is not None  # an aggregate query returns one row
        out.total, out.ok = counts
        out.failed = out.total - out.ok
        out.by_family = _group_rates(con, cols, "family") if "family" in cols else []
        out.by_policy = _group_rates(con, cols, policy_label(cols)) if "policy_id" in cols else []
        out.quantiles = _quantiles(con, cols)
        out.realism = _realism(con, cols) if "family" in cols else []
        if "status" in cols:
            out.failed_rows, out.failed_reasons = _failures(con, cols)
        if {"num_agents", "size_class"} <= cols:
            row = con.execute(
                "SELECT sum(num_agents)::DOUBLE / nullif(sum(size_class), 0) FROM results"
            ).fetchone()
            value = None if row is None else row[0]
            out.padding_efficiency = None if value is None else float(value)
        return out
    finally:
        con.close()


def policy_label(cols: frozenset[str]) -> str:
    """SQL of a policy's label: ``NAME [ID]`` (``policy ID`` without a policy column)."""
    if "policy" in cols:
        return "coalesce(policy, 'policy ' || policy_id::VARCHAR) || ' [' || policy_id::VARCHAR || ']'"
    return "'policy ' || policy_id::VARCHAR"


def _rate(cols: frozenset[str], column: str) -> str:
    if column not in cols:
        return "NULL"
    return f"avg(CASE WHEN {column} THEN 1.0 ELSE 0.0 END) FILTER (WHERE {column} IS NOT NULL)"


def _mean(cols: frozenset[str], column: str) -> str:
    if column not in cols:
        return "NULL"
    return f"avg({column}) FILTER (WHERE isfinite({column}))"


def _sum(cols: frozenset[str], column: str) -> str:
    if column not in cols:
        return "NULL"
    return f"sum({column})"


def _sd(cols: frozenset[str], column: str) -> str:
    if column not in cols:
        return "NULL"
    return f"stddev_samp({column}) FILTER (WHERE isfinite({column}))"


def _median(cols: frozenset[str], column: str) -> str:
    if column not in cols:
        return "NULL"
    return f"median({column}) FILTER (WHERE isfinite({column}))"


def _group_rates(con: duckdb.DuckDBPyConnection, cols: frozenset[str], key: str) -> list[dict]:
    """Per-group counts, rates and metric means (at most MAX_GROUPS groups, largest first)."""
    ok = "status = 'ok'" if "status" in cols else "TRUE"
    order = "min(policy_id), " if "policy_id" in key else ""
    sql = f"""
        SELECT coalesce(({key})::VARCHAR, '(none)') AS label, count(*) AS n,
               count(*) FILTER ({ok}) AS ok,
               {_rate(cols, "ego_collided")} AS collision_rate,
               {_rate(cols, "offroad")} AS offroad_rate,
               {_rate(cols, "red_light_violation")} AS red_light_rate,
               {_rate(cols, "has_nan")} AS nan_rate,
               {_mean(cols, "progress_m")} AS progress_m,
               {_median(cols, "min_ttc_s")} AS min_ttc_s,
               {_mean(cols, "max_jerk")} AS max_jerk,
               {_sd(cols, "progress_m")} AS progress_m_sd,
               {_sd(cols, "min_ttc_s")} AS min_ttc_s_sd,
               {_sd(cols, "max_jerk")} AS max_jerk_sd,
               {_mean(cols, "agents_collided")} AS agents_collided,
               {_mean(cols, "agents_offroad")} AS agents_offroad,
               {_sum(cols, "pedestrians_collided")} AS pedestrians_collided,
               {_sum(cols, "cyclists_collided")} AS cyclists_collided,
               {_rate(cols, "window_overflow")} AS fallback_rate
        FROM results GROUP BY 1 ORDER BY {order}n DESC, label LIMIT {MAX_GROUPS}"""
    rows = _dicts(con.execute(sql))
    for row in rows:
        row["failed"] = row["n"] - row["ok"]
    return rows


def _quantiles(con: duckdb.DuckDBPyConnection, cols: frozenset[str]) -> dict[tuple[str, str], list[dict]]:
    result: dict[tuple[str, str], list[dict]] = {}
    dims = []
    if "family" in cols:
        dims.append(("family", "family"))
    if "policy_id" in cols:
        dims.append(("policy", policy_label(cols)))
    for metric in DISTRIBUTION_METRICS:
        if metric not in cols:
            continue
        for dim, key in dims:
            sql = f"""
                SELECT coalesce(({key})::VARCHAR, '(none)') AS label, count(*) AS n,
                       quantile_cont({metric}, [0, 0.05, 0.25, 0.5, 0.75, 0.95, 1]) AS q,
                       avg({metric}) AS mean
                FROM results WHERE {metric} IS NOT NULL AND isfinite({metric})
                GROUP BY 1 ORDER BY n DESC, label LIMIT {MAX_GROUPS}"""
            rows = []
            for row in _dicts(con.execute(sql)):
                q = row.pop("q")
                row.update(zip(("q0", "q05", "q25", "q50", "q75", "q95", "q100"), q, strict=True))
                rows.append(row)
            if rows:
                result[(dim, metric)] = rows
    return result


LOG_HORIZON_COLUMNS = ("1s", "3s", "8s")  # the results' ade_*/fde_* suffixes


def _realism(con: duckdb.DuckDBPyConnection, cols: frozenset[str]) -> list[dict]:
    """Per family, ADE/FDE against the log at each horizon (rows without a log left out)."""
    present = [h for h in LOG_HORIZON_COLUMNS if {f"ade_{h}", f"fde_{h}"} <= cols]
    if not present:
        return []
    parts = []
    for h in present:
        ade, fde = f"ade_{h}", f"fde_{h}"
        parts.append(
            f"count({fde}) FILTER (WHERE isfinite({fde})) AS n_{h}, {_mean(cols, ade)} AS {ade}, "
            f"{_mean(cols, fde)} AS {fde}, "
            f"quantile_cont({fde}, 0.5) FILTER (WHERE isfinite({fde})) AS {fde}_q50, "
            f"quantile_cont({fde}, 0.95) FILTER (WHERE isfinite({fde})) AS {fde}_q95"
        )
    first = f"fde_{present[0]}"
    sql = f"""
        SELECT coalesce(family, '(none)') AS label, count(*) AS n, {", ".join(parts)}
        FROM results WHERE {first} IS NOT NULL AND isfinite({first})
        GROUP BY 1 ORDER BY n DESC, label LIMIT {MAX_GROUPS}"""
    return _dicts(con.execute(sql))


def _failures(con: duckdb.DuckDBPyConnection, cols: frozenset[str]) -> tuple[list[dict], list[tuple]]:
    wanted = [c for c in ("scenario_id", "family", "source", "name", "policy", "error") if c in cols]
    if not wanted:
        return [], []
    order = "scenario_id" if "scenario_id" in cols else wanted[0]
    rows = _dicts(
        con.execute(
            f"SELECT {', '.join(wanted)} FROM results WHERE status <> 'ok' "
            f"ORDER BY {order} LIMIT {MAX_FAILED_ROWS}"
        )
    )
    reasons: list[tuple] = []
    if "error" in cols:
        reasons = con.execute(
            f"SELECT coalesce(left(error, 300), '(no reason given)') AS reason, count(*) AS n "
            f"FROM results WHERE status <> 'ok' GROUP BY 1 ORDER BY n DESC, reason LIMIT {MAX_REASONS}"
        ).fetchall()
    return rows, [(str(r), int(n)) for r, n in reasons]


def _dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict]:
    """Rows of an executed query as dicts keyed by column name."""
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
