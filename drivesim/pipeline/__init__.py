"""Campaigns: configuration, the resumable runner, results (Parquet + DuckDB)."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "CampaignConfig": "drivesim.pipeline.config",
    "read_config": "drivesim.pipeline.config",
    "policy_named": "drivesim.pipeline.policy_names",
    "register_policy": "drivesim.pipeline.policy_names",
    "CampaignResult": "drivesim.pipeline.campaign",
    "run_campaign": "drivesim.pipeline.campaign",
    "BatchEvent": "drivesim.pipeline.timing",
    "PhaseTimes": "drivesim.pipeline.timing",
    "connect": "drivesim.pipeline.results",
    "query": "drivesim.pipeline.results",
    "results_relation": "drivesim.pipeline.results",
    "results_table": "drivesim.pipeline.results",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
