"""CLI: ``drivesim run``, ``drivesim query``, ``drivesim summary`` (thin layer over drivesim.pipeline)."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Annotated

import typer

from drivesim.commands import run_outcome
from drivesim.commands.report import ImportPolicyOpt
from drivesim.pipeline.validation import BOUNDS
from drivesim.report.rates import rate


def distributed_config(coordinator: str | None, num_processes: int | None, process_id: int | None):
    """The DistributedConfig of ``drivesim run``: the options where given, else the
    DRIVESIM_* (or JAX_*) variables (the environment is read, never written)."""
    from drivesim.parallel.distributed import config_from_env

    base = config_from_env()
    return dataclasses.replace(
        base,
        coordinator=base.coordinator if coordinator is None else coordinator,
        num_processes=base.num_processes if num_processes is None else num_processes,
        process_id=base.process_id if process_id is None else process_id,
    )


def _join_processes(coordinator: str | None, num_processes: int | None, process_id: int | None) -> None:
    """Join the multi-process job (``drivesim.parallel.distributed.initialize``; a no-op for a
    single process). Runs before anything else touches JAX."""
    from drivesim.parallel.distributed import initialize

    initialize(distributed_config(coordinator, num_processes, process_id))


def _int_or_auto(option: str, bound: str, value: str | None):
    """``--option`` as given: None, "auto", or an integer inside BOUNDS[bound] (BadParameter)."""
    if value is None or value == "auto":
        return value
    try:
        number = int(value)
    except ValueError:
        raise typer.BadParameter(f"{option}: expected an integer or 'auto', got {value!r}") from None
    lo, hi = BOUNDS[bound]
    if not lo <= number <= hi:
        raise typer.BadParameter(f"{option}: {number} is outside [{lo}, {hi}]")
    return number


def _batch_size(value: str | None) -> int | str:
    return _int_or_auto("--batch-size", "batch_size", value) or "auto"


def _chunk(value: str | None):
    return _int_or_auto("--chunk", "chunk", value)


def _directory_path(value: str) -> pathlib.Path:
    """A campaign directory given on the command line; an empty one is refused (it would
    otherwise name the current directory)."""
    if not str(value).strip():
        raise typer.BadParameter("an empty path names no campaign directory")
    return pathlib.Path(value)


def _with_grid(sources: tuple[str, ...], grid: str | None) -> tuple[str, ...]:
    """``sources`` with ``--grid`` appended to the catalogue specs that have no grid."""
    if grid is None:
        return sources
    from drivesim.scenarios.catalogue.source import with_grid

    try:
        return with_grid(sources, grid)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


def register(app: typer.Typer) -> None:
    """Add run / query / summary to ``app``."""

    @app.command()
    def run(
        directory: Annotated[
            pathlib.Path | None,
            typer.Argument(help="Campaign directory to resume (with --resume).", parser=_directory_path),
        ] = None,
        source: Annotated[
            list[str] | None,
            typer.Option(
                "--source",
                help="Scenario source, repeatable: synthetic:highway,merge | commonroad:PATH | "
                "womd:PATH (Waymo Open Motion, GPUDrive JSON) | av2:PATH (Argoverse 2) | "
                "store:PATH | catalogue:FAMILY[?GRID]. Default: the demo mix, "
                "synthetic:highway,merge,intersection plus ../shared/data CommonRoad files.",
            ),
        ] = None,
        grid: Annotated[
            str | None,
            typer.Option(
                help="Parameter grid of the catalogue sources given without one, e.g. "
                '"gap=5:40:8,dv=-10:0:6" (NAME=START:STOP:COUNT or NAME=VALUE), or samples: '
                '"gap=5:40,dv=-10:0&samples=500" (NAME=LO:HI drawn uniformly from --seed).'
            ),
        ] = None,
        count: Annotated[
            int | None,
            typer.Option(
                help="Scenarios to generate for synthetic sources (default: 1000; the demo: 600, "
                "under IDM and a tailgating IDM variant).",
                min=BOUNDS["count"][0],
                max=BOUNDS["count"][1],
            ),
        ] = None,
        policy: Annotated[
            str,
            typer.Option(
                help="Ego policy: idm | constant | mlp:FILE[,FILE...] (one policy per checkpoint) "
                "| package.module:NAME (a user EgoPolicy)."
            ),
        ] = "idm",
        sweep: Annotated[
            pathlib.Path | None,
            typer.Option(
                help="TOML/JSON file of IDM variants (TOML: one policy table per variant, e.g. T=1.2 v0=30); "
                "every scenario runs under "
                "each (rows per scenario and policy_id)."
            ),
        ] = None,
        backend: Annotated[
            str, typer.Option(help="Executor backend: sharding | shard_map | pmap.")
        ] = "sharding",
        devices: Annotated[
            int | None,
            typer.Option(help="Number of devices to use (default: all).", min=1, max=BOUNDS["devices"][1]),
        ] = None,
        chunk: Annotated[
            str | None,
            typer.Option(help="Scenarios per device per dispatch: N or 'auto' (default: the whole batch)."),
        ] = None,
        batch_size: Annotated[
            str | None,
            typer.Option(
                help="Scenarios per batch (one ledger entry, one Parquet shard): N or 'auto', about a "
                "second of device time per batch (the default; a resume may change it).",
            ),
        ] = None,
        steps: Annotated[
            int,
            typer.Option(
                help="Simulation steps per scenario.", min=BOUNDS["num_steps"][0], max=BOUNDS["num_steps"][1]
            ),
        ] = 80,
        agents: Annotated[
            int | None,
            typer.Option(
                help="Fixed agent count for synthetic families (default: varied).",
                min=BOUNDS["agents"][0],
                max=BOUNDS["agents"][1],
            ),
        ] = None,
        lane_changes: Annotated[
            bool,
            typer.Option(
                "--lane-changes",
                help="MOBIL lane changes of the IDM agents on multi-lane roads (slower).",
            ),
        ] = False,
        occlusion: Annotated[
            bool,
            typer.Option(
                "--occlusion",
                help="The ego's observation leaves out agents hidden behind others (MLP and user policies).",
            ),
        ] = False,
        position_update: Annotated[
            str,
            typer.Option(
                "--position-update",
                help="How a step moves an agent: euler (by the speed before the step) | ballistic "
                "(by the mean of the speeds before and after it, as SUMO's ballistic mode).",
            ),
        ] = "euler",
        out: Annotated[
            pathlib.Path | None,
            typer.Option(
                help="Campaign directory (default: runs/demo for the demo, runs/run-<hash> otherwise).",
                parser=_directory_path,
            ),
        ] = None,
        resume: Annotated[
            bool,
            typer.Option(
                "--resume",
                help="Resume the campaign in DIR (or --out) with its stored config; rerunning "
                "the same command also resumes.",
            ),
        ] = False,
        seed: Annotated[
            int,
            typer.Option(
                help="Campaign seed for synthetic scenarios.", min=BOUNDS["seed"][0], max=BOUNDS["seed"][1]
            ),
        ] = 0,
        loader_threads: Annotated[
            int,
            typer.Option(
                help="Host loader threads.", min=BOUNDS["loader_threads"][0], max=BOUNDS["loader_threads"][1]
            ),
        ] = 2,
        stall_timeout: Annotated[
            float,
            typer.Option(
                help="Seconds without a batch moving before the run fails with thread stacks in DIR "
                "(grows with the observed batch time; rerun to resume; 0 disables).",
                min=0.0,
            ),
        ] = 300.0,
        live_html: Annotated[
            bool, typer.Option("--live-html", help="Serve the live dashboard on localhost while running.")
        ] = False,
        coordinator: Annotated[
            str | None,
            typer.Option(
                help="Multi-process run: host:port of process 0 (else DRIVESIM_COORDINATOR). "
                "Each process runs its share of the positions and writes its own shards."
            ),
        ] = None,
        num_processes: Annotated[
            int | None,
            typer.Option(help="Multi-process run: processes (else DRIVESIM_NUM_PROCESSES).", min=1),
        ] = None,
        process_id: Annotated[
            int | None, typer.Option(help="Multi-process run: rank (else DRIVESIM_PROCESS_ID).", min=0)
        ] = None,
        cluster: Annotated[
            str | None,
            typer.Option(
                help="Run on a Ray cluster: ray (the cluster Ray finds, else a local one) | ray:auto | "
                "ray:HOST:PORT | ray://HOST:PORT (Ray Client). The campaign directory must be on a "
                "file system every node sees at the same path. Needs drivesim[ray]."
            ),
        ] = None,
        workers: Annotated[
            int | None,
            typer.Option(
                help="Ray workers (with --cluster; default: one per GPU, else one per node).", min=1
            ),
        ] = None,
        import_policy: ImportPolicyOpt = False,
    ) -> None:
        """Run a campaign of scenarios end to end (resumable) and write its results and dashboard."""
        from drivesim.pipeline.config import CampaignConfig, read_config
        from drivesim.pipeline.policy_names import is_user_code
        from drivesim.pipeline.validation import ConfigError

        if directory is not None and out is not None and directory.resolve() != out.resolve():
            raise ConfigError(f"run {directory} --out {out}: two campaign directories; name one")
        if workers is not None and cluster is None:
            raise ConfigError(f"--workers {workers}: workers are Ray workers; add --cluster ray (or drop it)")
        if num_processes is not None and process_id is not None and process_id >= num_processes:
            raise ConfigError(
                f"--process-id {process_id}: ranks of {num_processes} processes are 0..{num_processes - 1}"
            )
        if sweep is not None and policy != "idm":
            raise ConfigError(
                f"--sweep {sweep} varies the IDM ego's parameters; it cannot go with --policy {policy}"
            )
        _join_processes(coordinator, num_processes, process_id)

        target = directory or out
        if resume:
            if target is None:
                raise typer.BadParameter("--resume needs the campaign directory: drivesim run --resume DIR")
            stored = read_config(target)
            if not stored.sweep and is_user_code(stored.policy) and not import_policy:
                raise ConfigError(
                    f"{target}: the campaign's policy {stored.policy!r} names code (a module to import); "
                    "a campaign's files are data and are not run: pass --import-policy to resume it"
                )
            config = dataclasses.replace(
                stored,
                out=str(target),
                backend=backend,
                devices=devices,
                chunk=_chunk(chunk) if chunk is not None else stored.chunk,
                batch_size=_batch_size(batch_size) if batch_size is not None else stored.batch_size,
                stall_s=stall_timeout,
                cluster=cluster,
                workers=workers,
            )
        else:
            if count is not None and source:
                run_outcome.refuse_uncounted(source, count)
            config = CampaignConfig(  # unset fields: drivesim.pipeline.defaults (no sources: the demo)
                sources=_with_grid(tuple(source or ()), grid),
                count=count,
                policy=policy,
                sweep=str(sweep) if sweep else None,
                backend=backend,
                devices=devices,
                chunk=_chunk(chunk),
                batch_size=_batch_size(batch_size),
                num_steps=steps,
                agents=agents,
                lane_changes=lane_changes,
                occlusion=occlusion,
                position_update=position_update,
                seed=seed,
                loader_threads=loader_threads,
                stall_s=stall_timeout,
                out=None if target is None else str(target),
                cluster=cluster,
                workers=workers,
            )
        _run(config, live_html)

    @app.command()
    def query(
        directory: Annotated[pathlib.Path, typer.Argument(help="Campaign directory.")],
        sql: Annotated[
            str,
            typer.Argument(
                help='SQL over the view `results`, e.g. "SELECT family, '
                'avg(progress_m) FROM results GROUP BY 1".'
            ),
        ],
        json_out: Annotated[
            bool,
            typer.Option("--json", help="Print one JSON object per row (strict JSON: NaN/Inf as null)."),
        ] = False,
        unsafe: Annotated[
            bool,
            typer.Option(
                "--unsafe",
                help="Let the SQL read and write other files and load extensions (locked down by default).",
            ),
        ] = False,
    ) -> None:
        """Run DuckDB SQL over a campaign's results (the view is named `results`)."""
        from drivesim.pipeline import results

        table = results.query(directory, sql, unsafe=unsafe)
        if json_out:
            from drivesim.report.strict_json import dumps

            for row in results.plain_rows(table):
                typer.echo(dumps(row))
            return
        _print_table(table)

    @app.command()
    def summary(
        directory: Annotated[pathlib.Path, typer.Argument(help="Campaign directory.")],
        json_out: Annotated[
            bool, typer.Option("--json", help="Print one JSON object instead of tables.")
        ] = False,
    ) -> None:
        """Print headline figures of a campaign: rates, progress, TTC, throughput, run sessions."""
        from rich.console import Console

        from drivesim.pipeline.sandbox import require_campaign
        from drivesim.pipeline.sessions import read_sessions
        from drivesim.pipeline.summary import (
            campaign_summary,
            road_users_table,
            sessions_table,
            summary_table,
        )

        require_campaign(directory)
        from drivesim.pipeline.worker_stats import worker_throughput, workers_table

        workers = worker_throughput(directory)  # campaigns run on a Ray cluster only
        figures = campaign_summary(directory) | {"sessions": read_sessions(directory)}
        if workers:
            figures["workers"] = workers
        if json_out:
            from drivesim.report.strict_json import dumps

            typer.echo(dumps(figures))
            return
        console = Console(width=min(Console().width, 80))
        console.print(summary_table(figures))
        road_users = road_users_table(figures)
        if road_users is not None:
            console.print(road_users)
        if figures["sessions"]:
            console.print(sessions_table(figures["sessions"]))
        if workers:
            console.print(workers_table(workers))


