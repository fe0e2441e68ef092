"""Engine benchmark: ``simulate`` on a device-resident host batch (headline workload W32).

Generation and the host-to-device copy are outside the timed region; compile time (the fast
pass's program as ``simulate`` builds it: trace, lower and XLA on a first run, the kept
StableHLO and the persistent cache on a later one, core.traced_cache) is measured apart;
warm-up calls are excluded; rates are summarised over the repeats. Each record also holds
the fusions and conditionals per step of the fast pass (drivesim.bench.step_program), in
``extra``.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import jax

from drivesim.bench.harness import HarnessConfig, Timing, Work, environment, throughput, time_calls
from drivesim.bench.records import BenchRecord, rate_line, summary_of
from drivesim.bench.step_program import fast_pass_counts
from drivesim.bench.workloads import W32, Workload, make_batch, place, sim_config
from drivesim.parallel.memory import memory_fields

DEFAULT_AGENTS = (8, 32, 128)
COST_RATIO_TARGET = 1.5  # cost per agent-step at 128 vs 32 agents
FAMILY_RATIO_TARGET = 0.7  # throughput of a traffic family vs highway at the same shape


@dataclass(frozen=True)
class EngineConfig:
    """workload: what to simulate; harness: repeats / warm-up / CI method."""

    workload: Workload = W32
    harness: HarnessConfig = field(default_factory=HarnessConfig)
    devices: int | None = 1  # None: every visible device (batch sharded over them)


def run_engine(config: EngineConfig, batch=None, kind: str = "engine", plan=None) -> BenchRecord:
    """Benchmark ``simulate`` (IDM ego, all metrics) on ``config.workload``; ``batch`` is
    an optional prebuilt host batch of that workload, ``plan`` its SearchPlan where the
    caller has it already (:func:`batch_plan`). Returns one BenchRecord."""
    from drivesim.core.policies import idm_policy

    wl = config.workload
    host = batch if batch is not None else make_batch(wl)
    devices = jax.devices()[: config.devices] if config.devices else jax.devices()
    if wl.scenarios % len(devices):
        raise ValueError(
            f"engine benchmark: {wl.scenarios} scenarios do not split over {len(devices)} devices"
        )
    device_batch, _ = place(host, devices)
    policy = idm_policy()
    static = {"config": sim_config(wl), "devices": len(devices)}
    timing, fallback = _measure_simulate(device_batch, policy, static, config.harness)
    counts = fast_pass_counts(device_batch, policy, static["config"])
    rates = throughput(Work(wl.scenarios, wl.agents, wl.steps), timing.times, config.harness.ci_method)
    plan = plan if plan is not None else batch_plan(wl, host, devices[0].platform)
    env = environment()
    visible = env.pop("device_count")
    return BenchRecord(
        kind=kind,
        workload=wl.name,
        backend="single" if len(devices) == 1 else "sharding",
        device_count=len(devices),
        **env,
        batch_size=wl.scenarios,
        chunk=wl.scenarios,
        agents=wl.agents,
        steps=wl.steps,
        scenarios=wl.scenarios,
        repeats=config.harness.repeats,
        compile_s=timing.compile_s,
        **rates.as_fields(),
        **memory_fields(timing.compiled),
        extra={
            "times_s": list(timing.times),
            "warmup": config.harness.warmup,
            "visible_devices": visible,
            "search": search_label(plan),
            "search_plan": plan.record(),
            "fusions_per_step": counts.fusions,
            "fallback_rows": fallback.rows,
            "fallback_compile_s": fallback.compile_s,
            "conditionals_per_step": counts.conditionals,
        },
    )


@dataclass(frozen=True)
class FallbackCost:
    """The exact fallback a benchmark batch needed: flagged rows and its compile seconds."""

    rows: int
    compile_s: float


def _measure_simulate(device_batch, policy, static: dict, harness: HarnessConfig):
    """Timing of ``simulate`` as a user runs it: the fast pass's compile timed apart, and,
    where its batch flags rows, the exact fallback's compile (core.exact_rows) added to
    ``compile_s`` and the timed calls the whole ``simulate`` (fast pass, then fallback)."""
    from drivesim.core.exact_rows import flagged_rows
    from drivesim.core.rollout import simulate

    # the fast pass compiled as a call in a new process compiles it (core.traced_cache on one
    # device): this process's compiled fast passes dropped first
    simulate.clear()
    start = time.perf_counter()
    program = simulate.program(device_batch, policy, **static)
    compile_s = time.perf_counter() - start
    times = time_calls(lambda: program(device_batch, policy), harness)
    timing = Timing(compile_s=compile_s, times=times, compiled=program)
    rows = flagged_rows(program(device_batch, policy))
    lowered = simulate.lower_exact(device_batch, policy, static["config"]) if rows.size else None
    if lowered is None:
        return timing, FallbackCost(0, 0.0)
    start = time.perf_counter()
    lowered.compile()
    fallback_s = time.perf_counter() - start
    times = time_calls(lambda: simulate(device_batch, policy, **static), harness)
    whole = dataclasses.replace(timing, compile_s=timing.compile_s + fallback_s, times=times)
    return whole, FallbackCost(int(rows.size), fallback_s)


def search_plan(wl: Workload, platform: str | None = None, road_segments: int | None = None, searches=None):
    """The SearchPlan ``wl``'s defaults resolve to on ``platform`` (None: JAX's default
    backend; core.search_choice.resolved); ``road_segments``: its batch's (None: a
    one-scenario batch of it is built); ``searches``: the switches its program fixes
    (core.switches.of_batch; None: none)."""
    from drivesim.core.search_choice import resolved

    if road_segments is None:
        road_segments = make_batch(dataclasses.replace(wl, scenarios=1, first_id=0)).num_road_segments
    return resolved(sim_config(wl), wl.agents, platform, road_segments, searches).search


def batch_plan(wl: Workload, host, platform: str | None = None):
    """:func:`search_plan` of ``wl`` for its built batch ``host``, with the switches that
    ``simulate`` fixes for it (the plan its program runs)."""
    from drivesim.core import switches

    searches = switches.of_batch(host, sim_config(wl))
    return search_plan(wl, platform, host.num_road_segments, searches)


def search_label(plan) -> str:
    """A resolved SearchPlan's neighbour and road-edge searches, e.g. "window/own_route"."""
    return f"{plan.neighbours}/{plan.edge_search}"


