"""The synthetic intersection with fixed-time signals (FamilyConfig(signals=True) or the
``synthetic:intersection?signals`` spec): plans from the literature, conflicting approaches
never green together, the default output unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.core.signals import RED, phase
from drivesim.scenarios.registry import SourceContext, open_spec
from drivesim.scenarios.signal_timing import ALL_RED_S, yellow_interval
from drivesim.scenarios.synthetic import FamilyConfig, generate

SIGNALS = FamilyConfig(signals=True)


def _rows(plan):
    return np.stack([np.asarray(getattr(plan, k)) for k in ("line_s", "cycle", "offset", "green", "amber")])


@pytest.mark.parametrize("scenario_id", [0, 3, 11])
def test_signalled_intersection_plans(scenario_id):
    plain = generate("intersection", scenario_id).scenario
    lit = generate("intersection", scenario_id, SIGNALS).scenario
    assert plain.signal is None and lit.signal is not None
    np.testing.assert_array_equal(plain.agents.x, lit.agents.x)  # same traffic, other rule
    minor = np.isfinite(plain.stop_s)
    assert np.isinf(lit.stop_s).all()  # no priority yielding under signals
    line = lit.signal.line_s
    np.testing.assert_allclose(line, np.max(plain.stop_s[minor]), rtol=1e-6)  # the yield line
    on_b = minor | (plain.agents.route >= plain.agents.route[minor].min())
    plan = lit.signal
    assert np.allclose(plan.cycle, 90.0) and np.allclose(plan.amber, yellow_interval(13.89))
    rows = _rows(plan)
    for t in np.arange(0.0, 90.0, 0.25):
        light = np.asarray(phase(rows, np.float32(t)))
        a, b = light[~on_b], light[on_b]
        assert len(set(a)) == 1 and len(set(b)) == 1  # one light per road
        assert a[0] == RED or b[0] == RED  # conflicting approaches never both move
    reds = [all(np.asarray(phase(rows, np.float32(t))) == RED) for t in np.arange(0.0, 90.0, 0.05)]
    assert 2 * ALL_RED_S - 0.2 <= sum(reds) * 0.05 <= 2 * ALL_RED_S + 0.2  # the all-red clearances


def test_spec_option_and_bad_option():
    context = SourceContext(count=4, seed=0, family=FamilyConfig(num_agents=8))
    src = open_spec("synthetic:intersection?signals", context)
    assert src.load(0).scenario.signal is not None
    assert open_spec("synthetic:intersection", context).load(0).scenario.signal is None
    with pytest.raises(ValueError, match="unknown synthetic option"):
        open_spec("synthetic:intersection?lights", context)
