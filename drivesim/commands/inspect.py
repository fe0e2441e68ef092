"""CLI: ``drivesim show``, ``drivesim compare``, ``drivesim export`` (thin layers over
drivesim.report.replay / viewer, drivesim.report.compare and the results view)."""

from __future__ import annotations

import pathlib
from typing import Annotated

import typer

from drivesim.commands.report import ImportPolicyOpt

EXPORT_FORMATS = ("csv", "parquet", "jsonl")


def _fail(message: str) -> None:
    """One clear line on stderr, exit status 2 (no traceback)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def show(
    directory: Annotated[pathlib.Path, typer.Argument(help="Campaign directory.")],
    scenario: Annotated[int, typer.Option("--scenario", help="Scenario id (the results' scenario_id).")],
    policy: Annotated[
        str | None,
        typer.Option(help="Policy name or id (default: the policy under which the scenario did worst)."),
    ] = None,
    out: Annotated[
        pathlib.Path | None,
        typer.Option(help="HTML file to write (default: DIR/viewers/scenario-ID-pP.html)."),
    ] = None,
    import_policy: ImportPolicyOpt = False,
) -> None:
    """Re-simulate one scenario of a campaign and write an HTML animation of it."""
    from drivesim.pipeline.outputs import refuse_campaign_file
    from drivesim.report import replay
    from drivesim.report.viewer import write_page

    if not (directory / "campaign.toml").is_file():
        _fail(f"{directory}: not a campaign directory (no campaign.toml)")
    refuse_campaign_file(directory, out)
    try:
        rep = replay.replay(directory, scenario, policy, import_policy)
    except (ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    target = out or directory / replay.VIEWERS_DIR / replay.viewer_name(rep.scenario_id, rep.policy_id)
    path = write_page(replay.render_replay(rep), target)
    m = rep.metrics
    collided = f"collision at step {m['collision_step']}" if m["ego_collided"] else "no collision"
    typer.echo(f"scenario {rep.scenario_id} ({rep.record.name}) under {rep.policy}: {collided}", err=True)
    typer.echo(str(path))


def compare(
    directories: Annotated[
        list[pathlib.Path],
        typer.Argument(help="Campaign directories; one directory compares the policies of its sweep."),
    ],
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
) -> None:
    """Paired comparison of campaigns (or a sweep's policies) on their shared scenarios.

    Rates and means with 95% intervals, differences against the first arm with p-values, and
    the scenarios whose collision outcome flips.
    """
    from drivesim.report.compare import compare_dirs, format_text
    from drivesim.report.strict_json import dumps

    for d in directories:
        if not d.is_dir():
            _fail(f"{d}: no such campaign directory")
    try:
        result = compare_dirs(directories)
    except ValueError as exc:
        _fail(str(exc))
    typer.echo(dumps(result.as_dict()) if json_out else format_text(result))


def export(
    directory: Annotated[pathlib.Path, typer.Argument(help="Campaign directory.")],
    format: Annotated[str, typer.Option("--format", help="csv | parquet | jsonl.")] = "csv",  # noqa: A002
    out: Annotated[
        pathlib.Path | None,
        typer.Option(help="File to write (default: stdout for csv/jsonl, DIR/results.parquet for parquet)."),
    ] = None,
) -> None:
    """Write the campaign's results (one row per scenario and policy) as CSV, Parquet or JSON lines."""
    import sys

    from drivesim.pipeline.outputs import refuse_campaign_file
    from drivesim.report.export import export_results

    if format not in EXPORT_FORMATS:
        _fail(f"--format {format!r}: expected one of {', '.join(EXPORT_FORMATS)}")
    if not directory.is_dir():
        _fail(f"{directory}: no such campaign directory")
    refuse_campaign_file(directory, out)
    if out is None and format == "parquet":
        out = directory / "results.parquet"
    rows = export_results(directory, format, out if out is not None else sys.stdout)
    if out is not None:
        typer.echo(f"{rows:,} rows written to {out}", err=True)


def register(app: typer.Typer) -> None:
    """Add show / compare / export to ``app``."""
    app.command("show")(show)
    app.command("compare")(compare)
    app.command("export")(export)
