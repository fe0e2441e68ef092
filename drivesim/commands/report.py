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


REPORTABLE = ("campaign.toml", "ledger.sqlite", "results", "bench", "scale", "profile")


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
    from drivesim.pipeline.validation import ConfigError
    from drivesim.report.dashboard import write_dashboard

    if not directory.is_dir():
        raise ConfigError(f"report {directory}: no such directory (a campaign or a bench/scale output)")
    if not any((directory / name).exists() for name in REPORTABLE):
        raise ConfigError(
            f"report {directory}: nothing to report (no campaign.toml, ledger, results/, bench/ or scale/)"
        )
    refuse_campaign_file(directory, out)
    if viewers and (directory / "campaign.toml").is_file() and (directory / "results").is_dir():
        from drivesim.report.worst import write_worst_viewers

        try:
            _refuse_code(directory, import_policy)
            write_worst_viewers(directory, import_policy=import_policy)
        except Exception as exc:  # noqa: BLE001 - the dashboard links `drivesim show` commands instead
            typer.echo(f"scenario viewers not written ({type(exc).__name__}: {exc})", err=True)
    path = write_dashboard(directory, out)
    typer.echo(f"dashboard written to {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    if serve:
        _serve(directory, port)


def _refuse_code(directory: Path, import_policy: bool) -> None:
    """ConfigError when the campaign's policy is code and --import-policy was not given (even
    when no viewer is missing: the flag is what lets ``report`` and ``show`` run it)."""
    from drivesim.pipeline.config import policy_spec, read_config
    from drivesim.pipeline.policy_names import is_user_code

    config = read_config(directory)
    if not import_policy and not config.sweep and is_user_code(config.policy):
        policy_spec(config, allow_import=False)  # raises the one-line refusal


def _serve(directory: Path, port: int) -> None:
    from drivesim.pipeline.validation import ConfigError
    from drivesim.report.server import LiveDashboardServer

    try:
        server = LiveDashboardServer(directory, port=port)  # binds the port
    except OSError as err:
        raise ConfigError(
            f"--port {port}: cannot serve on 127.0.0.1:{port} ({err.strerror or err})"
        ) from None  # noqa: E501
    with server:
        typer.echo(f"serving the live dashboard on {server.url} (Ctrl-C stops)")
        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            typer.echo("stopped")


def register(app: typer.Typer) -> None:
    """Add this room's commands to app."""
    app.command("report")(report)
