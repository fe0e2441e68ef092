"""Engine benchmark: ``simulate`` on a device-resident host batch (issue 2, workload W32).

Generation and the host-to-device copy are outside the timed region; compile time is
measured apart; warm-up calls are excluded; rates are summarised over the repeats.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax

from drivesim.bench.harness import HarnessConfig, Work, environment, measure, throughput
from drivesim.bench.memory import memory_fields
from drivesim.bench.records import BenchRecord
from drivesim.bench.workloads import W32, Workload, make_batch, sim_config


@dataclass(frozen=True)
class EngineConfig:
    """workload: what to simulate; harness: repeats / warm-up / CI method."""

    workload: Workload = W32
    harness: HarnessConfig = field(default_factory=HarnessConfig)
    devices: int | None = 1  # None: every visible device (batch sharded over them)


def run_engine(config: EngineConfig, batch=None, kind: str = "engine") -> BenchRecord:
    """Benchmark ``simulate`` (IDM ego, all metrics) on ``config.workload``; ``batch`` is
    an optional prebuilt host batch of that workload. Returns one BenchRecord."""
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate

    wl = config.workload
    host = batch if batch is not None else make_batch(wl)
    devices = jax.devices()[: config.devices] if config.devices else jax.devices()
    device_batch = _put_sharded(host, devices, wl.scenarios)
    policy = idm_policy()
    timing = measure(simulate, (device_batch, policy), config.harness, static={"config": sim_config(wl)})
    rates = throughput(Work(wl.scenarios, wl.agents, wl.steps), timing.times, config.harness.ci_method)
    env = environment()
    visible = env.pop("device_count")
    return BenchRecord(
        kind=kind, workload=wl.name, backend="single" if len(devices) == 1 else "sharding",
        device_count=len(devices), **env,
        batch_size=wl.scenarios, chunk=wl.scenarios, agents=wl.agents, steps=wl.steps,
        scenarios=wl.scenarios, repeats=config.harness.repeats, compile_s=timing.compile_s,
        **rates.as_fields(), **memory_fields(timing.compiled),
        extra={"times_s": list(timing.times), "warmup": config.harness.warmup, "visible_devices": visible},
    )


def _put_sharded(host, devices, scenarios: int):
    """The host batch on ``devices``, split along the scenario axis (jit then runs the
    shards side by side); scenarios must divide evenly."""
    if len(devices) == 1:
        return jax.device_put(host, devices[0])
    if scenarios % len(devices):
        raise ValueError(f"engine benchmark: {scenarios} scenarios do not split over {len(devices)} devices")
    mesh = jax.sharding.Mesh(devices, ("batch",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
    return jax.device_put(host, sharding)


def agent_step_cost_ratio(large: BenchRecord, small: BenchRecord) -> float:
    """Cost per agent-step of ``large`` relative to ``small`` (e.g. 128 vs 32 agents):
    thr_small / thr_large in agent-steps/s; the engine target is <= 1.5."""
    return small.rate("agent_steps_per_s") / large.rate("agent_steps_per_s")
