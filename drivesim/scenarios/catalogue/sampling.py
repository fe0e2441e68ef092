"""Random sampling of a catalogue family: ``FAMILY?NAME=LO:HI,NAME=VALUE,...&samples=N``.

Each ``NAME=LO:HI`` range is drawn uniformly, ``N`` points in all; parameters given as
``NAME=VALUE`` or not named stay fixed. Position ``p``'s point is a pure function of (campaign
seed, family, p): its uniforms come from ``np.random.default_rng([TAG, family, seed, p])``,
a generator seeded by the position itself (counter based, not a sequential stream), one
uniform per declared parameter, so ``p`` is the same point whatever the batch, bucket or
resume, and sampling one more parameter leaves the others' draws as they were. A drawn value
has 6 significant digits (rounded, kept in [LO, HI]), so the point's name (``%g``) holds it
exactly and ``param_sql`` reads back the simulated value.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from drivesim.scenarios.catalogue.params import (
    MAX_GRID,
    CatalogueError,
    Grid,
    Param,
    parse_grid,
    parse_items,
    parse_number,
)
from drivesim.scenarios.catalogue.refine import Points, is_round, parse_round

SAMPLES = "samples"  # the option naming the number of points
TAG = 0x63617461  # keeps these streams apart from other users of (seed, position)
DIGITS = 6  # significant digits of a drawn value


@dataclass(frozen=True)
class Sampling:
    """``count`` points of one family: parameter ``names[k]`` (declared order) uniform in
    [``lo[k]``, ``hi[k]``] (``lo == hi``: fixed), drawn from ``seed`` and the position."""

    family: str
    names: tuple[str, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    count: int
    seed: int = 0

    @property
    def sampled(self) -> tuple[str, ...]:
        """The names of the parameters drawn from a range."""
        return tuple(n for n, a, b in zip(self.names, self.lo, self.hi, strict=True) if a < b)

    def __len__(self) -> int:
        return self.count

    def describe(self) -> str:
        """``N samples (NAME LO..HI, ...), seed S`` (the drawn parameters only)."""
        ranges = ", ".join(
            f"{n} {a:g}..{b:g}" for n, a, b in zip(self.names, self.lo, self.hi, strict=True) if a < b
        )
        return f"{self.count} samples ({ranges}), seed {self.seed}"

    def box(self) -> tuple[dict[str, float], dict[str, float]]:
        """({name: lo}, {name: hi}): the box every drawn point lies in."""
        return dict(zip(self.names, self.lo, strict=True)), dict(zip(self.names, self.hi, strict=True))

    def point(self, position: int) -> dict[str, float]:
        """The parameters {name: value} of position ``position`` in [0, count)."""
        key = [TAG, zlib.crc32(self.family.encode()), int(self.seed) % 2**63, int(position)]
        u = np.random.default_rng(key).random(len(self.names))  # (K,) in [0, 1)
        return {
            n: _draw(a, b, x) for n, a, b, x in zip(self.names, self.lo, self.hi, u.tolist(), strict=True)
        }


def _draw(lo: float, hi: float, u: float) -> float:
    """``lo + u * (hi - lo)`` at DIGITS significant digits, clipped to [lo, hi] (whose ends
    have DIGITS digits, see :func:`_inward`)."""
    if lo == hi:
        return lo
    return min(max(_round(lo + u * (hi - lo)), lo), hi)


def _round(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def _inward(value: float, up: bool) -> float:
    """The nearest number of DIGITS significant digits at or above (``up``) or below ``value``."""
    rounded = _round(value)
    if rounded == value or (rounded > value) == up:
        return rounded
    unit = 10.0 ** (math.floor(math.log10(abs(rounded))) - DIGITS + 1)
    return _round(rounded + unit if up else rounded - unit)


def _range(family: str, param: Param, text: str) -> tuple[float, float]:
    parts = text.split(":")
    if len(parts) == 1:
        value = param.check(family, parse_number(family, param.name, parts[0]))
        return value, value
    if len(parts) != 2:
        raise CatalogueError(
            f"catalogue {family}: parameter {param.name}={text!r}: expected VALUE or LO:HI "
            "with &samples=N (START:STOP:COUNT is a grid)"
        )
    lo, hi = (param.check(family, parse_number(family, param.name, p)) for p in parts)
    if not lo < hi:
        raise CatalogueError(f"catalogue {family}: parameter {param.name}={text}: LO:HI needs LO < HI")
    lo, hi = _inward(lo, up=True), _inward(hi, up=False)
    if not lo < hi:
        raise CatalogueError(
            f"catalogue {family}: parameter {param.name}={text}: narrower than {DIGITS} significant digits"
        )
    return lo, hi


def _samples(family: str, options: str) -> int:
    """N of the ``samples=N`` option (CatalogueError for any other option or a bad N)."""
    found: int | None = None
    for item in (t.strip() for t in options.split("&")):
        if not item:
            continue
        key, eq, value = (s.strip() for s in item.partition("="))
        if key != SAMPLES or not eq:
            raise CatalogueError(f"catalogue {family}: unknown option {item!r}; expected &samples=N")
        if found is not None:
            raise CatalogueError(f"catalogue {family}: option samples given twice")
        try:
            found = int(value)
        except ValueError:
            raise CatalogueError(f"catalogue {family}: samples={value!r} is not an integer") from None
        if not 1 <= found <= MAX_GRID:
            raise CatalogueError(f"catalogue {family}: samples={found} outside [1, {MAX_GRID}]")
    if found is None:
        raise CatalogueError(f"catalogue {family}: an option after & needs samples=N")
    return found


def parse_sampling(
    family: str, params: tuple[Param, ...], text: str, options: str, seed: int = 0
) -> Sampling:
    """The Sampling of parameters ``text`` (``NAME=LO:HI,NAME=VALUE,...``) and ``options``
    (``samples=N``)."""
    count = _samples(family, options)
    known = {p.name: p for p in params}
    given = {
        name: _range(family, known[name], value) for name, value in parse_items(family, params, text).items()
    }
    if not any(lo < hi for lo, hi in given.values()):
        raise CatalogueError(f"catalogue {family}: samples={count} needs a range NAME=LO:HI to draw from")
    bounds = [given.get(p.name, (p.default, p.default)) for p in params]
    return Sampling(
        family=family,
        names=tuple(known),
        lo=tuple(b[0] for b in bounds),
        hi=tuple(b[1] for b in bounds),
        count=count,
        seed=int(seed),
    )


def parse_points(
    family: str, params: tuple[Param, ...], text: str, seed: int = 0
) -> Grid | Sampling | Points:
    """The points of a spec's text after ``?``: a Sampling when it has ``&samples=N``, a
    refinement round's Points with ``&round=R`` (:mod:`drivesim.scenarios.catalogue.refine`),
    else the Grid."""
    grid_text, amp, options = text.partition("&")
    if amp and is_round(options):
        return parse_round(family, params, grid_text, options)
    if amp:
        return parse_sampling(family, params, grid_text, options, seed)
    return parse_grid(family, params, grid_text)
