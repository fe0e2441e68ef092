"""Catalogue results over their parameters: DuckDB aggregates for the dashboard's heatmaps
and its list of boundary cases.

Rows with ``source = 'catalogue'`` carry their point in ``name`` (``FAMILY?NAME=VALUE,...``,
read with :func:`drivesim.scenarios.catalogue.param_sql`). Per family, the two parameters
with the most distinct values are the axes; the others are pooled (rates and medians over
every ok row of a cell). An axis of at most ``MAX_LEVELS`` values that repeat across points
or sit on an even lattice (a grid) keeps its values; any other (sampled values) is cut into
``BINS`` equal-width bins. Everything is reduced in SQL, so the result has at most
policies × ``MAX_LEVELS``² cells whatever the number of rows.

A refined family (``drivesim refine``: its rounds are catalogue sources of ``campaign.toml``
numbered from their first scenario id) keeps its maps on the base grid's rows; its refined
points come as :class:`Refined` markers, and its boundary cases are searched over every point
(base and refined), the finest first (smallest step to the safe neighbour, relative to the
parameter's span).
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


@dataclass(frozen=True)
class Refined:
    """A family's refined points: ``rounds`` (the highest round), ``points`` (N) of them;
    per drawn policy (P): x, y (N,) the values of the map's axes (y None with one axis) and
    hit (N,) whether the point collided (None: unknown)."""

    rounds: int
    points: int
    x: tuple[tuple[float, ...], ...]
    y: tuple[tuple[float, ...], ...] | None
    hit: tuple[tuple[bool | None, ...], ...]


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
    neighbours); refined: the refinement rounds' points (None: not refined).
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
    refined: Refined | None = None


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
        rounds = refinement_rounds(directory)
        maps = [
            _family_map(con, cols, str(f), int(n), rounds.get(str(f), []))
            for f, n in families
            if f is not None
        ]
        return [m for m in maps if m is not None]
    finally:
        con.close()


def refinement_rounds(directory) -> dict[str, list[tuple[int, int, int]]]:
    """{family: [(round, first scenario id, points)]} of the refinement rounds in the
    campaign's ``campaign.toml`` (empty without one)."""
    from drivesim.pipeline.config import CONFIG_NAME, read_config
    from drivesim.scenarios.catalogue.families import family as find_family
    from drivesim.scenarios.catalogue.refine import is_round, parse_round

    if not (Path(directory) / CONFIG_NAME).is_file():
        return {}
    found: dict[str, list[tuple[int, int, int]]] = {}
    for spec in read_config(directory).sources:
        kind, _, arg = spec.partition(":")
        name, _, text = arg.partition("?")
        points, _, options = text.partition("&")
        if kind == "catalogue" and is_round(options):
            fam = find_family(name)
            parsed = parse_round(fam.name, fam.params, points, options)
            found.setdefault(fam.name, []).append((parsed.round, parsed.first, len(parsed)))
    return found


def _round_sql(rounds: list[tuple[int, int, int]]) -> str:
    """DuckDB expression of a row's refinement round (0: the base grid) from its scenario id."""
    cases = " ".join(
        f"WHEN scenario_id >= {first} AND scenario_id < {first + count} THEN {number}"
        for number, first, count in rounds
    )
    return f"CASE {cases} ELSE 0 END" if cases else "0"


