"""Adaptive refinement of a catalogue grid near the failure boundary (pure, no IO).

The swept parameters of a base :class:`Grid` (those with more than one value) span a lattice of
hyper-rectangle cells: level 0 is the grid's own cells (one between consecutive values of every
swept parameter); splitting a level-k cell at its midpoints gives 2^D level-(k+1) cells and
adds its 3^D - 2^D new lattice points (edge midpoints, face centres, the centre).

A round: the leaf cells (those whose centre was not evaluated: a centre belongs to exactly one
cell, so "centre evaluated" is "was split") whose evaluated points disagree are split; their
new lattice points not yet evaluated are the round's points. A leaf's evaluated points are its
corners and any of its level-(k+1) lattice points a split neighbour evaluated (a hanging
point on a shared face), so a boundary that enters a coarse cell through a neighbour's finer
face is followed. Points of unknown outcome (failed scenarios) are neither repeated nor
compared.

Why cells rather than pairs of neighbours along one axis: pairs bisect the boundary on the base
grid's lines only (its crossing of each line is found to spacing / 2^rounds, but between the
lines it stays at the base spacing), while a split cell halves the spacing along every swept
parameter near the boundary, so the boundary is resolved as a curve (surface), the finest
boundary cases have neighbours along every parameter, and a heatmap can be drawn finer there.
The price is 3^D - 2^D points per split cell (5 in 2-D, fewer after sharing with neighbours).

Lattice values keep the catalogue's naming precision: DIGITS (6) significant digits, so a
point's name (``%g``) holds exactly the value simulated. A cell whose midpoints round onto its
corners (spacing below that precision) is not split. Everything is a function of the base grid
and the outcomes, in sorted order: the same inputs give the same points.

Refined rounds run as catalogue sources of explicit points
(``catalogue:FAMILY?POINT;POINT;...&round=R&first=F[&ttc=S]``, see :class:`Points`), whose
scenario ids start at ``first`` (the campaign position of their first point).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from drivesim.scenarios.catalogue.params import CatalogueError, Grid, Param, parse_items, parse_number

DIGITS = 6  # significant digits of a lattice value (the catalogue's naming precision)
ROUND_OPTIONS = ("round", "first", "ttc")  # the options of a refinement round's spec


def round_value(value: float) -> float:
    """``value`` at DIGITS significant digits."""
    return float(f"{value:.{DIGITS}g}")


def point_key(values: Iterable[float]) -> tuple[str, ...]:
    """The identity of a point: its values as printed in names (``%g``, 6 digits)."""
    return tuple(f"{float(v):g}" for v in values)


@dataclass(frozen=True)
class Lattice:
    """The refinement lattice of a base grid: ``swept`` indices (D,) of the parameters with
    more than one value; a point at level k has integer coordinates c (D,), c[d] in
    [0, (count_d - 1) * 2^k]."""

    grid: Grid

    @property
    def swept(self) -> tuple[int, ...]:
        return tuple(k for k, v in enumerate(self.grid.values) if len(v) > 1)

    def value(self, axis: int, coord: int, level: int) -> float:
        """Value of parameter ``axis`` at lattice coordinate ``coord`` of ``level`` (in lowest
        terms, so one lattice point has one value whatever the level it is reached from)."""
        while level > 0 and coord % 2 == 0:
            coord, level = coord // 2, level - 1
        values = self.grid.values[axis]
        if level == 0:
            return float(values[coord])
        lo, hi = float(values[0]), float(values[-1])
        return round_value(lo + coord * (hi - lo) / ((len(values) - 1) * 2**level))

    def point(self, coords: tuple[int, ...], level: int) -> tuple[float, ...]:
        """Every parameter's value (declared order) of the lattice point ``coords`` (D,)."""
        out = [float(v[0]) for v in self.grid.values]
        for axis, c in zip(self.swept, coords, strict=True):
            out[axis] = self.value(axis, c, level)
        return tuple(out)


def _cell_points(lattice: Lattice, level: int, corner: tuple[int, ...]) -> dict[tuple[int, ...], tuple]:
    """{offset e in {0,1,2}^D: point values} of the level-(k+1) lattice points of a cell."""
    base = tuple(2 * c for c in corner)
    return {
        e: lattice.point(tuple(b + o for b, o in zip(base, e, strict=True)), level + 1)
        for e in itertools.product((0, 1, 2), repeat=len(corner))
    }


