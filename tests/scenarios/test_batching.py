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


def test_merge_partial_pads_the_rare_buckets_to_one_shape():
    from drivesim.scenarios.batching import BucketKey
    from drivesim.scenarios.remainders import merge_partial

    small, wide = BucketKey(8, 8, 2, None), BucketKey(32, 128, 16, None)
    logged, longer = BucketKey(16, 32, 8, 64), BucketKey(16, 32, 8, 128)
    groups = [(small, [0, 5]), (logged, [1, 7]), (wide, [2, 3, 9]), (longer, [4]), (small, [6, 8, 10])]
    got = merge_partial(groups, size=4)
    assert got == [
        (wide, [0, 2, 3, 5]),  # one shape for the rare buckets, cut every 4 in position order
        (BucketKey(16, 32, 8, 128), [1, 4, 7]),  # logs are merged only with logs
        (wide, [6, 8, 9, 10]),
    ]
    # a bucket that filled a batch in the window keeps its partial one (its program exists)
    kept = merge_partial(groups, size=4, full={small})
    assert (small, [0, 5]) in kept and (small, [6, 8, 10]) in kept and (wide, [2, 3, 9]) in kept
    assert sorted(p for _, ps in kept for p in ps) == list(range(11))
    assert merge_partial([], size=4) == []
