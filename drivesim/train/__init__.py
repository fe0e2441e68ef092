"""Training an MLP ego policy with PPO on every device; policy files; evaluation."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "EnvConfig": "drivesim.train.config",
    "PPOConfig": "drivesim.train.config",
    "RewardConfig": "drivesim.train.config",
    "TrainConfig": "drivesim.train.config",
    "read_curve": "drivesim.train.loop",
    "train": "drivesim.train.loop",
    "evaluate_campaign": "drivesim.train.evaluate",
    "evaluate_direct": "drivesim.train.evaluate",
    "evaluate_policy": "drivesim.train.evaluate",
    "load_policy": "drivesim.train.policy_io",
    "save_policy": "drivesim.train.policy_io",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
