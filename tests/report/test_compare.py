"""Paired comparison statistics and the noise-aware heatmap colour (no files needed)."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.report.compare import Arm, compare_arms, format_text, paired_mean, paired_rate, wilson
from drivesim.report.figures_outcomes import noise_scaled, paired_scaled


def test_wilson_matches_the_published_example():
    # Newcombe (1998), example: 81 of 263 -> 0.2553 .. 0.3662
    low, high = wilson(81, 263)
    assert low == pytest.approx(0.2553, abs=5e-4) and high == pytest.approx(0.3662, abs=5e-4)
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0


def test_paired_rate_agrees_with_mcnemar():
    a = np.zeros(100, bool)
    b = a.copy()
    b[:4] = True  # 4 new collisions, none avoided: not significant at 5% (p = 0.125)
    diff, low, high, p = paired_rate(a, b)
    assert diff == pytest.approx(0.04) and p == pytest.approx(0.125)
    assert low < 0 < high
    b[:12] = True  # 12 of 12 discordant pairs: significant
    diff, low, high, p = paired_rate(a, b)
    assert p < 0.001 and low > 0


def test_paired_mean_detects_a_small_consistent_shift():
    rng = np.random.default_rng(0)
    a = rng.normal(120.0, 20.0, 500)
    diff, low, high, p = paired_mean(a, a + 1.0 + rng.normal(0, 0.5, 500))
    assert low < 1.0 < high and p < 1e-6


def _arm(label, collided, progress):
    values = {
        i: dict(ego_collided=c, offroad=False, progress_m=p, min_ttc_s=float("inf"))
        for i, (c, p) in enumerate(zip(collided, progress, strict=True))
    }
    return Arm(label, "dir", label, values)


def test_compare_arms_lists_flips_and_keeps_80_columns():
    base = _arm("idm", [False, True, False, False], [100.0, 90.0, 110.0, 95.0])
    other = _arm("idm[T=0]", [True, False, False, False], [101.0, 91.0, 111.0, 96.5])
    result = compare_arms([base, other])
    assert result.shared == 4
    assert result.flips["idm[T=0]"] == {"new_collisions": [0], "avoided_collisions": [1]}
    progress = next(d for d in result.differences if d.metric.startswith("progress"))
    assert progress.diff == pytest.approx(1.125)
    assert all(len(line) <= 80 for line in format_text(result).splitlines())
    with pytest.raises(ValueError, match="at least two"):
        compare_arms([base])


def test_heatmap_colour_ignores_differences_within_noise():
    # 125 m vs 122 m progress with a standard error of 3 m each: within noise, no colour
    within = noise_scaled(np.array([125.0, 122.0]), np.array([3.0, 3.0]), worse_high=False)
    assert within.tolist() == [0.0, 0.0]
    # the same gap measured to 0.3 m: the worse row is coloured
    beyond = noise_scaled(np.array([125.0, 122.0]), np.array([0.3, 0.3]), worse_high=False)
    assert beyond[0] == 0.0 and beyond[1] > 0.5


def test_heatmap_colour_follows_the_comparisons_paired_test():
    """A small shift on every scenario (TTC +0.05 s over a 3 s spread) is within noise for
    standard errors but certain for the paired test the comparison runs: the heatmap colours
    it as the comparison calls it; a difference of one scenario in 200 stays uncoloured."""
    rng = np.random.default_rng(0)
    ttc = rng.uniform(1.0, 7.0, 200)
    hit = np.zeros(200, bool)
    hit[:10] = True

    def arm(name, ttc_values, hits, pid):
        rows = {i: {"min_ttc_s": float(ttc_values[i]), "ego_collided": bool(hits[i])} for i in range(200)}
        return Arm(name, "d", name, rows, pid)

    one_more = hit.copy()
    one_more[50] = True
    arms = [arm("a", ttc, hit, 0), arm("b", ttc - 0.05, one_more, 1)]
    means = np.array([ttc.mean(), ttc.mean() - 0.05])
    se = np.full(2, ttc.std() / np.sqrt(200))
    assert noise_scaled(means, se, worse_high=False).tolist() == [0.0, 0.0]  # unpaired: noise
    paired = paired_scaled(means, arms, ("min_ttc_s", False), worse_high=False)
    assert paired[0] == 0.0 and paired[1] > 0.5
    p = compare_arms(arms).differences
    ttc_p = next(d.p_value for d in p if d.metric.startswith("min TTC"))
    assert ttc_p < 1e-6  # what the comparison section and `drivesim compare` say
    rates = np.array([hit.mean(), one_more.mean()])
    assert paired_scaled(rates, arms, ("ego_collided", True), worse_high=True).tolist() == [0.0, 0.0]
