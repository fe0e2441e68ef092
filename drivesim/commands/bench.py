"""CLI of the bench room: ``drivesim bench engine|pipeline|memory``, ``drivesim scale``,
``drivesim profile``. Progress goes to stderr; ``--json`` prints one JSON object per result
on stdout and nothing else there. Records are appended to ``--out`` (JSON lines)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from drivesim.parallel.cpu_devices import DEVICES_PER_CORE

DEFAULT_OUT = Path("runs/bench")
OUT_HELP = "output directory: records go to OUT/bench/*.jsonl (scale: OUT/scale/*.jsonl)"

# Options declared alike by several commands.
JsonOpt = Annotated[bool, typer.Option("--json", help="one JSON object per result on stdout")]
OutOpt = Annotated[Path, typer.Option(help=OUT_HELP)]
StepsOpt = Annotated[int, typer.Option(help="steps per scenario")]
AgentsOpt = Annotated[int, typer.Option(help="agents per scenario")]


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _emit(records, out: Path, sub: str, name: str, as_json: bool) -> Path:
    """Append ``records`` to OUT/sub/name.jsonl; print them as JSON lines with --json."""
    from drivesim.bench.records import append_records

    path = append_records(out / sub / f"{name}.jsonl", records)
    if as_json:
        for record in records:
            print(record.to_json(), flush=True)
    _err(f"records appended to {path}")
    return path


def _dashboard(out: Path) -> None:
    """Redraw the dashboard of ``out`` if the report room is installed."""
    try:
        from drivesim.report.dashboard import write_dashboard
    except ImportError:
        return
    try:
        _err(f"dashboard: {write_dashboard(out)}")
    except Exception as exc:  # noqa: BLE001 - a dashboard failure must not lose the measurement
        _err(f"dashboard not written: {exc}")


bench_app = typer.Typer(help="Benchmarks: engine, pipeline, memory.", no_args_is_help=True)


@bench_app.command("engine")
def engine(
    agents: Annotated[
        list[int] | None, typer.Option("--agents", help="agents (repeatable; default 8, 32, 128)")
    ] = None,
    scenarios: Annotated[int, typer.Option(help="scenarios per batch")] = 4096,
    steps: StepsOpt = 80,
    repeats: Annotated[int, typer.Option(help="timed repeats (warm-up excluded)")] = 5,
    warmup: Annotated[int, typer.Option(help="untimed warm-up calls")] = 1,
    json_out: JsonOpt = False,
    out: OutOpt = DEFAULT_OUT,
    devices: Annotated[
        int | None,
        typer.Option(
            help=f"devices to shard the batch over (default: all; the CLI makes {DEVICES_PER_CORE} CPU "
            "devices per core)"
        ),
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family",
            help="synthetic family (repeatable; default highway); another family runs after "
            "highway and is reported as a ratio to it",
        ),
    ] = None,
) -> None:
    """Engine throughput of `simulate` (W32 = 4096 highway x 32 agents x 80 steps; also 8, 128)."""
    from drivesim.bench.engine import COST_RATIO_TARGET, DEFAULT_AGENTS, EngineSweep, run_engine_sweep
    from drivesim.bench.harness import HarnessConfig
    from drivesim.scenarios.synthetic import FAMILIES

    unknown = [f for f in family or () if f not in FAMILIES]
    if unknown:
        _err(f"bench engine: unknown --family {unknown[0]!r}; known: {', '.join(sorted(FAMILIES))}")
        raise typer.Exit(2)
    sweep = EngineSweep(
        agents=tuple(agents or DEFAULT_AGENTS),
        scenarios=scenarios,
        steps=steps,
        harness=HarnessConfig(repeats=repeats, warmup=warmup),
        device_counts=(devices,),
        families=tuple(family or ("highway",)),
    )
    records, ratios = run_engine_sweep(sweep, log=_err)
    for ratio in ratios.values():
        _err(f"cost per agent-step, 128 vs 32 agents: {ratio:.2f}x (target <= {COST_RATIO_TARGET})")
    _emit(records, out, "bench", "engine", json_out)
    _dashboard(out)


@bench_app.command("pipeline")
def pipeline(
    count: Annotated[int, typer.Option(help="scenarios per campaign")] = 1024,
    agents: AgentsOpt = 32,
    steps: StepsOpt = 80,
    batch_size: Annotated[int, typer.Option(help="scenarios per batch")] = 256,
    repeats: Annotated[int, typer.Option(help="timed campaigns")] = 3,
    loader_threads: Annotated[int, typer.Option(help="loader threads")] = 2,
    prefetch: Annotated[int, typer.Option(help="prefetch depth (batches)")] = 4,
    json_out: JsonOpt = False,
    out: OutOpt = DEFAULT_OUT,
) -> None:
    """Run a small campaign through the pipeline; phase breakdown and bottleneck verdict."""
    from drivesim.bench.pipeline import PipelineBenchConfig, run_pipeline_bench
    from drivesim.bench.records import rate_line

    config = PipelineBenchConfig(
        count=count,
        agents=agents,
        steps=steps,
        batch_size=batch_size,
        repeats=repeats,
        loader_threads=loader_threads,
        prefetch=prefetch,
        work_dir=str(out / "pipeline"),
    )
    record, found = run_pipeline_bench(config, log=_err)
    _err("  " + rate_line(record))
    for name, seconds in (record.phases or {}).items():
        if seconds is not None:
            _err(f"  {name:<8} {seconds:8.3f} s")
    _err(f"  outside batches (campaign setup/teardown) {record.extra['outside_batches_s']:.3f} s")
    shares = ", ".join(f"{k} {v:.0%}" for k, v in found.shares.items())
    _err(f"bottleneck: {found.bottleneck} ({shares})\nrecommendation: {found.recommendation}")
    _emit([record], out, "bench", "pipeline", json_out)
    _dashboard(out)


@bench_app.command("campaign")
def campaign(
    agents: AgentsOpt = 32,
    steps: StepsOpt = 80,
    batch_size: Annotated[int, typer.Option(help="scenarios per batch")] = 4096,
    small_batches: Annotated[int, typer.Option(help="batches in the small campaign")] = 1,
    large_batches: Annotated[int, typer.Option(help="batches in the large campaign")] = 4,
    repeats: Annotated[int, typer.Option(help="timed (small, large) campaign pairs per source")] = 3,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="synthetic | store (repeatable; default both)")
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            help="real: the engine, beside its own rate; null: a device program that computes nothing "
            "(the host's ceiling, with a per-stage breakdown in us per scenario)"
        ),
    ] = "real",
    json_out: JsonOpt = False,
    out: OutOpt = DEFAULT_OUT,
) -> None:
    """End-to-end marginal campaign rate (synthetic and store sources): beside the engine rate
    of the same workload and their ratio (goal >= 0.8), or with ``--engine null`` the host's
    ceiling (goal: >= 1,000,000 scenarios/s synthetic, >= 200,000 from a store)."""
    from drivesim.bench.campaign import SOURCES, CampaignBenchConfig, run_campaign_bench

    unknown = set(source or ()) - set(SOURCES)
    if unknown:
        raise typer.BadParameter(f"--source {sorted(unknown)}: expected one of {', '.join(SOURCES)}")
    if engine not in ("real", "null"):
        raise typer.BadParameter(f"--engine {engine!r}: expected real or null")
    workload: dict[str, Any] = dict(
        agents=agents,
        steps=steps,
        batch_size=batch_size,
        small_batches=small_batches,
        large_batches=large_batches,
        repeats=repeats,
        sources=tuple(source or SOURCES),
    )
    if engine == "null":
        from drivesim.bench.host_ceiling import HostCeilingConfig, run_host_ceiling

        records = run_host_ceiling(HostCeilingConfig(**workload, work_dir=str(out / "host")), log=_err)
        _emit(records, out, "bench", "host", False)
        if json_out:  # one object per source, its measures at the top
            for record in records:
                print(json.dumps(record.to_dict() | record.extra), flush=True)
        return
    config = CampaignBenchConfig(**workload, work_dir=str(out / "campaign"))
    _emit(run_campaign_bench(config, log=_err), out, "bench", "campaign", json_out)


@bench_app.command("memory")
def memory(
    sizes: Annotated[str, typer.Option(help="batch sizes, comma-separated")] = "64,256,1024,4096",
    agents: AgentsOpt = 32,
    steps: StepsOpt = 80,
    repeats: Annotated[int, typer.Option(help="timed repeats per size")] = 5,
    json_out: JsonOpt = False,
    out: OutOpt = DEFAULT_OUT,
) -> None:
    """Batch-size sweep: throughput and compiled/device/host memory against batch size, knee marked."""
    from drivesim.bench.memory import SweepConfig, sweep_batch_sizes

    config = SweepConfig(
        sizes=tuple(int(s) for s in sizes.split(",") if s.strip()),
        agents=agents,
        steps=steps,
        repeats=repeats,
    )
    records = sweep_batch_sizes(config, log=_err)
    knee = next(r for r in records if r.knee)
    _err(f"knee: batch size {knee.batch_size} (smallest reaching 90% of the best throughput)")
    _emit(records, out, "bench", "memory", json_out)
    _dashboard(out)


def scale(
    mode: Annotated[str, typer.Option(help="strong (fixed total work) | weak (fixed per device)")] = "strong",
    max_devices: Annotated[int | None, typer.Option(help="largest device count (default: all)")] = None,
    scenarios: Annotated[int, typer.Option(help="total scenarios (strong) or per device (weak)")] = 4096,
    agents: AgentsOpt = 32,
    steps: StepsOpt = 80,
    repeats: Annotated[int, typer.Option(help="timed repeats per device count")] = 5,
    price: Annotated[float | None, typer.Option(help="USD per device-hour (default: by device kind)")] = None,
    engine: Annotated[str, typer.Option(help="executor (run path) | simulate (bare core)")] = "executor",
    cluster: Annotated[
        str | None,
        typer.Option(
            help="measure campaigns over pinned Ray workers instead: ray | ray:auto | ray:HOST:PORT "
            "(--max-devices: largest worker count)"
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="campaign batch size (with --cluster)", min=1)] = 256,
    json_out: JsonOpt = False,
    out: OutOpt = DEFAULT_OUT,
) -> None:
    """Strong/weak scaling over 1, 2, 4, ... devices (CPU: pinned processes), with Amdahl fit and cost;
    with --cluster ray: campaign strong scaling over Ray workers against the single-process run."""
    from drivesim.bench.scaling import ScaleConfig, run_scaling
    from drivesim.bench.workloads import Workload

    if cluster is not None:
        from drivesim.bench.cluster_scaling import ClusterScaleConfig

        try:
            cluster_config = ClusterScaleConfig(
                cluster=cluster,
                max_workers=max_devices,
                scenarios=scenarios,
                agents=agents,
                steps=steps,
                batch_size=batch_size,
                repeats=repeats,
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        return _scale_cluster(cluster_config, json_out, out)
    if mode not in ("strong", "weak") or engine not in ("executor", "simulate"):
        raise typer.BadParameter(f"--mode strong|weak, --engine executor|simulate; got {mode}, {engine}")
    config = ScaleConfig(
        mode=mode,
        max_devices=max_devices,
        workload=Workload(scenarios, agents, steps),
        repeats=repeats,
        price=price,
        engine=engine,
    )
    records = run_scaling(config, log=_err)
    for r in records:
        if r.kind == "scale":
            cost = f"${r.cost_per_million:.4g}/M scenarios" if r.cost_per_million is not None else "cost n/a"
            _err(
                f"  N={r.device_count}: {r.rate():,.1f} scen/s  speed-up {r.speedup:.2f}  "
                f"efficiency {r.efficiency:.2f}  {cost}"
            )
        else:
            from drivesim.bench.amdahl import ceiling_claim

            points = (r.extra or {}).get("points")
            p = math.nan if r.serial_fraction is None else r.serial_fraction
            _err(f"  Amdahl: {ceiling_claim(p, r.serial_fraction_std, points)}")
    _emit(records, out, "scale", mode, json_out)
    _dashboard(out)


def _scale_cluster(config, json_out: bool, out: Path) -> None:
    """``drivesim scale --cluster ray``: see drivesim.bench.cluster_scaling."""
    from drivesim.bench.cluster_scaling import run_cluster_scaling

    records = run_cluster_scaling(config, log=_err)
    for r in records:
        what = "single process" if r.backend == "single" else f"{r.device_count} Ray worker(s)"
        _err(f"  {what}: {r.rate():,.1f} scen/s  speed-up {r.speedup:.2f}  efficiency {r.efficiency:.2f}")
    _emit(records, out, "scale", "cluster", json_out)
    _dashboard(out)


def profile(
    out: Annotated[Path, typer.Option(help="output directory: trace in OUT/profile/trace")] = DEFAULT_OUT,
    scenarios: Annotated[int, typer.Option(help="scenarios")] = 1024,
    agents: AgentsOpt = 32,
    steps: StepsOpt = 80,
    devices: Annotated[int | None, typer.Option(help="local devices to shard over (default: all)")] = None,
    repeats: Annotated[int, typer.Option(help="traced calls")] = 3,
    json_out: JsonOpt = False,
) -> None:
    """Trace `simulate` with jax.profiler (open in Perfetto/TensorBoard); print per-device busy."""
    from drivesim.bench.harness import environment
    from drivesim.bench.profile import ProfileConfig, profile_simulate
    from drivesim.bench.records import BenchRecord

    config = ProfileConfig(scenarios=scenarios, agents=agents, steps=steps, devices=devices, repeats=repeats)
    result = profile_simulate(config, out / "profile" / "trace")
    busy_path = result.write_json(out / "profile" / "busy.json")
    _err(
        f"trace: {result.xplane}\n  open it in https://ui.perfetto.dev or "
        f"`tensorboard --logdir {result.trace_dir}`"
    )
    _err(f"{'device':<12} {'busy s':>9} {'wall s':>9} {'busy':>7}")
    for b in result.busy:
        _err(f"{b.device:<12} {b.busy_s:9.4f} {b.wall_s:9.4f} {b.fraction:7.1%}")
    if result.gpu_util is not None:
        _err(f"NVML GPU utilisation %: {result.gpu_util}")
    env = environment()
    if devices:
        env["device_count"] = devices
    record = BenchRecord(
        kind="profile",
        workload=f"highway-{scenarios}x{agents}x{steps}",
        backend="sharding",
        **env,
        agents=agents,
        steps=steps,
        scenarios=scenarios,
        repeats=repeats,
        busy=result.busy_map(),
        gpu_util=result.gpu_util,
        extra={"trace_dir": result.trace_dir, "busy_json": str(busy_path)},
    )
    _emit([record], out, "bench", "profile", json_out)


def register(app: typer.Typer) -> None:
    """Add ``bench`` (engine|pipeline|memory), ``scale`` and ``profile`` to ``app``."""
    app.add_typer(bench_app, name="bench")
    app.command("scale")(scale)
    app.command("profile")(profile)
