"""drivesim: autonomous-driving scenario simulation by the million on every JAX device.

The names most programs need; each room (``drivesim.core``, ``drivesim.scenarios``,
``drivesim.parallel``, ``drivesim.pipeline``, ``drivesim.bench``, ``drivesim.report``,
``drivesim.train``) exports its own. Imported on first use. Importing drivesim turns JAX's
persistent compilation cache on (drivesim.parallel.compile_cache; ``DRIVESIM_JAX_CACHE=off``
leaves it off).
"""

from __future__ import annotations

from drivesim._exports import lazy_exports
from drivesim.parallel import compile_cache

compile_cache.enable_on_import()  # the persistent compilation cache (DRIVESIM_JAX_CACHE=off: none)

__version__ = "0.1.0"

_EXPORTS = {
    "SimConfig": "drivesim.core.types",
    "Scenario": "drivesim.core.types",
    "RolloutMetrics": "drivesim.core.types",
    "Trajectory": "drivesim.core.types",
    "simulate": "drivesim.core.rollout",
    "simulate_trajectory": "drivesim.core.trajectory",
    "EgoPolicy": "drivesim.core.policies",
    "EgoInputs": "drivesim.core.policies",
    "policy_named": "drivesim.pipeline.policy_names",
    "register_policy": "drivesim.pipeline.policy_names",
    "idm_policy": "drivesim.core.policies",
    "stack_policies": "drivesim.core.policies",
    "FamilyConfig": "drivesim.scenarios.synthetic",
    "generate": "drivesim.scenarios.synthetic",
    "pad_and_stack": "drivesim.scenarios.batching",
    "Executor": "drivesim.parallel.executor",
    "ExecutorConfig": "drivesim.parallel.executor",
    "CampaignConfig": "drivesim.pipeline.config",
    "run_campaign": "drivesim.pipeline.campaign",
}
__all__ = ["__version__", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
