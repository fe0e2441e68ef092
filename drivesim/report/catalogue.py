"""Catalogue results over their parameters: DuckDB aggregates for the dashboard's heatmaps
and its list of boundary cases.

Rows with ``source = 'catalogue'`` carry their point in ``name`` (``FAMILY?NAME=VALUE,...``,
read with :func:`drivesim.scenarios.catalogue.param_sql`). Per family, the two parameters
with the most distinct values are the axes; the others are pooled (rates and medians over
every ok row of a cell). An axis of at most ``MAX_LEVELS`` values that repeat across points
or sit on an even lattice (a grid) keeps its values; any other (sampled values) is cut into
``BINS`` equal-width bins. Everything is reduced in SQL, so the result has at most
policies × ``MAX_LEVELS``² cells whatever the number of rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np

from drivesim.report.outcomes import policy_label
from drivesim.scenarios.catalogue.source import param_sql

MAX_LEVELS = 100  # most values an axis shows as they are
BINS = 10  # bins of an axis that is not an even lattice (sampled values)
MAX_BOUNDARY = 20  # boundary cases listed per family
LATTICE_TOLERANCE = 0.01  # of a step: how far a value may sit from the lattice
PARAM_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")


@dataclass(frozen=True)
class Axis:
    """One axis of a family's map: parameter ``name`` with ``distinct`` values in [lo, hi];
    ``levels`` (L,) the value of each cell (the grid's values, or bin centres when
    ``binned``); ``grid``: the values are a grid's (they repeat across points or sit on an
    even lattice), so points have neighbours along this parameter, binned or not."""

    name: str
    distinct: int
    lo: float
    hi: float
    levels: tuple[float, ...]
    binned: bool
    grid: bool = True

    def key_sql(self) -> str:
        """DuckDB expression of a row's cell key along this axis: the value, or the bin."""
        if not self.binned:
            return f"p_{self.name}"
        width = (self.hi - self.lo) / BINS
        return f"least(CAST(floor((p_{self.name} - {self.lo!r}) / {width!r}) AS INTEGER), {BINS - 1})"

    def index(self, key: float) -> int:
        """The cell index in [0, L) of a (non-null) key from :meth:`key_sql`."""
        return int(key) if self.binned else self.levels.index(float(key))


@dataclass
class FamilyMap:
    """One family's catalogue results.

    rows: the family's ok results; params: its parameter names (declared order); axes: (x, y),
    or (x,) with one swept parameter; pooled: the other swept parameters; policies: labels (P,).
    count: (P, Ly, Lx) ok results per cell (Ly = 1 for one axis); collision_rate: (P, Ly, Lx)
    mean of ego_collided; median_ttc: (P, Ly, Lx) median of the finite min_ttc_s (NaN: none).
    boundary: up to MAX_BOUNDARY collided points with a neighbour along a swept parameter that
    did not collide (dicts: scenario_id, policy_id, policy, params {name: value}, safe: a
    "NAME=VALUE[ and VALUE]" per parameter with a safe neighbour); boundary_total: how many
    there are in all; searched: whether they were looked for (sampled points have no grid
    neighbours).
    """

    family: str
    rows: int
    params: tuple[str, ...]
    axes: tuple[Axis, ...]
    pooled: tuple[str, ...]
    policies: tuple[str, ...]
    count: np.ndarray
    collision_rate: np.ndarray
    median_ttc: np.ndarray
    boundary: list[dict] = field(default_factory=list)
    boundary_total: int = 0
    searched: bool = False


def load_catalogue(directory: str | Path) -> list[FamilyMap]:
    """The FamilyMap of every catalogue family in a campaign's results (empty without any)."""
    from drivesim.pipeline import results

    con = results.connect(directory)
    try:
        cols = frozenset(r[0] for r in con.execute("DESCRIBE results").fetchall())
        if not {"scenario_id", "source", "family", "name", "status", "policy_id", "ego_collided"} <= cols:
            return []
        families = con.execute(
            "SELECT family, count(*) FROM results WHERE source = 'catalogue' AND status = 'ok' "
            "GROUP BY family ORDER BY family"
        ).fetchall()
        maps = [_family_map(con, cols, str(f), int(n)) for f, n in families if f is not None]
        return [m for m in maps if m is not None]
    finally:
        con.close()


