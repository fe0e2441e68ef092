"""The Amdahl fit recovers the serial fraction from synthetic strong-scaling curves."""

import math

import numpy as np
import pytest

from drivesim.bench.amdahl import efficiency, fit_amdahl
from drivesim.bench.cost import cost_per_million, price_for


def amdahl(p, n):
    return 1.0 / (p + (1.0 - p) / np.asarray(n, dtype=float))


@pytest.mark.parametrize("p", [0.0, 0.05, 0.1, 0.3])
def test_exact_curve(p):
    n = [1, 2, 4, 8, 16]
    fit = fit_amdahl(n, amdahl(p, n))
    assert fit.serial_fraction == pytest.approx(p, abs=1e-12)
    assert fit.serial_fraction_std == pytest.approx(0.0, abs=1e-12)
    assert fit.ceiling == (math.inf if p == 0 else pytest.approx(1 / p))
    assert fit.points == 4
    np.testing.assert_allclose(fit.predict(n), amdahl(p, n))


def test_noisy_curve_within_uncertainty():
    rng = np.random.default_rng(3)
    n = np.array([1, 2, 4, 8, 16, 32])
    measured = amdahl(0.08, n) * (1 + rng.normal(0, 0.01, n.size))
    measured[0] = 1.0
    fit = fit_amdahl(n, measured)
    assert abs(fit.serial_fraction - 0.08) < 4 * fit.serial_fraction_std
    assert 0 < fit.serial_fraction_std < 0.02


def test_two_points_use_the_measurement_error():
    # N=1, N=2 with speed-up 1.8 -> 1/1.8 - 1/2 = p/2 -> p = 1/9
    fit = fit_amdahl([1, 2], [1.0, 1.8], speedup_err=[0.0, 0.05])
    assert fit.serial_fraction == pytest.approx(1 / 9)
    # sigma_y = 0.05 / 1.8^2, x = 0.5 -> sigma_p = sigma_y / 0.5
    assert fit.serial_fraction_std == pytest.approx(0.05 / 1.8**2 / 0.5)


def test_only_one_device_is_not_informative():
    assert math.isnan(fit_amdahl([1], [1.0]).serial_fraction)
    with pytest.raises(ValueError):
        fit_amdahl([1, 2], [1.0])


def test_efficiency_and_cost():
    assert efficiency(2, 180.0, 100.0) == pytest.approx(0.9)
    # 1000 scenarios/s on 2 devices at $3/h: 1e6 / 1000 / 3600 h * 2 * 3 = $1.6667
    assert cost_per_million(1000.0, 2, 3.0) == pytest.approx(1e3 / 3600 * 6)
    assert cost_per_million(1000.0, 2, None) is None
    assert price_for("NVIDIA H100 80GB HBM3") == 2.50
    assert price_for("NVIDIA H200") == 3.80
    assert price_for("NVIDIA L40S") == 1.00  # longest key wins over "L4"
    assert price_for("cpu") == 0.05 and price_for("weird") is None
    assert price_for("NVIDIA H100", override=9.0) == 9.0


def test_a_ceiling_is_claimed_only_within_the_fit_uncertainty():
    from drivesim.bench.amdahl import ceiling_claim, claimed_ceiling

    # two points (N=1, 2) with a serial fraction of 0.873 +- 1.031: no ceiling
    assert claimed_ceiling(0.873, 1.031, points=1) is None
    assert "too few points" in ceiling_claim(0.873, 1.031, points=1)
    assert claimed_ceiling(0.05, 0.03, points=4) is None  # 0 within two standard errors
    assert "no ceiling can be claimed" in ceiling_claim(0.05, 0.03, points=4)
    ceiling, low, high = claimed_ceiling(0.08, 0.01, points=4)
    assert (ceiling, low, high) == pytest.approx((12.5, 10.0, 1 / 0.06))
    assert "12.5×" in ceiling_claim(0.08, 0.01, points=4)


def test_the_interval_of_a_rate_never_reaches_below_zero():
    from drivesim.bench.stats import rates, summarize

    spread = rates(1000.0, [0.1, 10.0])  # 10,000 and 100 scenarios/s: the t interval of the mean
    assert spread.ci_low == 0.0 and spread.ci_high > spread.mean
    assert summarize([-1.0, 5.0]).ci_low < 0  # values that can be negative keep their interval
