"""Statistics against hand-computed values."""

import math

import numpy as np
import pytest

from drivesim.bench.stats import rates, summarize, t_quantile_975


def test_summary_matches_hand_computation():
    s = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s.median == 3.0 and s.mean == 3.0 and s.n == 5
    assert s.std == pytest.approx(math.sqrt(2.5))
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)  # t_{0.975,4} * s / sqrt(n) = 1.9629
    assert s.ci_low == pytest.approx(3.0 - half) and s.ci_high == pytest.approx(3.0 + half)
    assert s.ci_low == pytest.approx(1.0371, abs=1e-4)
    assert s.p5 == pytest.approx(1.2) and s.p95 == pytest.approx(4.8)  # linear interpolation


def test_even_count_median_and_rates():
    r = rates(10.0, [1.0, 2.0, 4.0, 5.0])  # rates 10, 5, 2.5, 2
    assert r.median == pytest.approx(3.75)
    assert r.mean == pytest.approx(4.875)


def test_t_table():
    assert t_quantile_975(1) == 12.706
    assert t_quantile_975(10) == 2.228
    assert 1.96 < t_quantile_975(60) < 2.042
    assert t_quantile_975(1000) == 1.960


def test_constant_values_give_zero_width_interval():
    s = summarize([2.0, 2.0, 2.0])
    assert s.ci_low == s.ci_high == 2.0 and s.std == 0.0


def test_single_value_has_no_interval():
    s = summarize([7.0])
    assert s.median == 7.0 and math.isnan(s.ci_low) and math.isnan(s.ci_high)


def test_bootstrap_interval_is_seeded_and_brackets_the_median():
    values = np.array([9.0, 10.0, 10.5, 11.0, 30.0, 10.2, 9.8])
    a, b = summarize(values, "bootstrap"), summarize(values, "bootstrap")
    assert a == b
    assert values.min() <= a.ci_low <= a.median <= a.ci_high <= values.max()
    assert a.ci_high < 30.0  # the median's interval ignores the outlier


def test_bad_input():
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([1.0], "magic")
    with pytest.raises(ValueError):
        rates(1.0, [0.0])
