"""Refinement rounds of a catalogue campaign: run the points of
:func:`drivesim.scenarios.catalogue.refine.next_points` in the same campaign directory.

Each round appends one source spec per refined family to ``campaign.toml``
(``catalogue:FAMILY?POINT;...&round=R&first=F``: its points as further positions, numbered
from F, the campaign's length before it) and re-records the campaign's identity in the ledger
(the earlier positions are unchanged: the campaign only grows), then runs the campaign, which
computes just the new positions. A round's points are a pure function of the results of the
rounds before it, and a round is written to ``campaign.toml`` before any of its points run, so
a refinement killed at any point and run again ends with the same points, none lost or
repeated: the stored rounds are finished first, then the rounds still missing are added.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

from drivesim.pipeline.config import CampaignConfig, read_config, write_config
from drivesim.pipeline.validation import ConfigError
from drivesim.scenarios.catalogue.params import Grid
from drivesim.scenarios.catalogue.refine import Points, next_points, point_key, round_spec

MAX_ROUNDS = 10  # each round can double the points near the boundary along every parameter


@dataclass(frozen=True)
class RefineSettings:
    """rounds: refinement rounds the campaign should have in all (1..MAX_ROUNDS); ttc_s: a
    point also fails when its min TTC is below this [s] (None: collisions only)."""

    rounds: int
    ttc_s: float | None = None

    def check(self) -> None:
        """ConfigError (one line naming the option) for a bad value."""
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise ConfigError(f"--rounds {self.rounds}: expected 1..{MAX_ROUNDS}")
        if self.ttc_s is not None and not (math.isfinite(self.ttc_s) and self.ttc_s > 0):
            raise ConfigError(f"--ttc {self.ttc_s}: expected a positive number of seconds")


@dataclass(frozen=True)
class RoundEvent:
    """A round about to run: its number, new points per family, positions before it."""

    round: int
    points: dict[str, int]
    first: int


@dataclass(frozen=True)
class CatalogueParts:
    """A campaign's catalogue grids to refine ({family: Grid}) and its rounds so far
    (Points in source order)."""

    grids: dict[str, Grid]
    rounds: list[Points]

    @property
    def done(self) -> int:
        return max((p.round for p in self.rounds), default=0)


def catalogue_parts(config: CampaignConfig) -> CatalogueParts:
    """The grids and rounds of ``config.sources`` (ConfigError when there is no grid to refine,
    or two grids of one family)."""
    from drivesim.scenarios.catalogue.families import family
    from drivesim.scenarios.catalogue.source import checked_points, split_arg

    grids: dict[str, Grid] = {}
    rounds: list[Points] = []
    for spec in config.sources:
        kind, _, arg = spec.partition(":")
        if kind != "catalogue":
            continue
        name, text = split_arg(arg)
        points = checked_points(family(name), text, config.seed)
        if isinstance(points, Points):
            rounds.append(points)
        elif isinstance(points, Grid):
            if points.family in grids:
                raise ConfigError(
                    f"refine: two catalogue grids of {points.family}; refine one grid per family"
                )
            grids[points.family] = points
    if not grids:
        raise ConfigError(
            "refine: the campaign has no catalogue grid source (catalogue:FAMILY?NAME=START:STOP:COUNT,...)"
        )
    return CatalogueParts(grids, rounds)


def point_outcomes(directory, family: str, ttc_s: float | None) -> dict[tuple[str, ...], tuple | None]:
    """{point_key: outcome} of every evaluated point of ``family``: a tuple (one per policy, by
    policy id) of "failed" (collided, or min TTC below ``ttc_s``); None when some row of the
    point is not ok (failed to load)."""
    from drivesim.pipeline import results

    ttc = "FALSE" if ttc_s is None else f"coalesce(min_ttc_s < {float(ttc_s)!r}, FALSE)"
    quoted = "'" + family.replace("'", "''") + "'"
    table = results.query(
        directory,
        f"""SELECT name, list(CASE WHEN status = 'ok' THEN coalesce(ego_collided, FALSE) OR {ttc} END
                              ORDER BY policy_id) AS fails
            FROM results WHERE source = 'catalogue' AND family = {quoted} GROUP BY name""",
    )
    out: dict[tuple[str, ...], tuple | None] = {}
    for name, fails in zip(table.column("name").to_pylist(), table.column("fails").to_pylist(), strict=True):
        values = [float(item.partition("=")[2]) for item in str(name).partition("?")[2].split(",")]
        out[point_key(values)] = None if any(f is None for f in fails) else tuple(fails)
    return out


def record_extension(directory, config: CampaignConfig) -> None:
    """Write ``config`` (the campaign grown by rounds) as the campaign's config and identity:
    ``campaign.toml`` first, then the ledger's fingerprints (a refinement rerun redoes this,
    so a kill between the two is healed)."""
    from drivesim.pipeline import fingerprint
    from drivesim.pipeline.ledger import Ledger

    directory = pathlib.Path(directory)
    write_config(config, directory)
    with Ledger(directory) as ledger:
        known = json.loads(ledger.meta().get("inputs", "{}"))
        ledger.set_meta(
            inputs=json.dumps(fingerprint.input_fingerprints(config, known), sort_keys=True),
            identity=json.dumps(config.identity()),
            config_sha256=fingerprint.config_sha256(directory) or "",
        )


def refine_campaign(
    directory,
    settings: RefineSettings,
    run: Callable[[CampaignConfig], object],
    on_round: Callable[[RoundEvent], None] = lambda event: None,
) -> list[RoundEvent]:
    """Finish the campaign in ``directory`` (its base grid and stored rounds), then add rounds
    up to ``settings.rounds``, stopping early at a round without points. ``run(config)`` runs
    the campaign and returns its CampaignResult (its ``total`` is the campaign's length).
    A run with a failed batch stops the refinement (RuntimeError): the next round needs every
    outcome of this one. Returns the rounds added now."""
    settings.check()
    stored = read_config(directory)
    config = dataclasses.replace(stored, out=str(directory), cluster=None, workers=None)  # one machine
    parts = catalogue_parts(config)
    for points in parts.rounds:
        if points.ttc != settings.ttc_s:
            raise ConfigError(
                f"refine: {directory} was refined with ttc {points.ttc} (now {settings.ttc_s}): "
                "use the same --ttc, or another campaign"
            )
    if parts.rounds:
        record_extension(directory, config)  # heals a kill between campaign.toml and the ledger
    events = []
    result = _complete(run(config), directory, parts.done)
    for number in range(parts.done + 1, settings.rounds + 1):
        total = int(result.total)
        specs: list[str] = []
        counts: dict[str, int] = {}
        for name, grid in parts.grids.items():
            found = next_points(grid, point_outcomes(directory, name, settings.ttc_s))
            if found:
                specs.append(round_spec(name, found, number, total + sum(counts.values()), settings.ttc_s))
                counts[name] = len(found)
        if not specs:
            break
        config = dataclasses.replace(config, sources=config.sources + tuple(specs))
        record_extension(directory, config)
        event = RoundEvent(number, counts, total)
        on_round(event)
        events.append(event)
        result = _complete(run(config), directory, number)
    return events


def _complete(result, directory, number: int):
    """``result`` when every batch ran; RuntimeError naming the round otherwise."""
    failed = int(getattr(result, "failed_batches", 0))
    if failed:
        raise RuntimeError(
            f"{directory}: refinement round {number}: {failed} batches failed to run; "
            "rerun the same drivesim refine command to retry them"
        )
    return result
