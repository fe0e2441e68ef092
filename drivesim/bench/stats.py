"""Summary statistics of repeated timings: median, spread and a 95% confidence interval.

The confidence interval is either Student's t interval of the mean (default; exact for
normally distributed repeats, and what a reader can recompute by hand) or a percentile
bootstrap interval of the median (seeded, so reproducible).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

# Two-sided 95% Student t quantiles t_{0.975, df} for df = 1..30 (beyond: normal 1.960).
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t_quantile_975(df: int) -> float:
    """t_{0.975} for ``df`` degrees of freedom (table up to 30, then interpolated to 1.96)."""
    if df < 1:
        return math.nan
    if df <= 30:
        return _T975[df - 1]
    if df <= 120:  # linear in 1/df between df=30 (2.042) and df=120 (1.980)
        w = (1 / df - 1 / 120) / (1 / 30 - 1 / 120)
        return 1.980 + w * (2.042 - 1.980)
    return 1.960


@dataclass(frozen=True)
class Summary:
    """Summary of n repeated values: median, 5th/95th percentiles (spread), mean, sample
    std, and a 95% confidence interval [ci_low, ci_high] (``ci_method``: t | bootstrap)."""

    median: float
    p5: float
    p95: float
    ci_low: float
    ci_high: float
    mean: float
    std: float
    n: int
    ci_method: str = "t"

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def rel_spread(self) -> float:
        """(p95 - p5) / median: the relative spread of the repeats."""
        return (self.p95 - self.p5) / self.median if self.median else math.nan


def t_interval(values: np.ndarray) -> tuple[float, float]:
    """95% t confidence interval of the mean of ``values`` (n,); (nan, nan) when n < 2."""
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    mean = float(np.mean(values))
    half = t_quantile_975(n - 1) * float(np.std(values, ddof=1)) / math.sqrt(n)
    return mean - half, mean + half


def bootstrap_interval(values: np.ndarray, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap confidence interval of the median of ``values`` (n,)."""
    if len(values) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    medians = np.median(values[picks], axis=1)
    low, high = np.percentile(medians, [2.5, 97.5])
    return float(low), float(high)


def summarize(values, ci_method: str = "t") -> Summary:
    """Summary of ``values`` (n,) floats; ``ci_method`` "t" (mean) or "bootstrap" (median)."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    if arr.size == 0:
        raise ValueError("summarize: no values")
    if ci_method == "t":
        low, high = t_interval(arr)
    elif ci_method == "bootstrap":
        low, high = bootstrap_interval(arr)
    else:
        raise ValueError(f"summarize: unknown ci_method {ci_method!r} (t | bootstrap)")
    if arr.min() >= 0 and low < 0:  # values that cannot be negative (rates): neither can their mean
        low = 0.0
    p5, p95 = np.percentile(arr, [5, 95])
    std = float(np.std(arr, ddof=1)) if arr.size > 1 else 0.0
    return Summary(
        median=float(np.median(arr)),
        p5=float(p5),
        p95=float(p95),
        ci_low=low,
        ci_high=high,
        mean=float(np.mean(arr)),
        std=std,
        n=int(arr.size),
        ci_method=ci_method,
    )


def rates(work: float, seconds, ci_method: str = "t") -> Summary:
    """Summary of the rates ``work / seconds`` over repeated timings ``seconds`` (n,)."""
    secs = np.asarray(seconds, dtype=np.float64)
    if np.any(secs <= 0):
        raise ValueError("rates: timings must be > 0")
    return summarize(work / secs, ci_method)
