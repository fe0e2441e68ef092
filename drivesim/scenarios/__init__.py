"""Making and reading scenarios on the host (NumPy): synthetic families, CommonRoad, Waymo
Open Motion and Argoverse 2 import, the Parquet store, sources, padding and bucketing."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "ScenarioRecord": "drivesim.scenarios.record",
    "FAMILIES": "drivesim.scenarios.synthetic",
    "FamilyConfig": "drivesim.scenarios.synthetic",
    "generate": "drivesim.scenarios.synthetic",
    "ImportConfig": "drivesim.scenarios.commonroad",
    "load_commonroad": "drivesim.scenarios.commonroad",
    "load_womd": "drivesim.scenarios.womd",
    "read_womd": "drivesim.scenarios.womd",
    "WomdSource": "drivesim.scenarios.womd",
    "load_av2": "drivesim.scenarios.av2",
    "read_av2": "drivesim.scenarios.av2",
    "Av2Source": "drivesim.scenarios.av2",
    "ScenarioStore": "drivesim.scenarios.store",
    "write_store": "drivesim.scenarios.store",
    "parse_sources": "drivesim.scenarios.sources",
    "ScenarioSource": "drivesim.scenarios.sources",
    "SourceContext": "drivesim.scenarios.registry",
    "SourceSpec": "drivesim.scenarios.registry",
    "parse_spec": "drivesim.scenarios.registry",
    "register_source": "drivesim.scenarios.registry",
    "registered_sources": "drivesim.scenarios.registry",
    "SIZE_CLASSES": "drivesim.scenarios.batching",
    "bucket_records": "drivesim.scenarios.batching",
    "pad_and_stack": "drivesim.scenarios.batching",
    "padding_waste": "drivesim.scenarios.batching",
    "size_class": "drivesim.scenarios.batching",
    "Light": "drivesim.scenarios.signal_timing",
    "two_phase": "drivesim.scenarios.signal_timing",
    "yellow_interval": "drivesim.scenarios.signal_timing",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
