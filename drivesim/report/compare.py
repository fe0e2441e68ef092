"""Paired comparison of campaigns or of the policies of one sweep.

An *arm* is one (campaign directory, policy) pair. Arms are compared on the scenarios they
share (same ``scenario_id``, status ok in both): each arm's rates (collision, off-road) with
Wilson 95% intervals and means (progress, min TTC capped at ``TTC_CAP_S``) with t intervals;
against the first arm (the baseline), the paired difference with its 95% interval and p-value
(rates: McNemar's exact test and the Agresti-Min interval; means: the paired t-test and its
t interval), and the scenarios whose
collision outcome flips. Used by ``drivesim compare`` and the dashboard.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

Z95 = 1.959963984540054
TTC_CAP_S = 10.0  # min TTC above this (or infinite: never closing) counts as this in means
RATES = (
    ("ego_collided", "collision rate"),
    ("offroad", "off-road rate"),
    ("red_light_violation", "red-light violation rate"),
)
MEANS = (("progress_m", "progress [m]"), ("min_ttc_s", "min TTC [s] (capped)"))
ALPHA = 0.05


@dataclass(frozen=True)
class Arm:
    """One arm: a label, its source directory, policy and policy id, and {scenario_id: row values}."""

    label: str
    directory: str
    policy: str
    values: dict
    policy_id: int = 0


@dataclass(frozen=True)
class Estimate:
    """A rate or mean of one arm with its 95% interval over ``n`` scenarios."""

    metric: str
    arm: str
    n: int
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Difference:
    """arm minus baseline on shared scenarios: mean paired difference, 95% interval, p-value."""

    metric: str
    arm: str
    baseline: str
    n: int
    diff: float
    low: float
    high: float
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA


@dataclass
class Comparison:
    """Everything ``drivesim compare`` prints: arms, per-arm estimates on the shared scenarios,
    differences against the baseline (first arm) and the collision flips per arm."""

    arms: list[str]
    shared: int
    estimates: list[Estimate] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    flips: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "arms": self.arms,
            "shared_scenarios": self.shared,
            "estimates": [vars(e) for e in self.estimates],
            "differences": [vars(d) | {"significant": d.significant} for d in self.differences],
            "flips": self.flips,
        }


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (0, 1 for n = 0)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if successes == 0 else low), (1.0 if successes == n else high)


def mean_interval(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, low, high): Student t 95% interval of the mean."""
    from scipy import stats

    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    if n < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half