def _family_map(
    con: duckdb.DuckDBPyConnection, cols: frozenset[str], family: str, rows: int
) -> FamilyMap | None:
    params = _params(con, family)
    if not params:
        return None
    # the family's rows with their parameters parsed once (a few narrow columns per row)
    extracted = ", ".join(f"{param_sql(p)} AS p_{p}" for p in params)
    ttc = "min_ttc_s" if "min_ttc_s" in cols else "NULL::FLOAT AS min_ttc_s"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE cat AS
            SELECT scenario_id, policy_id, {policy_label(cols)} AS policy_label, name, ego_collided, {ttc},
                   {extracted}
            FROM results WHERE source = 'catalogue' AND status = 'ok' AND family = {_quote(family)}"""
    )
    axes = _axes(con, params)
    chosen = sorted(axes, key=lambda a: -a.distinct)[:2]
    swept = [a for a in axes if a.distinct > 1]
    chosen = [a for a in chosen if a.distinct > 1] or chosen[:1]
    policies, count, rate, median = _cells(con, chosen)
    searched = len(swept) < 2 or all(a.grid for a in swept)  # sampled points have no neighbours
    boundary, total = _boundary(con, params, [a.name for a in swept]) if searched else ([], 0)
    return FamilyMap(
        family=family,
        rows=rows,
        params=params,
        axes=tuple(chosen),
        pooled=tuple(a.name for a in swept if a not in chosen),
        policies=policies,
        count=count,
        collision_rate=rate,
        median_ttc=median,
        boundary=boundary,
        boundary_total=total,
        searched=searched,
    )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _params(con: duckdb.DuckDBPyConnection, family: str) -> tuple[str, ...]:
    """The parameter names of a family, read from one of its names (``FAMILY?A=1,B=2``)."""
    row = con.execute(
        "SELECT name FROM results WHERE source = 'catalogue' AND family = ? AND name LIKE '%?%' LIMIT 1",
        [family],
    ).fetchone()
    if row is None:
        return ()
    items = str(row[0]).partition("?")[2].split(",")
    names = [item.partition("=")[0] for item in items]
    return tuple(n for n in names if PARAM_NAME.match(n))


def _axes(con: duckdb.DuckDBPyConnection, params: tuple[str, ...]) -> list[Axis]:
    """An Axis per parameter: its values when a grid's of at most MAX_LEVELS, else BINS bins."""
    stats = ", ".join(f"count(DISTINCT p_{p}), min(p_{p}), max(p_{p})" for p in params)
    row = con.execute(f"SELECT count(DISTINCT name), {stats} FROM cat").fetchone()
    assert row is not None  # an aggregate query returns one row
    points = int(row[0])
    axes = []
    for k, name in enumerate(params):
        distinct, lo, hi = row[1 + 3 * k : 4 + 3 * k]
        distinct = int(distinct)
        lo, hi = (float("nan"), float("nan")) if lo is None else (float(lo), float(hi))
        grid = distinct <= 1 or distinct < points or _on_lattice(con, name, lo, hi, distinct)
        if grid and distinct <= MAX_LEVELS:
            values = con.execute(f"SELECT DISTINCT p_{name} FROM cat WHERE p_{name} IS NOT NULL ORDER BY 1")
            levels = tuple(float(v) for (v,) in values.fetchall())
            axes.append(Axis(name, distinct, lo, hi, levels, binned=False))
        else:
            width = (hi - lo) / BINS
            levels = tuple((lo + width * (np.arange(BINS) + 0.5)).tolist())
            axes.append(Axis(name, distinct, lo, hi, levels, binned=True, grid=grid))
    return axes


def _on_lattice(con: duckdb.DuckDBPyConnection, name: str, lo: float, hi: float, distinct: int) -> bool:
    """True when every value of ``name`` is ``lo + k * (hi - lo) / (distinct - 1)`` (within
    LATTICE_TOLERANCE of a step)."""
    position = f"(p_{name} - {lo!r}) / {(hi - lo) / (distinct - 1)!r}"
    row = con.execute(f"SELECT max(abs({position} - round({position}))) FROM cat").fetchone()
    return row is not None and row[0] is not None and float(row[0]) <= LATTICE_TOLERANCE


