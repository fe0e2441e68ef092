"""The ``catalogue:`` source kind: ``catalogue:FAMILY[?NAME=START:STOP:COUNT,NAME=VALUE,...]``,
or ``catalogue:FAMILY?NAME=LO:HI,...&samples=N`` for N uniform samples (see
:mod:`drivesim.scenarios.catalogue.sampling`).

Position p of the source is grid point p (C order over the family's declared parameters, the
first slowest) or sample p, scenario id p; its record's ``name`` is the point in the same syntax
(``cut_in?gap=5,dv=-10,lateral=2,speed=20``), so ``drivesim query`` can group by a parameter
with ``regexp_extract(name, '[?,]gap=([^,]+)', 1)::DOUBLE`` (see :func:`param_sql`).

A refinement round's spec ``catalogue:FAMILY?POINT;POINT;...&round=R&first=F`` lists explicit
points (:mod:`drivesim.scenarios.catalogue.refine`); its position p is scenario id F + p.
"""

from __future__ import annotations

from drivesim.core.validate import validate_scenario
from drivesim.scenarios.catalogue.families import Family, family
from drivesim.scenarios.catalogue.params import CatalogueError, Grid, check_values
from drivesim.scenarios.catalogue.refine import Points
from drivesim.scenarios.catalogue.sampling import Sampling, parse_points
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.sources import ScenarioSource

DEFAULT_STEPS = 80  # episode steps when the campaign gives none


def point_name(family_name: str, values: dict[str, float]) -> str:
    """``FAMILY?NAME=VALUE,...`` of one parameter point (values printed with %g)."""
    return family_name + "?" + ",".join(f"{k}={v:g}" for k, v in values.items())


def param_sql(name: str, column: str = "name") -> str:
    """DuckDB expression (DOUBLE) of catalogue parameter ``name`` read from ``column``."""
    return f"CAST(regexp_extract({column}, '[?,]{name}=([^,]+)', 1) AS DOUBLE)"


def make_record(
    family_name: str, values: dict[str, float] | None = None, steps: int = DEFAULT_STEPS, scenario_id: int = 0
) -> ScenarioRecord:
    """The ScenarioRecord of one parameter point (missing parameters at their defaults)."""
    fam = family(family_name)
    checked = check_values(fam.name, fam.params, values or {})
    name = point_name(fam.name, checked)
    scenario = fam.scenario(checked, steps, scenario_id)
    return ScenarioRecord(scenario=scenario, family=fam.name, source="catalogue", name=name)


def split_arg(arg: str) -> tuple[str, str]:
    """``FAMILY?GRID`` -> (family, grid text)."""
    name, _, grid = arg.partition("?")
    return name.strip(), grid


def with_grid(specs: tuple[str, ...], grid: str) -> tuple[str, ...]:
    """``specs`` with ``?GRID`` appended to every ``catalogue:FAMILY`` spec without a grid
    (the CLI's ``--grid``); ValueError when no spec can take it."""
    takes = [s.startswith("catalogue:") and "?" not in s for s in specs]
    if not any(takes):
        raise ValueError(f"--grid {grid!r}: needs a --source catalogue:FAMILY given without a grid")
    return tuple(f"{s}?{grid}" if t else s for s, t in zip(specs, takes, strict=True))


class CatalogueSource(ScenarioSource):
    """The points of one family's parameter grid in grid order, or its samples drawn from
    ``seed``; ``steps`` simulation steps per scenario (the scripted logs cover steps + 1
    entries). ``grid``: the Grid or the Sampling."""

    ids_are_positions = True  # scenario id first_id + p is position p (drivesim.report.replay)

    def __init__(self, arg: str, steps: int = DEFAULT_STEPS, seed: int = 0):
        name, grid_text = split_arg(arg)
        self.family = family(name)
        self.grid: Grid | Sampling | Points = checked_points(self.family, grid_text, seed)
        # a refinement round's points are numbered from their campaign position (unique ids)
        self.first_id = self.grid.first if isinstance(self.grid, Points) else 0
        self.steps = int(steps)
        self.name = f"catalogue:{arg}"

    def __len__(self) -> int:
        return len(self.grid)

    def load(self, position: int) -> ScenarioRecord:
        self._check(position)
        record = make_record(
            self.family.name, self.grid.point(position), self.steps, self.first_id + position
        )
        validate_scenario(record.scenario, where=f"{self.name}#{position}")
        return record

    def describe(self) -> str:
        return f"catalogue {self.family.name}: {self.grid.describe()}, {self.steps} steps"


def open_catalogue(arg: str, context) -> CatalogueSource:
    """Registry opener: the campaign's episode steps come from its synthetic FamilyConfig, the
    samples' seed is the campaign's."""
    steps = context.family.steps if context.family is not None else DEFAULT_STEPS
    return CatalogueSource(arg, steps, context.seed)


def check_catalogue(arg: str) -> None:
    """Registry check: the family and the grid or samples parse (CatalogueError, a ValueError)."""
    name, grid_text = split_arg(arg)
    checked_points(family(name), grid_text)


def checked_points(fam: Family, text: str, seed: int = 0) -> Grid | Sampling | Points:
    """The grid or samples of ``text``, every point within the family's constraints between
    parameters (CatalogueError otherwise)."""
    points = parse_points(fam.name, fam.params, text, seed)
    if fam.check_box is not None:
        fam.check_box(*points.box())
    return points


__all__ = ["CatalogueError", "CatalogueSource", "make_record", "param_sql", "point_name", "with_grid"]
