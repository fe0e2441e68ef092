"""drivesim command line: a thin typer layer over the library.

Each room registers its commands from ``drivesim/commands/<room>.py``; this file only
assembles them.
"""

from __future__ import annotations

import typer

from drivesim.commands import bench, campaign, engine, inspect, refine, report, scenarios, train, verify

app = typer.Typer(
    help="drivesim: simulate autonomous-driving scenarios by the million on every JAX device.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    debug: bool = typer.Option(
        False, "--debug", help="Show the Python traceback of an error (also DRIVESIM_DEBUG=1)."
    ),
) -> None:
    """drivesim: simulate autonomous-driving scenarios by the million on every JAX device."""
    if debug:
        import os

        os.environ["DRIVESIM_DEBUG"] = "1"


for module in (engine, scenarios, campaign, bench, report, train, inspect, verify, refine):
    module.register(app)


def main() -> None:
    """Entry point of the ``drivesim`` console script.

    Before JAX starts: DEVICES_PER_CORE (4) XLA CPU devices per usable core (faster than one
    device on this engine, see drivesim.parallel.cpu_devices; XLA_FLAGS with a device count
    wins, but a count of one becomes two unless FMA-free). Campaigns give the same results
    whatever the device count: executors run a single CPU device as a pair, or, with
    DRIVESIM_FMA_FREE=1, programs are FMA-free (about 16% slower; see
    drivesim.parallel.determinism). Compiled programs are cached between runs
    (drivesim.parallel.compile_cache; DRIVESIM_JAX_CACHE=DIR or off).
    """
    import sys

    from drivesim.pipeline.interrupt import exit_status, signal_name, sigterm_interrupts

    with sigterm_interrupts():  # SIGTERM from the first line on: a clean stop, exit 143
        try:
            from drivesim.commands.errors import run_app
            from drivesim.parallel import compile_cache, cpu_devices, determinism

            cpu_devices.enable()
            determinism.configure()  # DRIVESIM_FMA_FREE=1: FMA-free programs
            compile_cache.enable()  # persistent compilation cache (DRIVESIM_JAX_CACHE=off: none)
            run_app(app)  # one line "drivesim: error: ..." and exit 2 (usage) / 1 (failure)
        except KeyboardInterrupt as stop:  # before a command could say what it saved
            print(f"drivesim: interrupted by {signal_name(stop)}", file=sys.stderr)
            sys.exit(exit_status(stop))


if __name__ == "__main__":
    main()
