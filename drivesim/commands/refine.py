"""CLI: ``drivesim refine DIR --rounds N [--ttc S]`` (thin layer over drivesim.pipeline.refinement).

A command of its own rather than a ``drivesim run`` option: refinement reads the results of a
finished grid campaign and grows that campaign, so it takes the campaign directory (like
``report``, ``show`` and ``verify``) and leaves ``run``'s promise intact (the same ``run``
command resumes the same campaign). Rerunning the same ``refine`` command resumes it.
"""

from __future__ import annotations

import pathlib
from typing import Annotated

import typer


def refine(
    directory: Annotated[
        pathlib.Path, typer.Argument(help="Campaign directory of a catalogue grid campaign.")
    ],
    rounds: Annotated[
        int, typer.Option(help="Refinement rounds the campaign should have in all (1..10).")
    ] = 3,
    ttc: Annotated[
        float | None,
        typer.Option(help="Also count a point as failed when its min TTC is below this many seconds."),
    ] = None,
) -> None:
    """Refine a catalogue grid near its failure boundary: split every cell whose corners
    disagree (collided or not, per policy) at its midpoints and run the new points in the
    same campaign, round after round (resumable; stops early when no cell disagrees)."""
    import jax
    from rich.console import Console

    from drivesim.commands.run_outcome import check_outcome as _check_outcome
    from drivesim.commands.run_outcome import write_report
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import read_config
    from drivesim.pipeline.refinement import RefineSettings, RoundEvent, catalogue_parts, refine_campaign
    from drivesim.pipeline.sandbox import require_campaign
    from drivesim.report.live import LiveView

    settings = RefineSettings(rounds, ttc)
    settings.check()
    require_campaign(directory)
    catalogue_parts(read_config(directory))  # no grid to refine: one error line, before any output
    console = Console(stderr=True)
    results = []

    def run(config):
        with LiveView(console=console, title="scenarios") as view:
            results.append(run_campaign(config, progress=view.update))
        return results[-1]

    def on_round(event: RoundEvent) -> None:
        added = ", ".join(f"{family} {n:,}" for family, n in event.points.items())
        console.print(
            f"refinement round {event.round}/{rounds}: {sum(event.points.values()):,} new points ({added}), "
            f"scenario ids from {event.first:,}"
        )

    console.print(f"campaign [bold]{directory}[/bold]: finishing the grid and the stored rounds")
    events = refine_campaign(directory, settings, run, on_round)
    done = catalogue_parts(read_config(directory)).done
    early = f"; stopped early after round {done}: no cell disagrees" if done < rounds else ""
    last = results[-1]
    out = Console()
    out.print(
        f"done: {last.total:,} scenarios, {done} refinement rounds ({len(events)} added now){early}; "
        f"{last.failed:,} failed to load"
    )
    if jax.process_index() == 0:
        write_report(str(directory), out)
    _check_outcome(last, directory, out)


def register(app: typer.Typer) -> None:
    """Add refine to ``app``."""
    app.command("refine")(refine)
