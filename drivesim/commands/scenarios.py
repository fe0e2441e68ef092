"""CLI: ``drivesim import commonroad|womd|av2`` and ``drivesim scenarios generate|info``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

StoreOut = Annotated[Path, typer.Option("--out", help="Scenario store (Parquet file) to write.")]
ReplayDefault = Annotated[
    bool,
    typer.Option("--replay/--idm", help="Non-ego agents replay their logs (default), or are driven by IDM."),
]
EgoId = Annotated[
    str | None,
    typer.Option("--ego", help="The recorded agent to drive as the ego, by its id (default: the dataset's)."),
]


def register(app: typer.Typer) -> None:
    """Add the scenario commands (``import`` and ``scenarios`` groups) to ``app``."""
    import_app = typer.Typer(
        help="Import recorded scenarios into a drivesim scenario store.", no_args_is_help=True
    )
    scen_app = typer.Typer(help="Make and inspect drivesim scenario stores.", no_args_is_help=True)
    app.add_typer(import_app, name="import")
    app.add_typer(scen_app, name="scenarios")

    @import_app.command("commonroad")
    def import_commonroad(
        paths: Annotated[list[Path], typer.Argument(help="CommonRoad XML files or directories of *.xml.")],
        out: Annotated[Path, typer.Option("--out", help="Scenario store (Parquet file) to write.")],
        replay: Annotated[
            bool,
            typer.Option("--replay/--idm", help="Non-ego agents replay their logs, or are driven by IDM."),
        ] = False,
        dt: Annotated[
            float,
            typer.Option(
                "--dt", help="Simulation time step [s]; logs are resampled to it.", min=1e-3, max=10.0
            ),
        ] = 0.1,
    ) -> None:
        """Import CommonRoad scenarios (2018b and 2020a) into a store; bad files are
        reported and skipped (exit code 1 if any failed)."""
        from drivesim.scenarios.sources import CommonRoadSource

        _import(lambda: CommonRoadSource(paths, replay=replay, dt=dt), out)

    @import_app.command("womd")
    def import_womd(
        paths: Annotated[
            list[Path],
            typer.Argument(help="Waymo Open Motion files in GPUDrive JSON, or directories of *.json."),
        ],
        out: StoreOut,
        replay: ReplayDefault = True,
        ego: EgoId = None,
    ) -> None:
        """Import Waymo Open Motion scenarios (GPUDrive's processed JSON) into a store; bad
        files are reported and skipped (exit code 1 if any failed)."""
        from drivesim.scenarios.womd import WomdSource

        _import(lambda: WomdSource(paths, replay=replay, ego=ego), out)

    @import_app.command("av2")
    def import_av2(
        paths: Annotated[
            list[Path],
            typer.Argument(
                help="Argoverse 2 scenario_*.parquet files (their maps beside them), or directories."
            ),
        ],
        out: StoreOut,
        replay: ReplayDefault = True,
        ego: EgoId = None,
    ) -> None:
        """Import Argoverse 2 motion-forecasting scenarios into a store; bad files are reported
        and skipped (exit code 1 if any failed)."""
        from drivesim.scenarios.av2 import Av2Source

        _import(lambda: Av2Source(paths, replay=replay, ego=ego), out)

    @scen_app.command("generate")
    def generate(
        family: Annotated[
            str,
            typer.Argument(
                help="Synthetic family, or several comma-separated (highway, merge, intersection)."
            ),
        ],
        count: Annotated[int, typer.Option("--count", min=1, help="Number of scenarios to generate.")],
        out: Annotated[Path, typer.Option("--out", help="Scenario store (Parquet file) to write.")],
        seed: Annotated[
            int,
            typer.Option(
                "--seed",
                help="Campaign seed (a scenario derives from seed, family, id).",
                min=0,
                max=2**32 - 1,
            ),
        ] = 0,
        first_id: Annotated[
            int, typer.Option("--first-id", min=0, help="Global id of the first scenario.")
        ] = 0,
        row_group: Annotated[
            int, typer.Option("--row-group", min=1, help="Scenarios per Parquet row group.")
        ] = 4096,
    ) -> None:
        """Generate COUNT synthetic scenarios into a store (deterministic per id and seed)."""
        from drivesim.scenarios.sources import SyntheticSource
        from drivesim.scenarios.store import write_store
        from drivesim.scenarios.synthetic import generate_positions

        try:
            source = SyntheticSource(family.split(","), count, seed, first_id)
        except ValueError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(2) from None
        records = generate_positions(source.families, count, source.config, first_id)  # on the device
        written = write_store(out, records, row_group_size=row_group)
        typer.echo(f"wrote {written} scenarios ({source.describe()}) to {out}")

    @scen_app.command("convert")
    def convert(
        store: Annotated[Path, typer.Argument(help="Scenario store of an older schema version.")],
        out: Annotated[Path, typer.Option("--out", help="Scenario store (Parquet file) to write.")],
    ) -> None:
        """Rewrite a scenario store in the current schema version (rows padded to their bucket)."""
        from drivesim.scenarios.sources import ScenarioError
        from drivesim.scenarios.store import convert_store

        try:
            written = convert_store(store, out)
        except ScenarioError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(2) from None
        typer.echo(f"wrote {written} scenarios to {out}")

    @scen_app.command("info")
    def info(store: Annotated[Path, typer.Argument(help="Scenario store to describe.")]) -> None:
        """Summarise a store: scenarios per family and agent-count size class."""
        import duckdb

        from drivesim.scenarios.store import ScenarioStore

        ScenarioStore(store)  # checks the schema version
        classes = "class_agents, class_lanes, class_points, class_log"
        source = f"read_parquet('{str(store).replace(chr(39), chr(39) * 2)}')"
        sound = "num_agents BETWEEN 1 AND class_agents"  # a row's own agent slots fit its bucket
        rows = duckdb.sql(  # type: ignore[union-attr]  # a SELECT always returns a relation
            # one pass: a row per family (whole = 1), then one per size class of it
            f"SELECT family, grouping(class_agents) AS whole, {classes}, count(*), min(num_agents), "
            "max(num_agents), round(avg(num_agents), 1) "
            f"FROM {source} WHERE {sound} "
            f"GROUP BY GROUPING SETS ((family), (family, {classes})) ORDER BY family, whole DESC, {classes}"
        ).fetchall()
        bad = duckdb.sql(  # type: ignore[union-attr]
            f"SELECT count(*) FROM {source} WHERE NOT ({sound}) OR num_agents IS NULL"
        ).fetchall()[0]
        if bad and bad[0]:
            typer.echo(
                f"{store}: {bad[0]} rows with an impossible agent count (outside 1..their size class), "
                "not counted; a campaign records them as failed rows",
                err=True,
            )
        for family, whole, agents, lanes, points, log, count, lo, hi, mean in rows:
            if whole:
                typer.echo(f"{family}: {count} scenarios, agents {lo}..{hi} (mean {mean})")
                continue
            dims = f"{lanes} lanes, {points} points" + (f", log {log} steps" if log is not None else "")
            typer.echo(f"  size class {agents} agents ({dims}): {count} scenarios")


def _import(open_source, out: Path) -> None:
    """Write every record of the source ``open_source()`` opens to the store ``out``; a bad
    file is reported and skipped (exit 1 if any was), a missing path is a usage error."""
    from drivesim.scenarios.sources import ScenarioError
    from drivesim.scenarios.store import StoreWriter

    if out.exists() and not out.is_file():
        typer.echo(f"error: --out {out}: not a regular file (a device, pipe, socket or directory)", err=True)
        raise typer.Exit(2)
    try:
        source = open_source()
    except ScenarioError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    if len(source) == 0:
        typer.echo(f"error: {source.name}: no scenario files there", err=True)
        raise typer.Exit(2)
    failed = 0
    with StoreWriter(out) as writer:
        for position in range(len(source)):
            try:
                record = source.load(position)
                writer.write(record)
            except ScenarioError as err:
                failed += 1
                typer.echo(f"skipped: {err}", err=True)
                continue
            log = record.scenario.log  # None: no recorded trajectory (an empty or generated map)
            steps = "no log" if log is None else f"{log.valid.shape[0]} log steps"
            note = f"; {record.note}" if record.note else ""
            typer.echo(f"imported {record.name}: {record.num_agents} agents, {steps}{note}")
    typer.echo(f"wrote {writer.count} scenarios to {out} ({failed} failed)")
    if failed:
        raise typer.Exit(1)
