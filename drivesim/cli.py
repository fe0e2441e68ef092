"""drivesim command line: a thin typer layer over the library.

Each room registers its commands from ``drivesim/commands/<room>.py``; this file only
assembles them.
"""

from __future__ import annotations

import typer

from drivesim.commands import bench, campaign, engine, report, scenarios, train

app = typer.Typer(
    help="drivesim: simulate autonomous-driving scenarios by the million on every JAX device.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



@app.callback()
def _root() -> None:
    """drivesim: simulate autonomous-driving scenarios by the million on every JAX device."""


for module in (engine, scenarios, campaign, bench, report, train):
    module.register(app)


def main() -> None:
    """Entry point of the ``drivesim`` console script."""
    app()


if __name__ == "__main__":
    main()
