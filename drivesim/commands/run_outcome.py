"""How ``drivesim run`` ends: its closing lines and exit status (failed scenarios, failed
batches, a stall, a signal), and the one refusal it makes before building a config."""

from __future__ import annotations

import pathlib

import typer


def refuse_uncounted(sources, count: int) -> None:
    """--count given where no source takes a count: a usage error, never ignored."""
    from drivesim.pipeline.validation import ConfigError
    from drivesim.scenarios.registry import SourceSpecError, kind_of

    try:
        kinds = [kind_of(spec) for spec in sources]
    except SourceSpecError:
        return  # the source check names the bad spec
    if any(kind.counted for kind in kinds):
        return
    hint = ""
    if any(kind.name == "catalogue" for kind in kinds):
        hint = "; for N uniform samples: catalogue:FAMILY?NAME=LO:HI,...&samples=N"
    raise ConfigError(
        f"--count {count}: {', '.join(sources)} give the scenarios their arguments name, not a count{hint}"
    )


def exit_interrupted(console, stop: KeyboardInterrupt, directory) -> None:
    """One line of what a signal left saved, then the signal's exit status."""
    from drivesim.pipeline.interrupt import exit_status, signal_name

    name = signal_name(stop)
    saved = getattr(stop, "saved", None)
    what = (
        f"{saved['done']:,} of {saved['total']:,} scenarios saved ({saved['this_run']:,} in this run)"
        if saved
        else "what was written is kept"
    )
    console.print(f"interrupted by {name}: {what}; drivesim run --resume {directory} goes on", soft_wrap=True)
    raise typer.Exit(exit_status(stop))


def check_outcome(result, directory, console) -> None:
    """Summarize failed scenarios (exit 0) and raise CampaignFailed (exit 1) when a batch
    failed to run or nothing was computed."""
    from drivesim.commands.errors import CampaignFailed
    from drivesim.pipeline.outcome import failure_reasons

    if result.failed:
        console.print(f"[yellow]{result.failed:,} scenarios failed (bad input); top reasons:[/yellow]")
        for reason, n in failure_reasons(directory):
            console.print(f"  {n:>7,}  {reason}")
    if result.failed_batches:
        raise CampaignFailed(
            f"{result.failed_batches} batches failed to run (see the ledger's batches.error); "
            f"rerun to retry them: drivesim run --resume {directory}"
        )
    if not result.total:
        raise CampaignFailed(f"nothing to compute: the sources of {directory} hold no scenarios")
    if result.total and result.done - result.failed <= 0:
        raise CampaignFailed(f"nothing was computed: all {result.total:,} scenarios failed to load")


def exit_stalled(console, err) -> None:
    """Report a stalled campaign and exit 3 at once (stuck loader threads would block a
    normal interpreter exit)."""
    import os
    import sys

    console.print(f"[red]error:[/red] {err}")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(3)


def write_report(directory, console, stop=None) -> None:
    """The worst scenarios' viewers, then the dashboard (skipped once ``stop.received``: a
    pipeline.interrupt.Deferred)."""
    try:
        from drivesim.report.worst import write_worst_viewers

        viewers = write_worst_viewers(directory, import_policy=True)  # run imports what it ran
        if viewers:
            console.print(f"viewers of the worst scenarios: {pathlib.Path(viewers[0]).parent}")
    except Exception as exc:  # noqa: BLE001 - the dashboard links `drivesim show` commands instead
        console.print(f"[yellow]scenario viewers not written ({type(exc).__name__}: {exc})[/yellow]")
    if stop is not None and stop.received:
        return
    try:
        from drivesim.report.dashboard import write_dashboard

        path = write_dashboard(directory)
    except Exception as exc:  # noqa: BLE001 - results are written; only the page failed
        console.print(
            f"[yellow]dashboard not written ({type(exc).__name__}: {exc}); "
            f"try: drivesim report {directory}[/yellow]"
        )
        return
    console.print(f"dashboard: [bold]{pathlib.Path(path).resolve()}[/bold]")
