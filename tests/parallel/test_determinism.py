"""FMA-free CPU programs (drivesim.parallel.determinism): the XLA_FLAGS handling."""

from __future__ import annotations

from drivesim.parallel import determinism
from drivesim.parallel.worker import LaunchConfig, _child_flags


def test_with_flag_adds_the_cap_once():
    base = "--xla_force_host_platform_device_count=8"
    flags = determinism.with_flag(base)
    assert flags == f"{base} {determinism.FLAG}" and determinism.flags_are_fma_free(flags)
    assert determinism.with_flag(flags) == flags
    assert determinism.with_flag(None) == determinism.FLAG


def test_an_explicit_isa_is_respected():
    assert determinism.with_flag("--xla_cpu_max_isa=AVX2") == "--xla_cpu_max_isa=AVX2"
    assert not determinism.flags_are_fma_free("--xla_cpu_max_isa=AVX2")
    assert not determinism.flags_are_fma_free("--xla_cpu_max_isa=AVX --xla_cpu_max_isa=AVX512")
    assert determinism.flags_are_fma_free("--xla_cpu_max_isa=SSE4_2")
    assert not determinism.flags_are_fma_free("")


def test_this_process_and_its_workers_are_fma_free(fma_free):
    assert determinism.active() and determinism.enable()
    assert determinism.flags_are_fma_free(_child_flags(LaunchConfig(devices_per_process=2)))
    assert not determinism.flags_are_fma_free(_child_flags(LaunchConfig(fma_free=False)))
