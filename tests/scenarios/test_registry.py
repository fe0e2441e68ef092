"""The source registry: one parser for every spec, built-in and user kinds, clear errors."""

from __future__ import annotations

import pytest

from drivesim.pipeline.validation import ConfigError, _check_sources
from drivesim.scenarios.registry import (
    SourceContext,
    SourceSpec,
    check_spec,
    open_spec,
    parse_spec,
    register_source,
    registered_sources,
    source_inputs,
)
from drivesim.scenarios.sources import CommonRoadSource, StoreSource, SyntheticSource


def _open_twice(arg: str, context: SourceContext) -> SyntheticSource:
    """A user kind: ``twice:FAMILY`` is 2 * count scenarios of one synthetic family."""
    return SyntheticSource([arg], 2 * context.count, context.seed, config=context.family)


register_source("twice", _open_twice, usage="twice:FAMILY")


@pytest.mark.parametrize(
    "text",
    [
        "synthetic:highway,merge",
        "commonroad:replay:a.xml,b dir/c.xml",
        "store:C:/data/x.parquet",
        "twice:merge",
        "store:with:colons",
    ],
)
def test_spec_round_trip(text):
    spec = parse_spec(text)
    assert str(spec) == text
    assert parse_spec(str(spec)) == spec and parse_spec(spec) is spec
    assert spec.kind == text.split(":", 1)[0] and spec.arg == text.split(":", 1)[1]


def test_unknown_kind_is_one_line_listing_the_registered_kinds():
    with pytest.raises(ValueError) as info:
        parse_spec("carla:town01")
    message = str(info.value)
    assert "\n" not in message and "'carla:town01'" in message and "unknown kind 'carla'" in message
    for kind in ("synthetic", "commonroad", "store", "twice"):
        assert f"{kind}:" in message
    with pytest.raises(ValueError, match="expected KIND:ARG"):
        parse_spec("synthetic:")
    with pytest.raises(
        ConfigError, match=r"--source 'carla:x': unknown kind 'carla'; registered kinds: .*twice"
    ):
        _check_sources(["carla:x"])


def test_built_in_kinds_open_through_the_registry(tmp_path, commonroad_dir):
    from drivesim.scenarios.store import write_store
    from drivesim.scenarios.synthetic import generate

    assert {"synthetic", "commonroad", "store", "twice"} <= set(registered_sources())
    store = tmp_path / "s.parquet"
    write_store(store, [generate("merge", i) for i in range(2)])
    assert isinstance(open_spec(f"store:{store}", SourceContext()), StoreSource)
    replay = open_spec(f"commonroad:replay:{commonroad_dir}", SourceContext())
    assert isinstance(replay, CommonRoadSource) and replay.config.replay and len(replay) == 4
    synthetic = open_spec(SourceSpec("synthetic", "highway,merge"), SourceContext(count=5, seed=3))
    assert isinstance(synthetic, SyntheticSource) and len(synthetic) == 5 and synthetic.seed == 3
    twice = open_spec("twice:merge", SourceContext(count=3))
    assert len(twice) == 6 and twice.load(5).family == "merge"


def test_inputs_and_checks(tmp_path, commonroad_dir):
    assert source_inputs("commonroad:replay:a.xml,b") == (("a.xml", "*.xml"), ("b", "*.xml"))
    assert source_inputs("store:x.parquet") == (("x.parquet", "*"),)
    assert source_inputs("synthetic:highway") == () == source_inputs("twice:merge")
    assert check_spec(f"commonroad:{commonroad_dir}").kind == "commonroad"
    with pytest.raises(ValueError, match="nowhere.parquet does not exist"):
        check_spec(f"store:{tmp_path / 'nowhere.parquet'}")
    with pytest.raises(ValueError, match=r"unknown synthetic family \['roundabout'\]"):
        check_spec("synthetic:highway,roundabout")


def test_registration_rules():
    assert register_source("twice", _open_twice).opener is _open_twice  # same opener: no-op
    with pytest.raises(ValueError, match="'twice' is already registered"):
        register_source("twice", lambda arg, context: _open_twice(arg, context))
    with pytest.raises(ValueError, match="lower-case"):
        register_source("Bad:Kind", _open_twice)
