"""One scaling measurement, run in its own subprocess (``python -m drivesim.bench.scale_worker``).

Two modes:

- ``processes``: this is process ``process_id`` of ``num_processes`` (each one CPU device,
  pinned to its own core by the parent), joined by ``jax.distributed``; it simulates its own
  share of the workload; every timed repeat is framed by global barriers, so a repeat's time
  is the time the whole group needs for the total work.
- ``devices``: one process simulates the workload sharded over its first ``devices`` local
  devices (GPUs, or forced CPU devices).

``engine`` picks what is timed: ``executor`` (drivesim.parallel.executor.Executor, the path
``drivesim run`` uses: put once, then ``run`` per repeat, no donation) or ``simulate`` (the
jitted core function on the process-local share; no cross-process program at all).

Each process writes ``<out_dir>/worker-<process_id>.json`` with its times and compile time.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class WorkerSpec:
    """What one worker process measures (JSON-serialisable; passed on the command line)."""

    mode: str  # processes | devices
    scenarios: int
    agents: int
    steps: int
    repeats: int
    warmup: int
    out_dir: str
    num_processes: int = 1
    process_id: int = 0
    coordinator: str = ""
    devices: int = 1
    engine: str = "executor"  # executor | simulate

    def to_arg(self) -> str:
        return json.dumps(asdict(self))


def _barrier(name: str, spec: WorkerSpec) -> None:
    if spec.mode == "processes" and spec.num_processes > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def _start(spec: WorkerSpec):
    """Join the process group (processes mode) and return the devices this worker uses."""
    import jax

    if spec.mode == "processes":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        if spec.num_processes > 1:
            jax.distributed.initialize(spec.coordinator, spec.num_processes, spec.process_id)
        return jax.local_devices()[:1] if spec.engine == "simulate" else jax.devices()
    devices = jax.local_devices()
    if spec.devices > len(devices):
        raise SystemExit(f"scale_worker: asked for {spec.devices} devices, {len(devices)} visible")
    return devices[: spec.devices]


def _simulate_call(spec: WorkerSpec, host, devices, sim):
    """(call, compile seconds, compiled bytes, scenarios) for the jitted core ``simulate``."""
    from drivesim.bench.workloads import place
    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.parallel.memory import compiled_bytes

    batch, placed = place(host, devices)
    policy = idm_policy()
    start = time.perf_counter()
    compiled = simulate.lower(batch, policy, config=sim, devices=len(devices)).compile()
    compile_s = time.perf_counter() - start
    return (lambda: compiled(batch, policy)), compile_s, compiled_bytes(compiled), placed


def _executor_call(spec: WorkerSpec, host, devices, sim):
    """(call, first-call seconds (compile + one run), compiled bytes, scenarios) for the Executor."""
    import jax

    from drivesim.core.policies import idm_policy
    from drivesim.parallel.executor import Executor, ExecutorConfig

    config = ExecutorConfig(backend="sharding", devices=len(devices), chunk=None, donate=False)
    executor = Executor(config, sim)
    dbatch = executor.put(host)
    policy = idm_policy()
    call = lambda: executor.run(dbatch, policy).metrics  # noqa: E731
    start = time.perf_counter()
    jax.block_until_ready(call())
    compile_s = time.perf_counter() - start
    try:
        nbytes = executor.compiled_memory_bytes(dbatch.chunks[0])
    except Exception:  # noqa: BLE001 - memory is optional information
        nbytes = None
    return call, compile_s, nbytes, int(host.valid.shape[0])


def run(spec: WorkerSpec) -> dict:
    """Measure and return this process's result (also written to its JSON file)."""
    devices = _start(spec)
    import jax

    from drivesim.bench.workloads import Workload, make_batch, sim_config
    from drivesim.parallel.memory import device_memory, host_rss

    total = Workload(scenarios=spec.scenarios, agents=spec.agents, steps=spec.steps)
    mine = total.share(spec.process_id, spec.num_processes) if spec.mode == "processes" else total
    build = _executor_call if spec.engine == "executor" else _simulate_call
    call, compile_s, nbytes, placed = build(spec, make_batch(mine), devices, sim_config(total))
    for _ in range(spec.warmup):
        jax.block_until_ready(call())
    times = []
    for r in range(spec.repeats):
        _barrier(f"start-{r}", spec)
        start = time.perf_counter()
        jax.block_until_ready(call())
        _barrier(f"end-{r}", spec)
        times.append(time.perf_counter() - start)
    in_use, peak = device_memory()
    result = {
        "process_id": spec.process_id,
        "times": times,
        "compile_s": compile_s,
        "scenarios": placed,
        "device_kind": devices[0].device_kind,
        "platform": devices[0].platform,
        "engine": spec.engine,
        "jax_version": jax.__version__,
        "compiled_bytes": nbytes,
        "device_bytes_in_use": in_use,
        "device_peak_bytes": peak,
        "host_rss_bytes": host_rss(),
    }
    Path(spec.out_dir, f"worker-{spec.process_id}.json").write_text(json.dumps(result))
    _barrier("done", spec)
    if spec.mode == "processes" and spec.num_processes > 1:
        jax.distributed.shutdown()
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="WorkerSpec as JSON")
    args = parser.parse_args(argv)
    run(WorkerSpec(**json.loads(args.spec)))


if __name__ == "__main__":
    main()
