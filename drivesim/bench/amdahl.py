"""Amdahl's law fit of a strong-scaling curve.

Speed-up with N devices and serial fraction p: S(N) = 1 / (p + (1 - p) / N). Rewritten,
y = 1/S - 1/N = p * (1 - 1/N) = p * x, a line through the origin, so p is the least-squares
slope sum(x y) / sum(x^2). Its standard error comes from the residuals when there are more
informative points than parameters, and from the measured speed-up errors otherwise
(whichever is larger).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AmdahlFit:
    """serial_fraction p, its standard error, the predicted ceiling 1/p (inf for p <= 0),
    and the number of informative points (N > 1)."""

    serial_fraction: float
    serial_fraction_std: float
    ceiling: float
    points: int

    def predict(self, devices) -> np.ndarray:
        """Predicted speed-up at ``devices`` (array of N)."""
        n = np.asarray(devices, dtype=np.float64)
        return 1.0 / (self.serial_fraction + (1.0 - self.serial_fraction) / n)


def fit_amdahl(devices, speedups, speedup_err=None) -> AmdahlFit:
    """Fit p to speed-ups ``speedups`` (k,) measured at device counts ``devices`` (k,);
    ``speedup_err`` (k,) optional standard errors of the speed-ups."""
    n = np.asarray(devices, dtype=np.float64)
    s = np.asarray(speedups, dtype=np.float64)
    if n.shape != s.shape or n.size == 0 or np.any(n < 1) or np.any(s <= 0):
        raise ValueError("fit_amdahl: devices (>= 1) and speedups (> 0) must be equally long arrays")
    x = 1.0 - 1.0 / n
    y = 1.0 / s - 1.0 / n
    informative = x > 0
    k = int(informative.sum())
    if k == 0:
        return AmdahlFit(math.nan, math.nan, math.nan, 0)
    sxx = float(np.sum(x[informative] ** 2))
    p = float(np.sum(x[informative] * y[informative]) / sxx)
    std = 0.0
    if k > 1:
        resid = y[informative] - p * x[informative]
        std = math.sqrt(float(np.sum(resid**2)) / (k - 1) / sxx)
    if speedup_err is not None:
        err = np.asarray(speedup_err, dtype=np.float64)[informative]
        sigma_y = err / s[informative] ** 2  # d(1/S) = dS / S^2
        with np.errstate(divide="ignore"):
            weight = np.sum(x[informative] ** 2 / np.where(sigma_y > 0, sigma_y**2, np.inf))
        if weight > 0:
            std = max(std, 1.0 / math.sqrt(float(weight)))
    ceiling = 1.0 / p if p > 0 else math.inf
    return AmdahlFit(serial_fraction=p, serial_fraction_std=std, ceiling=ceiling, points=k)


def claimed_ceiling(serial_fraction: float, std: float | None, points: int | None = None):
    """(1 / p, 1 / (p + 2 std), 1 / (p - 2 std)): the ceiling a fit may claim, or None when
    it may not: the serial fraction is not above zero by two standard errors, or the fit has
    fewer than two device counts beyond one (``points``; None: not recorded)."""
    p, sigma = float(serial_fraction), float(std or 0.0)
    if not math.isfinite(p) or (points is not None and points < 2) or p - 2 * sigma <= 0:
        return None
    return 1.0 / p, 1.0 / (p + 2 * sigma), 1.0 / (p - 2 * sigma)


def ceiling_claim(serial_fraction: float, std: float | None, points: int | None = None) -> str:
    """What a fit may say of the speed-up's ceiling, with its uncertainty (claimed_ceiling)."""
    p, sigma = float(serial_fraction), float(std or 0.0)
    if not math.isfinite(p):
        return "no Amdahl fit (one device count only)"
    fitted = f"serial fraction {p:.3f} ± {sigma:.3f}"
    claimed = claimed_ceiling(p, sigma, points)
    if claimed is not None:
        ceiling, low, high = claimed
        return (
            f"{fitted}: the speed-up stays below about {ceiling:.1f}× ({low:.1f}–{high:.1f}×, two "
            "standard errors) however many devices are added"
        )
    if points is not None and points < 2:
        return f"{fitted} from one device count beyond one: too few points to claim a ceiling"
    return f"{fitted}: consistent with no serial part, so no ceiling can be claimed"


def efficiency(devices: int, throughput_n: float, throughput_1: float) -> float:
    """Scaling efficiency throughput(N) / (N * throughput(1))."""
    return throughput_n / (devices * throughput_1)
