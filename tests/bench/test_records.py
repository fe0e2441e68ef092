"""BenchRecord: JSON-lines round trip, validation, non-finite values."""

import json
import math

import pytest

from drivesim.bench.records import BenchRecord, append_records, read_records
from drivesim.bench.stats import summarize


def test_round_trip(tmp_path):
    rate = summarize([1.0, 2.0, 3.0]).to_dict()
    a = BenchRecord(kind="engine", workload="W32", scenarios_per_s=rate, agents=32, extra={"x": 1})
    b = BenchRecord(kind="amdahl", serial_fraction=0.1, ceiling=math.inf)
    path = append_records(tmp_path / "bench" / "engine.jsonl", [a])
    append_records(path, [b])
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and all(isinstance(json.loads(x), dict) for x in lines)
    assert json.loads(lines[1])["ceiling"] is None  # inf is not JSON
    back = read_records(tmp_path)
    assert back[0] == a
    assert back[0].rate() == 2.0 and back[1].serial_fraction == 0.1


def test_unknown_kind_and_fields(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        BenchRecord(kind="nope")
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"kind": "scale", "future_field": 3}) + "\n")
    assert read_records(path)[0].extra["future_field"] == 3
    path.write_text('{"kind": "bad"}\n')
    with pytest.raises(ValueError, match="x.jsonl:1"):
        read_records(path)
