"""Named parameters of catalogue families and the grid syntax over them.

A grid is ``NAME=START:STOP:COUNT`` (``COUNT`` evenly spaced values from ``START`` to ``STOP``,
both included) or ``NAME=VALUE`` for each named parameter, joined by commas; a parameter not
named keeps its default. The grid's points are enumerated in C order over the family's
declared parameter order (the first declared parameter varies slowest), whatever order the
spec names them in, so position ``p`` of a grid is always the same scenario.

``NAME=LO:HI`` ranges with ``&samples=N`` sample a family instead of gridding it
(:mod:`drivesim.scenarios.catalogue.sampling`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_GRID = 10_000_000  # most points of one grid (positions are int32 scenario ids)


class CatalogueError(ValueError):
    """A bad family, parameter or grid; the message is one line naming the family and the
    parameter."""


@dataclass(frozen=True)
class Param:
    """One named parameter: ``lo``..``hi`` inclusive range in ``unit``, ``default`` value."""

    name: str
    unit: str
    lo: float
    hi: float
    default: float
    doc: str

    def check(self, family: str, value: float) -> float:
        """``value`` as a float; CatalogueError when not finite or outside [lo, hi]."""
        if not math.isfinite(value):
            raise CatalogueError(f"catalogue {family}: parameter {self.name}={value} is not a finite number")
        if not self.lo <= value <= self.hi:
            raise CatalogueError(
                f"catalogue {family}: parameter {self.name}={value:g} outside "
                f"[{self.lo:g}, {self.hi:g}] {self.unit}"
            )
        return float(value)


@dataclass(frozen=True)
class Grid:
    """The parameter grid of one family: ``values[k]`` (count_k,) float64 for parameter
    ``names[k]`` (the family's declared order)."""

    family: str
    names: tuple[str, ...]
    values: tuple[np.ndarray, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.values)

    def __len__(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def describe(self) -> str:
        """``N scenarios (NAME xCOUNT, ...)``."""
        axes = ", ".join(f"{n} x{len(v)}" for n, v in zip(self.names, self.values, strict=True))
        return f"{len(self)} scenarios ({axes})"

    def box(self) -> tuple[dict[str, float], dict[str, float]]:
        """({name: lowest value}, {name: highest value}) over the grid."""
        return (
            {n: float(v.min()) for n, v in zip(self.names, self.values, strict=True)},
            {n: float(v.max()) for n, v in zip(self.names, self.values, strict=True)},
        )

    def point(self, position: int) -> dict[str, float]:
        """The parameters {name: value} of grid position ``position`` in [0, len)."""
        index = np.unravel_index(position, self.shape)
        return {n: float(v[i]) for n, v, i in zip(self.names, self.values, index, strict=True)}


def parse_number(family: str, name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise CatalogueError(f"catalogue {family}: parameter {name}: {text!r} is not a number") from None


def _axis(family: str, param: Param, text: str) -> np.ndarray:
    parts = text.split(":")
    if len(parts) == 1:
        return np.array([param.check(family, parse_number(family, param.name, parts[0]))])
    if len(parts) != 3:
        raise CatalogueError(
            f"catalogue {family}: parameter {param.name}={text!r}: expected VALUE or START:STOP:COUNT"
            " (a range LO:HI needs &samples=N)"
        )
    start, stop = (param.check(family, parse_number(family, param.name, p)) for p in parts[:2])
    count = parse_number(family, param.name, parts[2])
    if not (count >= 1 and count == int(count)):
        raise CatalogueError(
            f"catalogue {family}: parameter {param.name}: COUNT {parts[2]!r} must be an integer >= 1"
        )
    if count == 1 and start != stop:
        raise CatalogueError(f"catalogue {family}: parameter {param.name}: COUNT 1 needs START == STOP")
    return np.linspace(start, stop, int(count))


def parse_items(family: str, params: tuple[Param, ...], text: str) -> dict[str, str]:
    """``{name: value text}`` of ``NAME=VALUE,...`` (CatalogueError for an unknown, empty or
    repeated parameter)."""
    known = {p.name for p in params}
    given: dict[str, str] = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        name, eq, value = (s.strip() for s in item.partition("="))
        if name not in known:
            raise CatalogueError(f"catalogue {family}: unknown parameter {name!r}; known: {', '.join(known)}")
        if not eq or not value:
            raise CatalogueError(
                f"catalogue {family}: parameter {name}: expected {name}=VALUE or START:STOP:COUNT"
            )
        if name in given:
            raise CatalogueError(f"catalogue {family}: parameter {name} given twice")
        given[name] = value
    return given


def parse_grid(family: str, params: tuple[Param, ...], text: str) -> Grid:
    """The Grid of ``text`` (``NAME=START:STOP:COUNT,NAME=VALUE,...``; empty: the defaults)."""
    known = {p.name: p for p in params}
    given = {
        name: _axis(family, known[name], value) for name, value in parse_items(family, params, text).items()
    }
    values = tuple(given.get(p.name, np.array([p.default])) for p in params)
    grid = Grid(family, tuple(known), values)
    if len(grid) > MAX_GRID:
        raise CatalogueError(f"catalogue {family}: grid of {len(grid)} points, more than {MAX_GRID}")
    return grid


def check_values(family: str, params: tuple[Param, ...], values: dict[str, float]) -> dict[str, float]:
    """``values`` completed with defaults and range-checked (CatalogueError naming the
    family and the parameter)."""
    known = {p.name: p for p in params}
    for name in values:
        if name not in known:
            raise CatalogueError(f"catalogue {family}: unknown parameter {name!r}; known: {', '.join(known)}")
    return {p.name: p.check(family, float(values.get(p.name, p.default))) for p in params}