def _family_map(
    con: duckdb.DuckDBPyConnection,
    cols: frozenset[str],
    family: str,
    rows: int,
    rounds: list[tuple[int, int, int]] | None = None,
) -> FamilyMap | None:
    params = _params(con, family)
    if not params:
        return None
    # the family's rows with their parameters parsed once (a few narrow columns per row)
    extracted = ", ".join(f"{param_sql(p)} AS p_{p}" for p in params)
    ttc = "min_ttc_s" if "min_ttc_s" in cols else "NULL::FLOAT AS min_ttc_s"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE cat_all AS
            SELECT scenario_id, policy_id, {policy_label(cols)} AS policy_label, name, ego_collided, {ttc},
                   {extracted}, {_round_sql(rounds or [])} AS round
            FROM results WHERE source = 'catalogue' AND status = 'ok' AND family = {_quote(family)}"""
    )
    # the maps are drawn over the base grid; a refined family's boundary is searched over all
    con.execute("CREATE OR REPLACE TEMP VIEW cat AS SELECT * FROM cat_all WHERE round = 0")
    refined_rounds = max((number for number, _, _ in rounds or []), default=0)
    axes = _axes(con, params)
    chosen = sorted(axes, key=lambda a: -a.distinct)[:2]
    swept = [a for a in axes if a.distinct > 1]
    chosen = [a for a in chosen if a.distinct > 1] or chosen[:1]
    policies, count, rate, median = _cells(con, chosen)
    # sampled points have no neighbours; refined points came from a grid
    searched = len(swept) < 2 or all(a.grid for a in swept) or refined_rounds > 0
    boundary, total = (
        _boundary(con, params, [a.name for a in swept], finest=refined_rounds > 0) if searched else ([], 0)
    )
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
        refined=_refined(con, chosen, policies, refined_rounds) if refined_rounds else None,
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


def _boundary(
    con: duckdb.DuckDBPyConnection, params: tuple[str, ...], swept: list[str], finest: bool = False
):
    """(up to MAX_BOUNDARY boundary points, their total): collided points (per policy) with a
    neighbour along one swept parameter, all others equal, that did not collide; ``finest``:
    over every point (a refined family), the smallest step to a safe neighbour (relative to
    the parameter's span) first."""
    if not swept:
        return [], 0
    table = "cat_all" if finest else "cat"
    columns = ", ".join(f"p_{p}" for p in params)
    points = (
        f"SELECT policy_id, min(policy_label) AS policy, {columns}, bool_or(ego_collided) AS hit, "
        f"min(scenario_id) AS scenario_id FROM {table} GROUP BY policy_id, {columns}"
    )
    lines = " UNION ALL ".join(
        f"""SELECT scenario_id, policy_id, policy, hit, {columns}, '{name}' AS along,
                   lag(hit) OVER w AS prev_hit, lag(p_{name}) OVER w AS prev_value,
                   lead(hit) OVER w AS next_hit, lead(p_{name}) OVER w AS next_value,
                   least(CASE WHEN lag(hit) OVER w = false THEN p_{name} - lag(p_{name}) OVER w END,
                         CASE WHEN lead(hit) OVER w = false THEN lead(p_{name}) OVER w - p_{name} END)
                   / nullif(max(p_{name}) OVER () - min(p_{name}) OVER (), 0) AS step
            FROM points WINDOW w AS (PARTITION BY policy_id{"".join(f", p_{p}" for p in params if p != name)}
                                     ORDER BY p_{name})"""
        for name in swept
    )
    order = "finest, policy_id, scenario_id" if finest else "policy_id, scenario_id"
    cursor = con.execute(
        f"""WITH points AS ({points}), lines AS ({lines}),
            found AS (SELECT *, min(abs(step)) OVER (PARTITION BY policy_id, scenario_id) AS finest
                      FROM lines WHERE hit AND (prev_hit = false OR next_hit = false)),
            ranked AS (SELECT *, dense_rank() OVER (ORDER BY {order}) AS k FROM found)
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


def _refined(
    con: duckdb.DuckDBPyConnection, axes: list[Axis], policies: tuple[str, ...], rounds: int
) -> Refined:
    """The refined points' axis values and outcomes, per policy label in ``policies``."""
    y = f"p_{axes[1].name}" if len(axes) > 1 else "NULL"
    rows = con.execute(
        f"""SELECT policy_label, p_{axes[0].name}, {y}, ego_collided FROM cat_all WHERE round > 0
            ORDER BY policy_id, scenario_id"""
    ).fetchall()
    by_policy: dict[str, list] = {p: [] for p in policies}
    for label, x, yv, hit in rows:
        by_policy.setdefault(str(label), []).append((float(x), None if yv is None else float(yv), hit))
    picked = [by_policy[p] for p in policies]
    return Refined(
        rounds=rounds,
        points=len(picked[0]) if picked else 0,
        x=tuple(tuple(r[0] for r in rs) for rs in picked),
        y=tuple(tuple(r[1] for r in rs) for rs in picked) if len(axes) > 1 else None,
        hit=tuple(tuple(r[2] for r in rs) for rs in picked),
    )
