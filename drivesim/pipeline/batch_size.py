"""The batch size of a campaign whose ``batch_size`` is "auto" (the default).

Rule: a batch should keep the devices busy for about :data:`TARGET_BATCH_S` seconds, so that
the host's fixed cost per batch (plan, transfer, result table, shard, ledger row) is small
beside it, and a campaign should still have :data:`MIN_BATCHES` batches or more, so that
loading, computing and writing overlap and a small campaign pads little. From the engine's
cost per agent-step on the platform (:data:`AGENT_STEPS_PER_S`, per CPU core or per
accelerator: the engine's measured rates, rounded down) and the workload's agents x steps:

    B = min(pow2_floor(rate * TARGET_BATCH_S / (agents * steps)),
            pow2_ceil(ceil(scenarios / MIN_BATCHES)))

clamped to [:data:`MIN_BATCH`, :data:`MAX_BATCH`]. A power of two, so that campaigns of
similar size share their compiled programs. Device memory is the executor's concern: a batch
larger than fits is run in chunks (``--chunk auto``). The batch size is not part of a
campaign's identity: a resume may use another one (drivesim.pipeline.plan keeps the windows
already begun), and each scenario's metrics do not depend on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from drivesim.parallel.cpu_devices import usable_cores

AUTO = "auto"
TARGET_BATCH_S = 1.0
MIN_BATCHES = 8
MIN_BATCH = 64
MAX_BATCH = 65536
# agent-steps per second of the engine, per CPU core and per accelerator device (W32 highway)
AGENT_STEPS_PER_S = {"cpu": 12e6, "accelerator": 500e6}
DEFAULT_AGENTS = 32  # a source of several agent counts: the padding class of most scenarios


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What decides the batch size: scenarios in the campaign, agents and steps per scenario,
    the platform ("cpu", "gpu", "tpu"), its device count and (CPU) the cores of the process
    that computes (None: this process's)."""

    scenarios: int
    agents: int | None
    steps: int
    platform: str
    devices: int
    cores: int | None = None


def _pow2_floor(x: float) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(x, 1.0)))))


def _pow2_ceil(x: float) -> int:
    return 1 << max(0, int(math.ceil(math.log2(max(x, 1.0)))))


def device_rate(platform: str, devices: int, cores: int | None = None) -> float:
    """Agent-steps per second of the engine on ``devices`` devices of ``platform``: per core
    on a CPU (XLA:CPU devices share the cores; ``cores`` None: this process's), per device on
    an accelerator."""
    if platform == "cpu":
        return AGENT_STEPS_PER_S["cpu"] * (cores or usable_cores())
    return AGENT_STEPS_PER_S["accelerator"] * devices


def auto_batch_size(work: Workload) -> int:
    """The batch size of the rule in the module docstring."""
    agents = work.agents or DEFAULT_AGENTS
    per_scenario = max(1, agents * max(1, work.steps))
    rate = device_rate(work.platform, work.devices, work.cores)
    by_time = _pow2_floor(rate * TARGET_BATCH_S / per_scenario)
    by_count = _pow2_ceil(math.ceil(max(work.scenarios, 1) / MIN_BATCHES))
    return int(min(MAX_BATCH, max(MIN_BATCH, min(by_time, by_count))))


def resolve(batch_size: int | str, work: Workload) -> int:
    """``batch_size`` as a number: itself, or the rule's for "auto"."""
    return auto_batch_size(work) if batch_size == AUTO else int(batch_size)


def for_campaign(config, scenarios: int, platform: str, devices: int, cores: int | None = None) -> int:
    """The batch size of campaign ``config`` (a CampaignConfig) of ``scenarios`` scenarios
    computed on ``devices`` devices of ``platform`` (one worker's, on a cluster, with its
    ``cores``)."""
    work = Workload(
        scenarios=scenarios,
        agents=config.agents,
        steps=config.num_steps,
        platform=platform,
        devices=devices,
        cores=cores,
    )
    return resolve(config.batch_size, work)
