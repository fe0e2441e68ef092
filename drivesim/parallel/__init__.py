"""Devices: the Executor (sharding / shard_map / pmap), multi-process start, memory readings."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "DeviceBatch": "drivesim.parallel.executor",
    "DeviceResult": "drivesim.parallel.executor",
    "Executor": "drivesim.parallel.executor",
    "ExecutorConfig": "drivesim.parallel.executor",
    "DistributedConfig": "drivesim.parallel.distributed",
    "initialize": "drivesim.parallel.distributed",
    "compiled_bytes": "drivesim.parallel.memory",
    "device_memory": "drivesim.parallel.memory",
    "host_rss": "drivesim.parallel.memory",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
