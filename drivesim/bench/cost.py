"""Cost per million scenarios from a price per device-hour.

Default prices are rough on-demand cloud list prices in USD per device-hour (2025); they
are placeholders to compare points of one sweep, not quotes: override with ``--price``.
"""

from __future__ import annotations

DEFAULT_PRICES = {
    "H200": 3.80,
    "H100": 2.50,
    "A100": 1.60,
    "L40S": 1.00,
    "L4": 0.70,
    "A10G": 1.00,
    "T4": 0.35,
    "V100": 2.50,
    "TPU v5e": 1.20,
    "TPU v5p": 4.20,
    "TPU v4": 3.20,
    "cpu": 0.05,  # one CPU core (one pinned process) per hour
}


def price_for(device_kind: str, override: float | None = None) -> float | None:
    """Price per device-hour of ``device_kind`` (longest matching table key, case-insensitive),
    ``override`` when given, None when unknown."""
    if override is not None:
        return float(override)
    kind = device_kind.lower()
    matches = [k for k in DEFAULT_PRICES if k.lower() in kind]
    return DEFAULT_PRICES[max(matches, key=len)] if matches else None


def cost_per_million(
    scenarios_per_s: float, devices: int, price_per_device_hour: float | None
) -> float | None:
    """USD to simulate one million scenarios at ``scenarios_per_s`` on ``devices`` devices."""
    if price_per_device_hour is None or not scenarios_per_s or scenarios_per_s <= 0:
        return None
    hours = 1e6 / scenarios_per_s / 3600.0
    return hours * devices * price_per_device_hour
