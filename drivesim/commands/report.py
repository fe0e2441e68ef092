"""CLI commands of the report room: ``drivesim report DIR [--out FILE] [--serve]``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

DirArg = Annotated[Path, typer.Argument(help="Campaign directory (or a bench/scale output directory).")]
OutOpt = Annotated[Path | None, typer.Option(help="Where to write the HTML (default DIR/dashboard.html).")]
ViewersOpt = Annotated[
    bool, typer.Option(help="Also write the viewer pages of the worst scenarios (re-simulates them).")
]
ServeOpt = Annotated[bool, typer.Option(help="Also serve it on 127.0.0.1, refreshed as results land.")]
ImportPolicyOpt = Annotated[
    bool,
    typer.Option(
        "--import-policy",
        help="Import the user policy module (package.module:NAME) the campaign names, to re-simulate "
        "its scenarios (off: a campaign's files are data and run no code).",
    ),
]
PortOpt = Annotated[int, typer.Option(help="Port for --serve (0: a free port, printed).", min=0, max=65535)]


def report(
    directory: DirArg,
    out: OutOpt = None,
    serve: ServeOpt = False,
    port: PortOpt = 0,
    viewers: ViewersOpt = True,
    import_policy: ImportPolicyOpt = False,
) -> None:
    """Write a self-contained HTML dashboard (plotly embedded, works offline) of a campaign."""
    from drivesim.pipeline.outputs import refuse_campaign_file
    from drivesim.report.dashboard import write_dashboard

    if not directory.is_dir():
        typer.echo(f"drivesim report: {directory} is not a directory", err=True)
        raise typer.Exit(2)
    refuse_campaign_file(directory, out)
    if viewers and (directory / "campaign.toml").is_file() and (directory / "results").is_dir():
        from drivesim.report.worst import write_worst_viewers

        try:
            write_worst_viewers(directory, import_policy=import_policy)
        except Exception as exc:  # noqa: BLE001 - the dashboard links `drivesim show` commands instead
            typer.echo(f"scenario viewers not written ({type(exc).__name__}: {exc})", err=True)
    path = write_dashboard(directory, out)
    typer.echo(f"dashboard written to {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    if serve:
        _serve(directory, port)


def _serve(directory: Path, port: int) -> None:
    from drivesim.report.server import LiveDashboardServer

    with LiveDashboardServer(directory, port=port) as server:
        typer.echo(f"serving the live dashboard on {server.url} (Ctrl-C stops)")
        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            typer.echo("stopped")


def register(app: typer.Typer) -> None:
    """Add this room's commands to app."""
    app.command("report")(report)
