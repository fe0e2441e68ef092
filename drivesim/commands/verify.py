"""CLI: ``drivesim verify DIR`` (ledger vs shards; thin layer over drivesim.pipeline.verify)."""

from __future__ import annotations

import pathlib
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add verify to ``app``."""

    @app.command()
    def verify(directory: Annotated[pathlib.Path, typer.Argument(help="Campaign directory.")]) -> None:
        """Check every done batch's shard against the ledger (exists, checksum, opens, row count);
        list stray files. Exit status 1 when a shard is missing or damaged (rerun the campaign
        to redo those batches)."""
        from drivesim.commands.errors import CampaignFailed
        from drivesim.pipeline.sandbox import require_campaign
        from drivesim.pipeline.verify import check_campaign

        require_campaign(directory)
        report = check_campaign(directory)
        for line in report.lines():
            typer.echo(line)
        if not report.clean:
            bad = len(report.missing) + len(report.damaged)
            raise CampaignFailed(
                f"{directory}: {bad} result shards missing or damaged; rerun the campaign "
                f"(drivesim run --resume {directory}) to redo those batches"
            )
        typer.echo("ok")
