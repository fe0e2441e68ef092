"""Bad input refused up front with one clear error: CommonRoad files that would ask for huge
allocations or hold unphysical values, scenario rows out of range, unphysical sweeps."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scenario_xml_cases import document, obstacle

from drivesim.core.types import replace
from drivesim.core.validate import validate_scenario
from drivesim.pipeline.config import read_sweep
from drivesim.pipeline.validation import ConfigError
from drivesim.scenarios.commonroad import load_commonroad
from drivesim.scenarios.sources import ScenarioError, StoreSource
from drivesim.scenarios.store import write_store
from drivesim.scenarios.synthetic import FamilyConfig, generate


def _load(tmp_path, text: str) -> ScenarioError:
    path = tmp_path / "bad.xml"
    path.write_text(text)
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioError) as info:
            load_commonroad(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB allocated before refusing"
    return info.value


@pytest.mark.parametrize(
    "text, field, words",
    [
        (document(obstacle(1), dt="1e-300"), "timeStepSize", "outside"),
        (document(obstacle(1), dt="1e5"), "timeStepSize", "outside"),
        (document(obstacle(1), dt="-0.1"), "timeStepSize", "outside"),
        (document(obstacle(1).replace("<exact>5</exact>", "<exact>300000000</exact>")), "time", "outside"),
        (document(obstacle(1).replace("<exact>5</exact>", "<exact>150000</exact>")), "time", "more than"),
        (document(obstacle(1).replace("<length>4.5</length>", "<length>1e30</length>")), "length", "range"),
        (document(obstacle(1, x0=1e30)), "x", "range"),
    ],
)
def test_commonroad_bounds_before_allocation(tmp_path, text, field, words):
    err = _load(tmp_path, text)
    assert field in err.field and words in err.reason, str(err)


def _with(record, **changes):
    """The record's scenario with agents / idm / road fields replaced ({"idm.v0": array})."""
    sc = record.scenario
    for name, value in changes.items():
        part, key = name.split(".")
        sc = replace(sc, **{part: replace(getattr(sc, part), **{key: value})})
    return sc


@pytest.mark.parametrize(
    "field, make",
    [
        ("idm.T", lambda sc: np.full_like(np.asarray(sc.idm.T), np.nan)),
        ("idm.a", lambda sc: np.zeros_like(np.asarray(sc.idm.a))),
        ("road.widths", lambda sc: -np.asarray(sc.road.widths)),
        ("road.widths", lambda sc: np.full_like(np.asarray(sc.road.widths), np.nan)),
        ("agents.x", lambda sc: np.full_like(np.asarray(sc.agents.x), 1e30)),
        ("agents.speed", lambda sc: np.full_like(np.asarray(sc.agents.speed), 1e4)),
    ],
)
def test_scenario_rows_out_of_range(field, make):
    record = generate("highway", 3, FamilyConfig(num_agents=8, steps=10))
    bad = _with(record, **{field: make(record.scenario)})
    with pytest.raises(ScenarioError) as info:
        validate_scenario(bad, where="store.parquet#3")
    assert info.value.field == field and info.value.path == "store.parquet"


def test_store_row_with_nan_idm_fails_that_scenario_only(tmp_path):
    """A store edited behind drivesim's back (row 1's IDM v0 set to NaN) fails that row only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    write_store(path, [generate("highway", i, FamilyConfig(num_agents=8, steps=10)) for i in range(3)])
    table = pq.read_table(path)
    name = next(n for n in table.column_names if n.endswith("v0"))
    values = table.column(name).to_pylist()
    values[1] = np.full(len(values[1]) // 4, np.nan, np.float32).tobytes()  # binary column (store v4)
    index = table.column_names.index(name)
    table = table.set_column(
        index, table.schema.field(index), pa.array(values, table.schema.field(index).type)
    )
    pq.write_table(table, path)
    source = StoreSource(path)
    source.load(0), source.load(2)
    with pytest.raises(ScenarioError, match="v0"):
        source.load(1)


@pytest.mark.parametrize(
    "body, words",
    [
        ("[[policy]]\nT = nan\n", "T = nan"),
        ("[[policy]]\nT = inf\n", "T = inf"),
        ("[[policy]]\nT = -1.0\n", "T = -1.0"),
        ("[[policy]]\na = 0.0\nb = 0.0\n", "a = 0.0"),
        ("[[policy]]\nT = true\n", "not a number"),
        ('[[policy]]\nT = "1.2"\n', "not a number"),
        ("[[policy]]\nQ = 1.0\n", "unknown IDM parameter"),
        ("[[policy]\nT = 1\n", "not valid TOML"),
        ("x = 1\n", "no policies"),
    ],
)
def test_sweep_values_are_checked(tmp_path, body, words):
    path = tmp_path / "sweep.toml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=words.replace("[", r"\[")):
        read_sweep(str(path))


def test_sweep_variant_cap(tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text("[" + ",".join(['{"T": 1.5}'] * 5000) + "]")
    with pytest.raises(ConfigError, match="5000 policies, more than"):
        read_sweep(str(path))
    path.write_text('[{"T": 1.2, "v0": 30}]')
    assert read_sweep(str(path)) == [{"T": 1.2, "v0": 30.0}]