def search_name(wl: Workload, platform: str | None = None, road_segments: int | None = None) -> str:
    """:func:`search_label` of :func:`search_plan`."""
    return search_label(search_plan(wl, platform, road_segments))


def agent_step_cost_ratio(large: BenchRecord, small: BenchRecord) -> float:
    """Cost per agent-step of ``large`` relative to ``small`` (e.g. 128 vs 32 agents):
    thr_small / thr_large in agent-steps/s; the engine target is <= 1.5."""
    return small.rate("agent_steps_per_s") / large.rate("agent_steps_per_s")


@dataclass(frozen=True)
class EngineSweep:
    """What :func:`run_engine_sweep` runs: every family x agent count x device count (None:
    all devices) of ``scenarios`` x n agents x ``steps``. A family other than highway is
    measured against highway in the same run (highway is added first)."""

    agents: tuple[int, ...] = DEFAULT_AGENTS
    scenarios: int = 4096
    steps: int = 80
    harness: HarnessConfig = field(default_factory=HarnessConfig)
    device_counts: tuple[int | None, ...] = (None,)
    families: tuple[str, ...] = ("highway",)


def run_engine_sweep(
    sweep: EngineSweep, log: Callable[[str], None] | None = None
) -> tuple[list[BenchRecord], dict[int, float]]:
    """``run_engine`` for every point of ``sweep``; returns the records and, per device count
    whose highway runs have both 32 and 128 agents, the cost ratio 128 vs 32 (also in the
    128-agent record's ``extra["cost_ratio_vs_32"]``). A record of another family holds its
    scenarios/s over highway's at the same agents and devices in ``extra["vs_highway"]``."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    families = ["highway"] + [f for f in sweep.families if f != "highway"]
    records = []
    highway_rate = {}  # (agents, devices) -> highway's scenarios/s, measured before the others
    for devices, family, n in itertools.product(sweep.device_counts, families, sweep.agents):
        where = f"{devices} device(s)" if devices else "all devices"
        wl = Workload(sweep.scenarios, n, sweep.steps, family)
        host = make_batch(wl)  # built once: its road names the search, and the engine runs it
        plan = batch_plan(wl, host)  # read by the log line and the record
        log(
            f"engine: {sweep.scenarios} {family} x {n} agents x {sweep.steps} steps on {where}, "
            f"search {search_label(plan)} ..."
        )
        record = run_engine(EngineConfig(wl, sweep.harness, devices=devices), batch=host, plan=plan)
        record.extra["family"] = family
        records.append(record)
        rate, suffix = record.rate("scenarios_per_s"), ""
        if family == "highway":
            highway_rate[n, devices] = rate
        else:
            record.extra["vs_highway"] = rate / highway_rate[n, devices]
            suffix = f"; {record.extra['vs_highway']:.2f}x highway (goal >= {FAMILY_RATIO_TARGET})"
        log("  " + rate_line(record) + suffix)
    ratios = {}
    for count in dict.fromkeys(r.device_count for r in records):
        by_agents = {
            r.agents: r for r in records if r.device_count == count and r.extra["family"] == "highway"
        }
        if 32 in by_agents and 128 in by_agents:
            ratios[count] = agent_step_cost_ratio(by_agents[128], by_agents[32])
            by_agents[128].extra["cost_ratio_vs_32"] = ratios[count]
    return records, ratios


def markdown_table(records: list[BenchRecord]) -> str:
    """The engine records as a Markdown table (for BENCHMARKS.md), one row per record."""
    lines = [
        "| workload | devices | agent-steps/s (median) | p5 .. p95 | 95% CI | scenarios/s | compile s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        a, s = summary_of(r, "agent_steps_per_s"), summary_of(r)
        lines.append(
            f"| {r.workload} | {r.device_count} | {a['median'] / 1e6:.2f} M "
            f"| {a['p5'] / 1e6:.2f} .. {a['p95'] / 1e6:.2f} M "
            f"| {a['ci_low'] / 1e6:.2f} .. {a['ci_high'] / 1e6:.2f} M | {s['median']:,.0f} "
            f"| {r.compile_s:.1f} |"
        )
    return "\n".join(lines)
