"""CLI: ``drivesim devices``."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the engine/device commands to ``app``."""

    @app.command()
    def devices() -> None:
        """List the JAX devices this process can see (platform, kind, count)."""
        import jax
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"JAX {jax.__version__} devices (backend: {jax.default_backend()})")
        for column in ("id", "platform", "kind", "process"):
            table.add_column(column)
        for d in jax.devices():
            table.add_row(str(d.id), d.platform, d.device_kind, str(d.process_index))
        Console().print(table)
