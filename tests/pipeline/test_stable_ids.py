"""Result rows carry a scenario's own id: a CommonRoad file has crc32(benchmark id) in every
campaign, whatever its position."""

from __future__ import annotations

import zlib

from drivesim.pipeline.plan import _info
from drivesim.pipeline.sources import open_source


def test_commonroad_id_does_not_depend_on_position(commonroad_dir):
    files = sorted(commonroad_dir.glob("*.xml"))
    alone = open_source((f"commonroad:{files[0]}",), 0, 0, None, 80)
    mixed = open_source(("synthetic:highway", f"commonroad:{commonroad_dir}"), 600, 0, None, 80)
    record = alone.load(0)
    expected = zlib.crc32(record.name.encode()) & 0x7FFFFFFF
    assert _info(record, 0, 8).scenario_id == expected
    assert _info(mixed.load(600), 600, 8).scenario_id == expected  # same file, position 600
    synthetic = mixed.load(5)
    assert _info(synthetic, 5, 8).scenario_id == 5  # synthetic ids stay their positions
