"""The click command behind the typer app, for the generated CLI reference of the docs site.

``docs/reference/cli.md`` renders it with mkdocs-click (``:module: drivesim.cli_reference``,
``:command: command``), so the reference is the commands' own options and help, never a copy.
"""

from __future__ import annotations

import typer

from drivesim.cli import app

command = typer.main.get_command(app)
