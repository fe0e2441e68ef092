"""Layout planning and padding (host side, no compilation)."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.parallel.mesh import pad_rows, plan_layout, select_devices, slice_rows


@pytest.mark.parametrize(
    ("rows", "devices", "chunk", "expected"),
    [
        (13, 8, None, (2, 1, 16)),
        (13, 8, 1, (2, 1, 16)),  # at least 2 rows per device (mesh.MIN_ROWS_PER_DEVICE)
        (13, 3, 2, (2, 3, 18)),
        (13, 1, None, (13, 1, 13)),
        (5, 8, None, (2, 1, 16)),
        (13, 3, 100, (5, 1, 15)),
    ],
)
def test_plan_layout_pads_to_whole_dispatches(rows, devices, chunk, expected):
    layout = plan_layout(rows, devices, chunk)
    assert (layout.chunk, layout.n_chunks, layout.padded_rows) == expected
    assert layout.padded_rows >= rows and layout.padded_rows % devices == 0


def test_pad_rows_adds_invalid_scenarios(batch):
    padded = pad_rows(batch, 16)
    assert padded.valid.shape == (16,)
    assert padded.valid[:13].all() and not padded.valid[13:].any()
    assert (padded.scenario_id[13:] == -1).all()
    np.testing.assert_array_equal(padded.agents.x[13:], np.repeat(batch.agents.x[-1:], 3, axis=0))
    assert slice_rows(padded, 2, 5).agents.x.shape[0] == 3


def test_select_devices_rejects_impossible_counts():
    assert len(select_devices()) == 8
    assert [d.id for d in select_devices(3, exclude=frozenset({1}))] == [0, 2, 3]
    with pytest.raises(ValueError, match="devices"):
        select_devices(9)
