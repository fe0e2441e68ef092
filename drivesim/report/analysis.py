"""Numbers behind the dashboard's figures: throughput series, bottleneck verdict, knee, Amdahl.

Pure NumPy on ledger rows and bench records; no plotting here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drivesim.bench import bottleneck as rule
from drivesim.bench.bottleneck import PHASES as PHASE_NAMES

PHASE_LABELS = {
    "load": "load",
    "h2d": "transfer",
    "compute": "compute",
    "d2h": "return",
    "write": "write",
    "compile": "compile",
}
PHASES = tuple((f"{name}_s", PHASE_LABELS[name]) for name in PHASE_NAMES)  # (ledger column, label)


@dataclass(frozen=True)
class Throughput:
    """Throughput over a campaign, from ledger phases rows.

    t: (B,) seconds since the first batch started, at each batch end (sorted).
    per_batch: (B,) scenarios / batch wall time. rolling: (B,) completions / elapsed over a
    window of batches. cumulative: (B,) scenarios done by t. batch_s: (B,) batch wall times.
    """

    t: np.ndarray
    per_batch: np.ndarray
    rolling: np.ndarray
    cumulative: np.ndarray
    batch_s: np.ndarray
    window: int

    @property
    def mean(self) -> float:
        """Scenarios per second over the whole run."""
        return float(self.cumulative[-1] / self.t[-1]) if len(self.t) and self.t[-1] > 0 else float("nan")


def column(rows: list[dict], key: str) -> np.ndarray:
    """(len(rows),) float array of rows[i][key], NaN where missing."""
    out = np.full(len(rows), np.nan)
    for i, row in enumerate(rows):
        value = row.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[i] = float(value)
    return out


def throughput(phases: list[dict], window: int | None = None) -> Throughput | None:
    """Throughput series from phases rows with wall_start/wall_end/num_scenarios; None if none usable."""
    start, end, n = column(phases, "wall_start"), column(phases, "wall_end"), column(phases, "num_scenarios")
    keep = np.isfinite(start) & np.isfinite(end) & np.isfinite(n) & (end >= start)
    if not keep.any():
        return None
    start, end, n = start[keep], end[keep], n[keep]
    order = np.argsort(end, kind="stable")
    start, end, n = start[order], end[order], n[order]
    t0 = float(start.min())
    batch_s = end - start
    per_batch = n / np.maximum(batch_s, 1e-9)
    window = window or min(len(n), max(3, min(20, len(n) // 10)))
    cumulative = np.cumsum(n)
    rolling = np.empty_like(per_batch)
    for i in range(len(n)):
        lo = max(0, i - window + 1)
        first = start[lo] if lo == 0 else end[lo - 1]
        rolling[i] = (cumulative[i] - (cumulative[lo - 1] if lo else 0)) / max(end[i] - first, 1e-9)
    return Throughput(
        t=end - t0,
        per_batch=per_batch,
        rolling=rolling,
        cumulative=cumulative,
        batch_s=batch_s,
        window=window,
    )


def downsample(x: np.ndarray, y: np.ndarray, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """At most max_points (x, y) pairs: bin means of consecutive points (keeps plots small)."""
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points + 1).astype(int)
    xs = np.add.reduceat(x, edges[:-1]) / np.diff(edges)
    ys = np.add.reduceat(y, edges[:-1]) / np.diff(edges)
    return xs, ys


@dataclass(frozen=True)
class Verdict:
    """Where a campaign's time went, by the rule of :mod:`drivesim.bench.bottleneck` (the one
    ``drivesim bench pipeline`` applies): totals per phase and ``other`` (seconds, with the
    wall span), the bottleneck category, its share of the stage time and the verdict in words."""

    totals: dict[str, float]
    bottleneck: str
    share: float
    text: str


def bottleneck(phases: list[dict], loader_threads: int = 1) -> Verdict | None:
    """The bottleneck of ledger ``phases`` rows (``load`` shared by ``loader_threads``),
    its share and a recommendation; None without measured time."""
    totals = rule.totals_from_rows(phases, loader_threads)
    found = rule.verdict(totals)
    if not any(found.shares.values()):
        return None
    share = found.shares[found.bottleneck]
    ranked = sorted(found.shares.items(), key=lambda kv: -kv[1])
    parts = ", ".join(f"{k} {v:.0%}" for k, v in ranked if v > 0)
    text = f"Bottleneck: {found.bottleneck} ({share:.0%} of stage time; {parts}). {found.recommendation}."
    return Verdict(totals=totals.as_dict(), bottleneck=found.bottleneck, share=share, text=text)


def knee(batch_sizes: np.ndarray, rates: np.ndarray, fraction: float = 0.9) -> int | None:
    """Index of the smallest batch size reaching ``fraction`` of the best throughput (the knee)."""
    ok = np.isfinite(rates)
    if not ok.any():
        return None
    best = float(np.nanmax(rates))
    order = np.argsort(batch_sizes)
    for i in order:
        if ok[i] and rates[i] >= fraction * best:
            return int(i)
    return None


def amdahl_speedup(devices: np.ndarray, serial_fraction: float) -> np.ndarray:
    """Amdahl's law: speed-up on n devices with serial fraction s, 1 / (s + (1 - s) / n)."""
    s = float(np.clip(serial_fraction, 0.0, 1.0))
    return 1.0 / (s + (1.0 - s) / np.asarray(devices, dtype=float))


def fit_amdahl(devices: np.ndarray, speedup: np.ndarray) -> float | None:
    """Least-squares serial fraction s from measured speed-ups (1/S = s + (1-s)/n is linear in s)."""
    n, sp = np.asarray(devices, float), np.asarray(speedup, float)
    ok = np.isfinite(n) & np.isfinite(sp) & (sp > 0) & (n > 1)
    if ok.sum() < 1:
        return None
    a = 1.0 - 1.0 / n[ok]
    b = 1.0 / sp[ok] - 1.0 / n[ok]
    return float(np.clip(np.dot(a, b) / np.dot(a, a), 0.0, 1.0))