def _cells(con: duckdb.DuckDBPyConnection, axes: list[Axis]):
    """(policies (P,), count, collision rate, median TTC (P, Ly, Lx)) over ``axes`` (x[, y])."""
    ix = axes[0].key_sql()
    iy = axes[1].key_sql() if len(axes) > 1 else "0"
    rows = con.execute(
        f"""SELECT policy_label, min(policy_id) AS pid, {ix} AS ix, {iy} AS iy, count(*) AS n,
                   avg(CASE WHEN ego_collided THEN 1.0 ELSE 0.0 END) FILTER (WHERE ego_collided IS NOT NULL),
                   median(min_ttc_s) FILTER (WHERE isfinite(min_ttc_s))
            FROM cat GROUP BY policy_label, ix, iy HAVING ix IS NOT NULL AND iy IS NOT NULL
            ORDER BY pid, policy_label"""
    ).fetchall()
    policies = tuple(dict.fromkeys(str(r[0]) for r in rows))
    shape = (len(policies), len(axes[1].levels) if len(axes) > 1 else 1, len(axes[0].levels))
    count = np.zeros(shape, dtype=np.int64)
    rate = np.full(shape, np.nan)
    median = np.full(shape, np.nan)
    slot = {p: k for k, p in enumerate(policies)}
    for label, _, x, y, n, r, m in rows:
        cell = (slot[str(label)], axes[1].index(y) if len(axes) > 1 else 0, axes[0].index(x))
        count[cell] = n
        rate[cell] = np.nan if r is None else r
        median[cell] = np.nan if m is None else m
    return policies, count, rate, median


def _boundary(con: duckdb.DuckDBPyConnection, params: tuple[str, ...], swept: list[str]):
    """(up to MAX_BOUNDARY boundary points, their total): collided points (per policy) with a
    neighbour along one swept parameter, all others equal, that did not collide."""
    if not swept:
        return [], 0
    columns = ", ".join(f"p_{p}" for p in params)
    points = (
        f"SELECT policy_id, min(policy_label) AS policy, {columns}, bool_or(ego_collided) AS hit, "
        f"min(scenario_id) AS scenario_id FROM cat GROUP BY policy_id, {columns}"
    )
    lines = " UNION ALL ".join(
        f"""SELECT scenario_id, policy_id, policy, hit, {columns}, '{name}' AS along,
                   lag(hit) OVER w AS prev_hit, lag(p_{name}) OVER w AS prev_value,
                   lead(hit) OVER w AS next_hit, lead(p_{name}) OVER w AS next_value
            FROM points WINDOW w AS (PARTITION BY policy_id{"".join(f", p_{p}" for p in params if p != name)}
                                     ORDER BY p_{name})"""
        for name in swept
    )
    cursor = con.execute(
        f"""WITH points AS ({points}), lines AS ({lines}),
            found AS (SELECT * FROM lines WHERE hit AND (prev_hit = false OR next_hit = false)),
            ranked AS (SELECT *, dense_rank() OVER (ORDER BY policy_id, scenario_id) AS k FROM found)
        SELECT *, (SELECT count(DISTINCT (policy_id, scenario_id)) FROM found) AS total
        FROM ranked WHERE k <= {MAX_BOUNDARY} ORDER BY k, along"""
    )
    names = [d[0] for d in cursor.description]
    found: dict[int, dict] = {}
    total = 0
    for row in cursor.fetchall():
        r = dict(zip(names, row, strict=True))
        total = int(r["total"])
        point = found.setdefault(
            r["k"],
            dict(
                scenario_id=r["scenario_id"],
                policy_id=r["policy_id"],
                policy=r["policy"],
                params={p: r[f"p_{p}"] for p in params},
                safe=[],
            ),
        )
        safe = [
            v
            for v, hit in ((r["prev_value"], r["prev_hit"]), (r["next_value"], r["next_hit"]))
            if hit is False
        ]
        point["safe"].append(f"{r['along']}=" + " and ".join(f"{v:g}" for v in safe))
    return list(found.values()), total