def next_points(grid: Grid, outcomes: Mapping[tuple[str, ...], Hashable | None]) -> list[dict[str, float]]:
    """The points {name: value} (declared order, sorted) of the next refinement round.

    grid: the base grid; outcomes: {point_key(values): outcome} of every evaluated point
    (any hashable, e.g. a bool "failed" or a tuple of them per policy; None: unknown). A cell
    disagrees when its evaluated points of known outcome hold two different outcomes.
    """
    lattice = Lattice(grid)
    dims = len(lattice.swept)
    if dims == 0:
        return []
    stack = [(0, c) for c in itertools.product(*(range(len(grid.values[a]) - 1) for a in lattice.swept))]
    new: dict[tuple[str, ...], tuple[float, ...]] = {}
    centre_offset = (1,) * dims
    while stack:
        level, corner = stack.pop()
        points = _cell_points(lattice, level, corner)
        keys = {e: point_key(v) for e, v in points.items()}
        if len(set(keys.values())) < len(keys):
            continue  # finer than the naming precision: not split
        if keys[centre_offset] in outcomes:  # split: visit its children
            stack.extend(
                (level + 1, tuple(2 * c + o for c, o in zip(corner, e, strict=True)))
                for e in itertools.product((0, 1), repeat=dims)
            )
            continue
        seen = {outcomes[k] for k in keys.values() if k in outcomes and outcomes[k] is not None}
        if len(seen) > 1:
            new |= {k: points[e] for e, k in keys.items() if k not in outcomes}
    return [dict(zip(grid.names, v, strict=True)) for _, v in sorted(new.items(), key=lambda kv: kv[1])]


@dataclass(frozen=True)
class Points:
    """Explicit points of one family, a refinement round: ``values`` (count, K) in declared
    parameter order; ``round`` R >= 1; ``first`` the scenario id of point 0 (its campaign
    position); ``ttc``: the min-TTC threshold [s] counted as a failure, if any."""

    family: str
    names: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    round: int
    first: int
    ttc: float | None = None

    def __len__(self) -> int:
        return len(self.values)

    def describe(self) -> str:
        return f"refinement round {self.round}: {len(self)} points"

    def box(self) -> tuple[dict[str, float], dict[str, float]]:
        """({name: lowest value}, {name: highest value}) over the points."""
        array = np.asarray(self.values, dtype=np.float64).reshape(len(self.values), len(self.names))
        return dict(zip(self.names, array.min(0).tolist(), strict=True)), dict(
            zip(self.names, array.max(0).tolist(), strict=True)
        )

    def point(self, position: int) -> dict[str, float]:
        return dict(zip(self.names, self.values[position], strict=True))


def is_round(options: str) -> bool:
    """Whether the options after ``&`` are a refinement round's (``round=R&first=F...``)."""
    return any(item.partition("=")[0].strip() == "round" for item in options.split("&"))


def round_spec(
    family: str, points: list[dict[str, float]], round_: int, first: int, ttc: float | None
) -> str:
    """The source spec ``catalogue:FAMILY?POINT;...&round=R&first=F[&ttc=S]`` of a round."""
    text = ";".join(",".join(f"{k}={v:g}" for k, v in p.items()) for p in points)
    extra = "" if ttc is None else f"&ttc={ttc:g}"
    return f"catalogue:{family}?{text}&round={round_}&first={first}{extra}"


def _options(family: str, options: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in (t.strip() for t in options.split("&")):
        if not item:
            continue
        key, eq, value = (s.strip() for s in item.partition("="))
        if key not in ROUND_OPTIONS or not eq or key in found:
            raise CatalogueError(
                f"catalogue {family}: refinement option {item!r}: expected round=R&first=F[&ttc=S] once each"
            )
        found[key] = value
    if "round" not in found or "first" not in found:
        raise CatalogueError(f"catalogue {family}: a refinement round needs round=R&first=F")
    return found


def _count(family: str, name: str, text: str, lo: int) -> int:
    number = parse_number(family, name, text)
    if number != int(number) or number < lo:
        raise CatalogueError(f"catalogue {family}: option {name}={text!r} must be an integer >= {lo}")
    return int(number)


def parse_round(family: str, params: tuple[Param, ...], text: str, options: str) -> Points:
    """The Points of a round's spec text (``POINT;POINT;...``, each ``NAME=VALUE,...`` with the
    others at their defaults) and options (``round=R&first=F[&ttc=S]``)."""
    found = _options(family, options)
    if not text.strip():
        raise CatalogueError(f"catalogue {family}: a refinement round needs points POINT;POINT;...")
    known = {p.name: p for p in params}
    rows = []
    for item in text.split(";"):
        given = parse_items(family, params, item)
        values = {n: known[n].check(family, parse_number(family, n, v)) for n, v in given.items()}
        rows.append(tuple(values.get(p.name, p.default) for p in params))
    ttc = parse_number(family, "ttc", found["ttc"]) if "ttc" in found else None
    return Points(
        family=family,
        names=tuple(known),
        values=tuple(rows),
        round=_count(family, "round", found["round"], 1),
        first=_count(family, "first", found["first"], 0),
        ttc=ttc,
    )
