"""The Executor: the batched engine over every device JAX can see.

``put`` pads a host batch to a multiple of (devices x chunk) with invalid scenarios and sends
it, dispatch by dispatch, straight into the target sharding; ``run`` dispatches every chunk
asynchronously (donating the consumed batch); ``fetch`` brings the per-scenario metrics of
this process's real rows back as NumPy; ``aggregate`` reduces them on the devices.

Per-scenario results do not depend on the backend, device count (1 included), chunk size or
process count (bitwise; tested): a single CPU device is run as a pair unless programs are
FMA-free (drivesim.parallel.determinism). A dispatch that fails with an XLA runtime error
drops the failed devices, rebuilds the mesh and redoes the batch on the rest (single-process
runs).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.errors import JaxRuntimeError
from jax.sharding import PartitionSpec

from drivesim.core import search_choice
from drivesim.core.policies import default_policy_params, stack_policies
from drivesim.core.types import RolloutMetrics, Scenario, SimConfig
from drivesim.parallel import determinism, distributed, generated
from drivesim.parallel.backends import BACKENDS, ProgramKey, compile_program
from drivesim.parallel.exact_pass import ExactPass
from drivesim.parallel.failover import DispatchInfo, failed_device_ids
from drivesim.parallel.memory import compiled_bytes
from drivesim.parallel.mesh import (
    DATA,
    MIN_ROWS_PER_DEVICE,
    Layout,
    batch_rows,
    data_sharding,
    make_data_mesh,
    pad_rows,
    plan_layout,
    select_devices,
    slice_rows,
)
from drivesim.parallel.programs import EXECUTOR_PROGRAMS
from drivesim.parallel.reductions import combine, finalize, reducer

log = logging.getLogger(__name__)

DEFAULT_CPU_BUDGET = 2 << 30  # bytes for chunk="auto" where devices report no memory stats


@dataclass(frozen=True)
class ExecutorConfig:
    """How the executor runs.

    backend: "sharding" | "shard_map" | "pmap".
    devices: how many (global) devices to use; None = all.
    chunk: scenarios per device per dispatch (bounds device memory); "auto" = the largest
        whose compiled memory fits the budget; None = the whole batch in one dispatch.
    memory_budget_bytes: budget for chunk="auto" where ``memory_stats()`` is None (CPU).
    memory_fraction: share of free device memory chunk="auto" may use where it is known.
    donate: donate the device batch to the dispatch that consumes it.
    max_retries: device-failure recoveries per batch before the error propagates.
    inject_failure: test hook called with a DispatchInfo before each dispatch; it may raise
        (see drivesim.parallel.failover.FailureInjector).
    """

    backend: str = "sharding"
    devices: int | None = None
    chunk: int | str | None = None
    memory_budget_bytes: int | None = None
    memory_fraction: float = 0.8
    donate: bool = True
    max_retries: int = 2
    inject_failure: Callable[[DispatchInfo], None] | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"ExecutorConfig.backend: unknown backend {self.backend!r}; known: {BACKENDS}")
        if not (
            self.chunk is None or self.chunk == "auto" or (isinstance(self.chunk, int) and self.chunk >= 1)
        ):
            raise ValueError(
                f"ExecutorConfig.chunk: expected a positive int, 'auto' or None, got {self.chunk!r}"
            )


@dataclass
class DeviceBatch:
    """A batch on the devices: one input per dispatch.

    chunks: Scenario of global arrays per dispatch, leaves (D*c, ...) ((D, c, ...) for pmap).
    valid: per dispatch (D*c,) ((D, c) for pmap) bool device masks (padding rows False).
    layout: the split; host: the unpadded host batch (kept to redo it after a failure).
    mesh: the mesh the chunks live on.
    """

    chunks: list
    valid: list
    layout: Layout
    host: Scenario
    mesh: object


@dataclass
class DeviceResult:
    """Per-scenario metrics on the devices, one RolloutMetrics of global arrays per dispatch;
    leaves (D*c,) or (P, D*c) for a sweep ((D, c) / (D, P, c) for pmap)."""

    metrics: list
    valid: list
    layout: Layout
    mesh: object
    backend: str
    sweep: bool
    host: Scenario = field(repr=False)  # the batch's host rows, for the exact fallback
    policy: object = field(repr=False)
    redo: Callable[[], DeviceResult] = field(repr=False)
    completed: RolloutMetrics | None = field(default=None, repr=False)  # what fetch returned


class Executor:
    """Runs batches of scenarios over a device mesh (see the module docstring)."""

    def __init__(self, config: ExecutorConfig, sim: SimConfig):
        if config.backend == "pmap" and distributed.is_multiprocess():
            raise ValueError("ExecutorConfig.backend: pmap is single-process here; use sharding or shard_map")
        self.config = config
        self.sim = sim
        self._lock = threading.RLock()
        self._auto_chunk: dict = {}
        self._programs = EXECUTOR_PROGRAMS  # shared by the process: same program, one compile
        self.compile_seconds = 0.0  # seconds this executor spent in lower().compile()
        # "AGENTSxSEGMENTS" -> SearchPlan.record() of each program shape it compiled
        self.search_plans: dict[str, dict] = {}
        self.exact_pass = ExactPass(sim, self._programs)  # the fallback, compiled apart
        self._use(determinism.paired(select_devices(config.devices)))

    # ---- devices -------------------------------------------------------------------
    def _use(self, devices: list) -> None:
        self.devices = devices
        self.mesh = make_data_mesh(devices)
        self.local_devices = [d for d in devices if d.process_index == jax.process_index()]

    @property
    def num_devices(self) -> int:
        """Global devices of the mesh in use (fewer after a device failure)."""
        return len(self.devices)

    def _recover(self, error: BaseException) -> None:
        """Drop the devices that failed (if any were found) and rebuild the mesh."""
        if distributed.is_multiprocess():
            raise error
        bad = failed_device_ids(error, self.devices)
        left = [d for d in self.devices if d.id not in bad]
        if not left:
            raise error
        log.warning(
            "dispatch failed (%s); dropping devices %s, carrying on with %d", error, sorted(bad), len(left)
        )
        self._use(left)

    # ---- host -> devices ---------------------------------------------------------------
    def put(self, batch: Scenario) -> DeviceBatch:
        """Send a host batch (NumPy leaves, leading axis B; this process's rows in a
        multi-process run) to the devices, padded to whole dispatches. Asynchronous."""
        with self._lock:
            host, max_rows = distributed.agree_batch(batch)
            rows = batch_rows(host)
            if rows == 0:
                raise ValueError("Executor.put: empty batch")
            # Every process plans for the largest share (same dispatch count and shapes) ...
            layout = plan_layout(max_rows, len(self.local_devices), self._chunk_for(host, max_rows))
            layout = dataclasses.replace(layout, rows=rows)  # ... and keeps its own real rows
            padded = pad_rows(host, layout.padded_rows)
            step = layout.per_dispatch
            parts = [slice_rows(padded, k * step, (k + 1) * step) for k in range(layout.n_chunks)]
            chunks = [self._to_device(part) for part in parts]
            valid = [self._to_device(np.asarray(part.valid)) for part in parts]
            return DeviceBatch(chunks=chunks, valid=valid, layout=layout, host=host, mesh=self.mesh)

    def _to_device(self, tree):
        """Host rows (D_local*c, ...) -> global arrays in the target sharding (no detour
        through device 0: each shard goes straight to its device)."""
        sharding = data_sharding(self.mesh)
        if self.config.backend == "pmap":
            tree = jax.tree_util.tree_map(
                lambda a: np.asarray(a).reshape(self.num_devices, -1, *a.shape[1:]), tree
            )
        if not distributed.is_multiprocess():
            return jax.device_put(tree, sharding)
        local, total = len(self.local_devices), self.num_devices
        return jax.tree_util.tree_map(
            lambda a: distributed.global_array(sharding, np.asarray(a), local, total), tree
        )

    # ---- dispatch ------------------------------------------------------------------------
    def run(self, dbatch: DeviceBatch, policy) -> DeviceResult:
        """Dispatch every chunk of ``dbatch`` with one ego ``policy`` (asynchronous).
        The device batch is consumed (donated)."""
        return self._run(dbatch, policy, sweep=False)

    def run_sweep(self, dbatch: DeviceBatch, policies) -> DeviceResult:
        """Every scenario under each of P policies (stacked, leading axis P, or a list) in
        one program per dispatch; ``fetch`` gives (P, B) metrics."""
        if isinstance(policies, (list, tuple)):
            policies = stack_policies(list(policies))
        return self._run(dbatch, policies, sweep=True)

    def _run(self, dbatch: DeviceBatch, policy, sweep: bool) -> DeviceResult:
        for attempt in range(self.config.max_retries + 1):
            try:
                if dbatch.mesh is not self.mesh:  # put on a mesh since rebuilt (or just now)
                    dbatch = self.put(dbatch.host)
                return self._dispatch_all(dbatch, policy, sweep)
            except JaxRuntimeError as error:
                if attempt == self.config.max_retries:
                    raise
                self._recover(error)  # a new mesh: the next attempt puts the batch again
        raise AssertionError("unreachable")

    def _dispatch_all(self, dbatch: DeviceBatch, policy, sweep: bool) -> DeviceResult:
        ids = tuple(d.id for d in self.devices)
        outs = []
        for k, chunk in enumerate(dbatch.chunks):
            if self.config.inject_failure is not None:
                self.config.inject_failure(DispatchInfo(chunk=k, device_ids=ids, backend=self.config.backend))
            outs.append(self._program(chunk, policy, sweep)(chunk, policy))
        host = dbatch.host
        redo = lambda: self._run(self.put(host), policy, sweep)  # noqa: E731
        return DeviceResult(
            metrics=outs,
            valid=dbatch.valid,
            layout=dbatch.layout,
            mesh=self.mesh,
            backend=self.config.backend,
            sweep=sweep,
            host=host,
            policy=policy,
            redo=redo,
        )

    def _program(self, chunk, policy, sweep: bool):
        """The compiled program for these argument shapes (compiled once per process, device
        set and SimConfig, kept in the shared bounded cache; ``chunk`` may hold ShapeDtypeStructs)."""
        key = ProgramKey(self.config.backend, sweep, self.config.donate)
        ids = tuple(d.id for d in self.devices)
        sig = (key, ids, self.mesh, self.sim, _signature(chunk), _signature(policy))

        def build():
            self._record_plan(chunk)
            with warnings.catch_warnings():
                # CPU (and metric-only outputs) cannot reuse donated buffers; they are freed anyway.
                warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
                start = time.perf_counter()
                compiled = compile_program(key, self.mesh, self.sim, chunk, policy)
                self.compile_seconds += time.perf_counter() - start
                return compiled

        return self._programs.get(sig, build)

    def _record_plan(self, chunk) -> None:
        """Keep the SearchPlan a program for ``chunk``'s shapes resolves to (search_choice),
        under ``AGENTSxSEGMENTS``, followed by the direct searches its program fixes where it
        fixes them (`` zone``, `` bends``, `` none``: generated batches, core.switches), so
        programs of one shape with other searches keep their own records."""
        agents, segments = chunk.num_agents, generated.road_segments(chunk)
        platform = self.devices[0].platform
        searches = generated.searches(chunk)
        plan = search_choice.resolved(self.sim, agents, platform, segments, searches).search
        key = f"{agents}x{segments}"
        if searches is not None:
            fixed = [name for name in ("zone", "bends") if getattr(searches, name)]
            key += " " + ("+".join(fixed) or "none")
        self.search_plans[key] = plan.record()

    # ---- devices -> host -----------------------------------------------------------------
    def fetch(self, result: DeviceResult) -> RolloutMetrics:
        """This process's real rows as NumPy: (B,) leaves, (P, B) for a sweep, computed once
        per result (``aggregate`` reuses them). Redoes the batch on the remaining devices if
        its execution failed."""
        for attempt in range(self.config.max_retries + 1):
            try:
                if result.completed is None:
                    result.completed = self._completed(_local_metrics(result), result)
                return result.completed
            except JaxRuntimeError as error:
                if attempt == self.config.max_retries:
                    raise
                self._recover(error)
                result = result.redo()
        raise AssertionError("unreachable")

    def _completed(self, metrics: RolloutMetrics, result: DeviceResult) -> RolloutMetrics:
        """Fetched rows with the fast pass's flagged rows simulated again (exact_pass)."""
        before = self.exact_pass.compile_seconds
        out = self.exact_pass.complete(metrics, result.host, result.policy, result.sweep)
        self.compile_seconds += self.exact_pass.compile_seconds - before
        return out

    def aggregate(self, result: DeviceResult) -> dict:
        """Aggregate metrics over every real scenario of the (global) batch, reduced on the
        devices (per-device reduce, then all-reduce to a replicated value). Values are
        floats, or (P,) arrays for a sweep. Keys: see reductions.finalize."""
        total = self._reduced(result, result.metrics)
        if np.any(np.asarray(total["sum_window_overflow"])):  # flagged rows: reduce the exact ones
            total = self._reduced(result, self._metrics_on_devices(self.fetch(result), result))
        return finalize(total)

    def _reduced(self, result: DeviceResult, dispatches: list) -> dict:
        metric_spec, valid_spec, keep = _reduce_specs(result.backend, result.sweep)
        reduce = reducer(result.mesh, metric_spec, valid_spec, keep)
        total: dict | None = None
        for metrics, valid in zip(dispatches, result.valid, strict=True):
            part = reduce(metrics, valid)
            total = part if total is None else combine(total, part)
        assert total is not None  # a batch has at least one dispatch
        return total

    def _metrics_on_devices(self, metrics: RolloutMetrics, result: DeviceResult) -> list:
        """This process's host rows (B,) / (P, B) back on the devices in ``result``'s
        layout, one RolloutMetrics of global arrays per dispatch (as the programs left them)."""
        layout = result.layout
        rows_first = metrics
        if result.sweep:  # (P, B) -> (B, P): rows first, as put splits them
            rows_first = jax.tree_util.tree_map(lambda a: np.moveaxis(a, 0, -1), metrics)

        def pad(leaf):  # padding rows repeat the last row; the valid masks leave them out
            return np.concatenate([leaf, np.repeat(leaf[-1:], layout.padded_rows - leaf.shape[0], axis=0)])

        padded = jax.tree_util.tree_map(pad, rows_first)
        step = layout.per_dispatch
        parts = [slice_rows(padded, k * step, (k + 1) * step) for k in range(layout.n_chunks)]
        parts = [self._to_device(part) for part in parts]
        if not result.sweep:
            return parts
        axes = (0, 2, 1) if result.backend == "pmap" else (1, 0)  # (.., c, P) -> (.., P, c)
        return [jax.tree_util.tree_map(lambda a: jnp.transpose(a, axes), part) for part in parts]

    def simulate(self, batch: Scenario, policy) -> RolloutMetrics:
        """put + run + fetch: per-scenario metrics (B,) of a host batch."""
        return self.fetch(self.run(self.put(batch), policy))

    # ---- memory --------------------------------------------------------------------------
    def compiled_memory_bytes(self, batch_shape_like, sweep_size: int | None = None) -> int:
        """Per-device bytes (drivesim.parallel.memory.compiled_bytes) of one dispatch of
        ``batch_shape_like`` (a Scenario of arrays / ShapeDtypeStructs, leading axis D*c),
        from the compiled program's ``memory_analysis()``; the program is cached for runs."""
        policy = default_policy_params(self.sim)
        if sweep_size:
            policy = stack_policies([policy] * sweep_size)
        rows = int(np.shape(batch_shape_like.valid)[0])
        c = max(1, rows // self.num_devices)
        lead = (self.num_devices, c) if self.config.backend == "pmap" else (self.num_devices * c,)
        sharding = data_sharding(self.mesh)
        like = jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(lead + tuple(np.shape(a)[1:]), a.dtype, sharding=sharding),
            batch_shape_like,
        )
        nbytes = compiled_bytes(self._program(like, policy, bool(sweep_size)))
        if nbytes is None:
            raise RuntimeError("Executor.compiled_memory_bytes: this backend reports no compiled memory")
        return nbytes

    def memory_budget(self) -> int:
        """Bytes one dispatch may use per device: ``memory_fraction`` of the free device
        memory where ``memory_stats()`` reports it, else ``memory_budget_bytes`` (CPU)."""
        stats = self.local_devices[0].memory_stats() if self.local_devices else None
        configured = self.config.memory_budget_bytes
        if stats and "bytes_limit" in stats:
            free = int(self.config.memory_fraction * (stats["bytes_limit"] - stats.get("bytes_in_use", 0)))
            return min(free, configured) if configured else free
        return configured or DEFAULT_CPU_BUDGET

    def _chunk_for(self, host: Scenario, max_rows: int) -> int | None:
        if not isinstance(self.config.chunk, str):
            return self.config.chunk
        per_device = max(MIN_ROWS_PER_DEVICE, math.ceil(max_rows / len(self.local_devices)))
        row = slice_rows(host, 0, 1)
        key = (_signature(row), per_device, self.num_devices)
        if key not in self._auto_chunk:
            self._auto_chunk[key] = choose_chunk(self, row, per_device)
        return self._auto_chunk[key]


