"""Size classes, bucketing into host batches, padding waste."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.scenarios.batching import (
    SIZE_CLASSES,
    bucket_records,
    pad_and_stack,
    padding_waste,
    size_class,
)
from drivesim.scenarios.sources import ScenarioError
from drivesim.scenarios.synthetic import FamilyConfig, generate


def test_size_class():
    assert SIZE_CLASSES == (8, 16, 32, 64, 128)
    assert [size_class(n) for n in (1, 8, 9, 16, 17, 64, 65, 128)] == [8, 8, 16, 16, 32, 64, 128, 128]
    with pytest.raises(ScenarioError, match="exceeds the largest class 128"):
        size_class(129)


def test_bucketer_groups_and_stacks():
    records = [generate(f, i) for i in range(30) for f in ("merge", "intersection")]
    batches = bucket_records(records, batch_size=4)
    full = sum(len(b.records) == 4 for b in batches)
    assert all(len(b.records) == 4 for b in batches[:full])  # full batches first, then partial ones
    assert 0 < full < len(batches) and all(len(b.records) < 4 for b in batches[full:])
    seen = sorted(p for b in batches for p in b.positions)
    assert seen == list(range(len(records)))
    for b in batches:
        sc = b.scenario
        assert sc.agents.x.shape == (4, b.size_class)  # partial batches padded up to batch_size
        assert all(size_class(r.num_agents) == b.size_class for r in b.records)
        valid = np.asarray(sc.valid)
        assert valid[: len(b.records)].all() and not valid[len(b.records) :].any()
        ids = np.asarray(sc.scenario_id)[: len(b.records)]
        assert ids.tolist() == [r.scenario_id for r in b.records]
        assert np.asarray(sc.agents.valid)[valid].sum() == b.real_agents


def test_padding_waste_bucketed_vs_padded():
    records = [generate("merge", i) for i in range(40)]
    bucketed = bucket_records(records, batch_size=8, pad_partial=False)
    real = sum(r.num_agents for r in records)
    slots = sum(b.agent_slots for b in bucketed)
    assert padding_waste(bucketed) == pytest.approx((slots - real) / real)
    assert padding_waste(bucketed) < 128 * len(records) / real - 1.0  # less than padding all to 128


def test_pad_and_stack_unchanged():
    a = generate("highway", 0, FamilyConfig(num_agents=5))
    b = generate("highway", 1, FamilyConfig(num_agents=9))
    batch = pad_and_stack([a.scenario, b.scenario])
    assert batch.agents.x.shape == (2, 9)
    assert np.asarray(batch.agents.valid).sum() == 14
