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
    """Entry point of the ``drivesim`` console script.

    Campaigns promise the same results whatever the device count, so the CLI asks XLA:CPU
    for FMA-free programs before JAX starts (see drivesim.parallel.determinism; about 13%
    slower on CPU). Set DRIVESIM_ALLOW_FMA=1 to trade that guarantee for speed.
    """
    import os

    if os.environ.get("DRIVESIM_ALLOW_FMA") != "1":
        from drivesim.parallel import determinism

        determinism.enable()
    app()


if __name__ == "__main__":
    main()