def paired_rate(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """(b - a rate, low, high, McNemar exact p) for paired booleans."""
    from scipy import stats

    n = len(a)
    gained, lost = int(np.sum(b & ~a)), int(np.sum(a & ~b))
    discordant = gained + lost
    if not n or not discordant:
        return (0.0, 0.0, 0.0, 1.0) if n else (math.nan, math.nan, math.nan, math.nan)
    # Agresti-Min (2005) interval: Wald on the table with 0.5 added to every cell
    g, lo_, m = gained + 0.5, lost + 0.5, n + 2.0
    centre = (g - lo_) / m
    se = math.sqrt(max(g + lo_ - (g - lo_) ** 2 / m, 0.0)) / m
    p = float(stats.binomtest(gained, discordant).pvalue)
    return (gained - lost) / n, centre - Z95 * se, centre + Z95 * se, p


def paired_mean(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """(mean of b - a, low, high, paired t-test p)."""
    from scipy import stats

    d = b - a
    mean, low, high = mean_interval(d)
    if len(d) < 2 or np.allclose(d, d[0]):
        return mean, mean if len(d) else math.nan, mean if len(d) else math.nan, 1.0 if mean == 0 else 0.0
    return mean, low, high, float(stats.ttest_rel(b, a).pvalue)


def load_arms(directories: Sequence[str | Path], extra: Sequence[str] = ()) -> list[Arm]:
    """The arms of campaign directories: every policy of each (a sweep gives several), with
    the compared columns and ``extra`` ones. The same directory twice is a ConfigError (a
    campaign against itself compares nothing)."""
    from drivesim.pipeline import results
    from drivesim.pipeline.validation import ConfigError

    seen: dict[Path, str] = {}
    for directory in directories:
        key = Path(directory).resolve()
        if key in seen:
            raise ConfigError(
                f"compare: {seen[key]} and {directory} are the same campaign; name two campaigns"
            )
        seen[key] = str(directory)
    arms = []
    keys = dict.fromkeys([k for k, _ in RATES + MEANS] + list(extra))  # extra: more result columns
    cols = ", ".join(["scenario_id", "policy_id", "policy", *keys])
    for directory in directories:
        table = results.query(directory, f"SELECT {cols} FROM results WHERE status = 'ok' ORDER BY policy_id")
        rows = table.to_pylist()
        policies = sorted({(r["policy_id"], r["policy"]) for r in rows})
        for pid, name in policies:
            mine = [r for r in rows if r["policy_id"] == pid]
            label = str(directory) if len(directories) > 1 and len(policies) == 1 else name
            if len(directories) > 1 and len(policies) > 1:
                label = f"{directory}:{name}"
            values = {int(r["scenario_id"]): r for r in mine}
            arms.append(Arm(label, str(directory), str(name), values, int(pid)))
    return arms


def _column(arm: Arm, ids: list[int], key: str, rate: bool | None = None) -> np.ndarray:
    """Values of ``key`` over ``ids``; a rate (``rate``, default: ``key`` is one of RATES)
    absent from a row counts as False."""
    raw = [arm.values[i].get(key) for i in ids]
    if key in dict(RATES) if rate is None else rate:
        return np.array([bool(v) for v in raw])
    out = np.array([math.nan if v is None else float(v) for v in raw], float)
    if key == "min_ttc_s":
        out = np.minimum(np.nan_to_num(out, nan=TTC_CAP_S, posinf=TTC_CAP_S), TTC_CAP_S)
    return out


def compare_arms(arms: list[Arm], max_flips: int = 50) -> Comparison:
    """Estimates and paired differences against ``arms[0]`` on the scenarios all arms share."""
    if len(arms) < 2:
        raise ValueError(f"compare needs at least two arms (campaigns or sweep policies); got {len(arms)}")
    shared = sorted(set.intersection(*(set(a.values) for a in arms)))
    out = Comparison([a.label for a in arms], len(shared))
    base = arms[0]
    for key, name in RATES + MEANS:
        columns = [_column(a, shared, key) for a in arms]
        for arm, col in zip(arms, columns, strict=True):
            if key in dict(RATES):
                k = int(col.sum())
                low, high = wilson(k, len(col))
                out.estimates.append(
                    Estimate(name, arm.label, len(col), k / len(col) if len(col) else math.nan, low, high)
                )
            else:
                ok = col[np.isfinite(col)]
                out.estimates.append(Estimate(name, arm.label, len(ok), *mean_interval(ok)))
        for arm, col in zip(arms[1:], columns[1:], strict=True):
            if key in dict(RATES):
                stats = paired_rate(columns[0], col)
            else:
                ok = np.isfinite(columns[0]) & np.isfinite(col)
                stats = paired_mean(columns[0][ok], col[ok])
            out.differences.append(Difference(name, arm.label, base.label, len(shared), *stats))
    a0 = _column(base, shared, "ego_collided")
    for arm in arms[1:]:
        a1 = _column(arm, shared, "ego_collided")
        ids = np.array(shared, dtype=np.int64)
        out.flips[arm.label] = {
            "new_collisions": ids[a1 & ~a0][:max_flips].tolist(),
            "avoided_collisions": ids[a0 & ~a1][:max_flips].tolist(),
        }
    return out


def paired_p_values(arms: list[Arm], key: str, rate: bool, reference: int) -> list[float]:
    """Per arm, the p-value of its paired difference from ``arms[reference]`` on ``key`` over
    the scenarios every arm shares: McNemar's exact test for a rate, the paired t-test for a
    mean (the tests of :func:`compare_arms`); 1.0 for the reference itself."""
    shared = sorted(set.intersection(*(set(a.values) for a in arms)))
    columns = [_column(a, shared, key, rate) for a in arms]
    base = columns[reference]
    out = []
    for k, col in enumerate(columns):
        if k == reference:
            out.append(1.0)
        elif rate:
            out.append(paired_rate(base, col)[3])
        else:
            ok = np.isfinite(base) & np.isfinite(col)
            out.append(paired_mean(base[ok], col[ok])[3])
    return out


def compare_dirs(directories: Sequence[str | Path]) -> Comparison:
    """:func:`compare_arms` over every policy of every directory."""
    return compare_arms(load_arms(directories))


def format_text(c: Comparison, width: int = 80) -> str:
    """The comparison as plain text lines of at most ``width`` columns."""
    lines = [f"arms: {len(c.arms)} · shared scenarios (ok in every arm): {c.shared:,}"]
    for k, label in enumerate(c.arms):
        lines.append(_clip(f"  [{k}] {label}" + ("  (baseline)" if k == 0 else ""), width))
    lines.append("")
    lines.append(f"{'metric':<22}{'arm':>4} {'n':>7} {'value':>10}  95% interval")
    index = {label: k for k, label in enumerate(c.arms)}
    for e in c.estimates:
        e = _percent(e)
        lines.append(
            f"{e.metric[:21]:<22}{index[e.arm]:>4} {e.n:>7} {_f(e.value):>10}  [{_f(e.low)}, {_f(e.high)}]"
        )
    lines.append("")
    lines.append(f"{'difference vs [0]':<22}{'arm':>4} {'diff':>10}  {'95% interval':<22} {'p':>7}")
    for d in c.differences:
        d = _percent(d)
        mark = " *" if d.significant else ""
        interval = f"[{_f(d.low)}, {_f(d.high)}]"
        lines.append(
            f"{d.metric[:21]:<22}{index[d.arm]:>4} {_f(d.diff):>10}  {interval:<22} {_p(d.p_value):>7}{mark}"
        )
    lines.append("* significant at 5% (McNemar exact for rates, paired t for means);")
    lines.append("  rates in percent; intervals: Wilson (rates), t (means)")
    for label, flips in c.flips.items():
        new, avoided = flips["new_collisions"], flips["avoided_collisions"]
        lines.append(_clip(f"[{index[label]}] collides where [0] does not: {_ids(new)}", width))
        lines.append(_clip(f"[{index[label]}] avoids collisions of [0]: {_ids(avoided)}", width))
    return "\n".join(lines)


def _percent(item):
    """Rates (and their differences) in percent for text output."""
    if "rate" not in item.metric:
        return item
    from dataclasses import replace

    scaled = {k: 100 * getattr(item, k) for k in ("value", "diff", "low", "high") if hasattr(item, k)}
    return replace(item, metric=item.metric + " %", **scaled)


def _f(value: float) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.4g}"


def _p(value: float) -> str:
    return "n/a" if not math.isfinite(value) else ("<0.001" if value < 0.001 else f"{value:.3f}")


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids)) if ids else "none"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