def choose_chunk(executor: Executor, row: Scenario, per_device: int) -> int:
    """Largest chunk c <= per_device whose compiled per-device memory fits the budget.

    Memory grows about linearly in c from c = 2: measure c = 2 and 4, solve for the budget,
    then check the candidate by compiling it and shrink by 10% steps until it fits. Never
    below c = 2 (mesh.MIN_ROWS_PER_DEVICE: a program of one row per device gives other last
    bits); a warning says when even 2 do not fit."""
    budget = executor.memory_budget()
    d = executor.num_devices

    def mem(c: int) -> int:
        like = jax.tree_util.tree_map(lambda a: np.broadcast_to(a, (d * c, *a.shape[1:])), row)
        return executor.compiled_memory_bytes(like)

    if per_device <= MIN_ROWS_PER_DEVICE:
        return MIN_ROWS_PER_DEVICE
    m2 = mem(2)
    if m2 > budget:
        log.warning("chunk=auto: 2 scenarios per device (the fewest) need %d bytes > budget %d", m2, budget)
        return MIN_ROWS_PER_DEVICE
    top = min(per_device, 4)
    slope = max((mem(top) - m2) // (top - 2), 1)
    c = int(min(per_device, 2 + (budget - m2) // slope))
    while c > 2 and mem(c) > budget:
        c = max(2, int(c * 0.9))
    return c


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return (treedef, tuple((tuple(np.shape(x)), str(getattr(x, "dtype", type(x)))) for x in leaves))


def _reduce_specs(backend: str, sweep: bool):
    """(metric spec, valid spec, kept policy axis) of a result's layout."""
    if backend == "pmap":
        return PartitionSpec(DATA), PartitionSpec(DATA), (1 if sweep else None)
    if sweep:
        return PartitionSpec(None, DATA), PartitionSpec(DATA), 0
    return PartitionSpec(DATA), PartitionSpec(DATA), None


def _local_shards(array, split: int) -> list:
    """This process's distinct shards of a result leaf, in row order along axis ``split``."""
    shards: dict = {}
    for shard in array.addressable_shards:
        shards.setdefault(shard.index[split].start or 0, shard.data)
    return [shards[start] for start in sorted(shards)]


def _join_rows(blocks: list, backend: str, sweep: bool, split: int) -> np.ndarray:
    """One leaf's host shards -> (D_local*c,) or (P, D_local*c)."""
    local = np.concatenate(blocks, axis=split)
    if backend != "pmap":
        return local
    if sweep:  # (D_local, P, c) -> (P, D_local*c)
        return np.moveaxis(local, 0, 1).reshape(local.shape[1], -1)
    return local.reshape(-1)


def _local_metrics(result: DeviceResult) -> RolloutMetrics:
    """This process's rows from its addressable shards (no gather), concatenated over the
    dispatches, padding dropped. Every shard of every leaf and dispatch comes back in one
    ``device_get`` (the copies overlap)."""
    axis = 1 if result.sweep else 0
    split = 1 if (result.sweep and result.backend != "pmap") else 0
    treedef = jax.tree_util.tree_structure(result.metrics[0])
    shards = [[_local_shards(a, split) for a in jax.tree_util.tree_leaves(m)] for m in result.metrics]
    host = jax.device_get(shards)  # [dispatch][leaf][shard]
    keep = (slice(None),) * axis + (slice(0, result.layout.rows),)
    leaves = [
        np.concatenate(
            [_join_rows(per_leaf[i], result.backend, result.sweep, split) for per_leaf in host], axis=axis
        )[keep]
        for i in range(treedef.num_leaves)  # type: ignore[attr-defined]  # jax stubs lack it
    ]
    return jax.tree_util.tree_unflatten(treedef, leaves)


__all__ = ["DeviceBatch", "DeviceResult", "Executor", "ExecutorConfig", "choose_chunk"]
