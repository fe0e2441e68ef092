"""Up-front checks of a campaign configuration, with documented bounds.

:func:`validate_config` runs before anything is written to the campaign directory: every
numeric field against :data:`BOUNDS`, the backend, the policy and sweep files, the source
specs (kinds, families, paths). :func:`check_idm_variant` holds sweep parameters to finite,
physical ranges (:data:`IDM_BOUNDS`; booleans and strings refused). Errors are
:class:`ConfigError` naming the field and the value (a usage error: exit status 2).
"""

from __future__ import annotations

import math
import pathlib

MAX_ID = 2**31 - 1  # scenario ids are int32

# field: (lowest, highest) accepted, inclusive; the CLI options use the same numbers.
BOUNDS: dict[str, tuple[int, int]] = {
    "count": (1, MAX_ID),
    "batch_size": (1, 65536),
    "window_batches": (1, 4096),
    "num_steps": (1, 10000),
    "agents": (1, 128),
    "max_agents": (1, 128),
    "seed": (0, MAX_ID),
    "loader_threads": (1, 64),
    "prefetch": (1, 64),
    "retries": (0, 10),
    "devices": (1, 4096),
    "chunk": (1, 65536),
}

# IDM sweep parameters: (lowest, highest, lowest is exclusive); units m/s, s, m, m/s^2, -.
IDM_BOUNDS: dict[str, tuple[float, float, bool]] = {
    "v0": (0.0, 70.0, True),
    "T": (0.0, 10.0, False),  # T = 0: no time headway (a tailgater); IDM never divides by T
    "s0": (0.0, 50.0, False),
    "a": (0.0, 10.0, True),
    "b": (0.0, 15.0, True),
    "delta": (0.0, 10.0, True),
}
MAX_SWEEP_VARIANTS = 1024


class ConfigError(ValueError):
    """A configuration value out of bounds or of the wrong type (a usage error)."""

    exit_code = 2


def _check_int(name: str, value, bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}: expected an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"{name}: {value} is outside [{lo}, {hi}]")


def check_idm_variant(where: str, index: int, variant) -> dict[str, float]:
    """One sweep variant as floats; ConfigError for an unknown name, a non-number (booleans
    included), a non-finite value or a value outside :data:`IDM_BOUNDS`."""
    if not isinstance(variant, dict):
        raise ConfigError(f"{where}: policy {index}: expected a table of IDM parameters, got {variant!r}")
    out = {}
    for key, value in variant.items():
        if key not in IDM_BOUNDS:
            known = sorted(IDM_BOUNDS)
            raise ConfigError(f"{where}: policy {index}: unknown IDM parameter {key!r}; known: {known}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: policy {index}: {key} = {value!r} is not a number")
        lo, hi, open_lo = IDM_BOUNDS[key]
        v = float(value)
        if not math.isfinite(v) or v > hi or v < lo or (open_lo and v == lo):
            left = "(" if open_lo else "["
            raise ConfigError(f"{where}: policy {index}: {key} = {value!r} is outside {left}{lo:g}, {hi:g}]")
        out[key] = v
    return out


def _check_sources(specs) -> None:
    """Each spec parses to a registered kind, passes that kind's checks and its files exist."""
    from drivesim.scenarios.registry import SourceSpecError, check_spec

    for spec in specs:
        try:
            check_spec(str(spec))
        except SourceSpecError as err:
            raise ConfigError(f"--source {spec!r}: {err.reason}") from None


def validate_config(config, available_devices: int | None = None):
    """Raise ConfigError for the first invalid field of a CampaignConfig (nothing written);
    return its PolicySpec (drivesim.pipeline.config.policy_spec: the sweep or MLP files read)."""
    from drivesim.parallel.backends import BACKENDS

    for name, bounds in BOUNDS.items():
        value = getattr(config, name, None)
        if name in ("chunk", "batch_size") and value == "auto":
            continue
        if value is not None:
            _check_int(name, value, bounds)
    if config.backend not in BACKENDS:
        raise ConfigError(f"backend: unknown backend {config.backend!r}; known: {', '.join(BACKENDS)}")
    if available_devices is not None and config.devices is not None and config.devices > available_devices:
        raise ConfigError(f"devices: {config.devices} requested but only {available_devices} available")
    if isinstance(config.chunk, str) and config.chunk != "auto":
        raise ConfigError(f"chunk: expected an integer or 'auto', got {config.chunk!r}")
    if config.agents is not None and config.max_agents is not None and config.agents > config.max_agents:
        raise ConfigError(f"agents: {config.agents} is more than max_agents {config.max_agents}")
    from drivesim.pipeline.policy_names import split_policy

    try:
        split_policy(config.policy)  # a registered name, NAME:ARG,... or package.module:NAME
    except ValueError as err:
        raise ConfigError(f"policy: {err}") from None
    if config.sweep and not pathlib.Path(config.sweep).is_file():
        raise ConfigError(f"sweep: {config.sweep} is not a file")
    _check_sources(config.sources)
    if getattr(config, "cluster", None) is not None:
        from drivesim.pipeline.cluster import parse_cluster

        parse_cluster(config.cluster)  # Ray itself is imported only when the campaign starts
    from drivesim.pipeline.config import policy_spec

    return policy_spec(config)  # reads and checks the sweep / MLP policy file