def _print_table(table) -> None:
    from rich.console import Console
    from rich.table import Table

    from drivesim.pipeline.results import plain_rows

    view = Table()
    for name in table.column_names:
        view.add_column(name)
    for row in plain_rows(table):
        view.add_row(*[_cell(v) for v in row.values()])
    Console().print(view)


def _cell(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _run(config, live_html: bool) -> None:
    import jax
    from rich.console import Console

    from drivesim.pipeline.campaign import open_campaign
    from drivesim.pipeline.interrupt import sigterm_deferred, sigterm_interrupts
    from drivesim.pipeline.watchdog import CampaignStalled
    from drivesim.report.live import LiveView

    console = Console(stderr=True)
    campaign = open_campaign(config)  # defaults, checks, a refused resume: before any output or write
    config = campaign.config
    for note in config.notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    console.print(f"campaign [bold]{config.out}[/bold]: {', '.join(config.sources)}")
    server = _start_server(config.out, console) if live_html else None
    view = LiveView(console=console, title="scenarios")
    try:
        with sigterm_interrupts(), view:
            result = campaign.run(progress=view.update)
    except CampaignStalled as err:
        run_outcome.exit_stalled(console, err)
    except KeyboardInterrupt as stop:
        run_outcome.exit_interrupted(console, stop, config.out)
    finally:
        if server is not None:
            server.stop()
    console = Console()  # the outcome goes to stdout, progress went to stderr
    for note in result.notes[len(config.notes) :]:  # found at start-up: redone or ignored files
        console.print(f"[yellow]note:[/yellow] {note}")
    console.print(
        f"done: {result.done:,}/{result.total:,} scenarios ({result.skipped:,} from an earlier run), "
        f"{result.failed:,} failed, {result.failed_batches} batches failed; "
        f"{rate(result.scenarios_per_s)} scenarios/s on {result.device_count} devices"
        + (f", batches of {result.batch_size:,}" if result.batch_size else "")
    )
    console.print(
        f"results: {pathlib.Path(config.out) / 'results'}  "
        f'(drivesim query {config.out} "SELECT * FROM results LIMIT 5")'
    )
    with sigterm_deferred() as late:  # the results are complete: a signal ends the report only
        if jax.process_index() == 0:  # one dashboard per multi-process campaign
            run_outcome.write_report(config.out, console, late)
    if late.received:  # said on stderr, as an interruption during the run is
        Console(stderr=True).print(
            f"interrupted by {late.received} while writing the report: all results are saved; "
            f"drivesim report {config.out} writes it",
            soft_wrap=True,
        )
        raise typer.Exit(late.status)
    run_outcome.check_outcome(result, config.out, console)


def _start_server(directory, console):
    try:
        from drivesim.report.server import LiveDashboardServer

        server = LiveDashboardServer(directory).start()
    except Exception as exc:  # noqa: BLE001 - the campaign runs without the live page
        console.print(f"[yellow]live dashboard unavailable:[/yellow] {exc}")
        return None
    console.print(f"live dashboard: {server.url}")
    return server
