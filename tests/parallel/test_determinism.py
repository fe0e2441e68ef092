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


def test_a_forced_single_cpu_device_gets_a_pair_unless_fma_free():
    import os
    import subprocess
    import sys

    code = (
        "from drivesim.parallel import determinism\n"
        "fma_free = determinism.configure()\n"
        "import jax\n"
        "print(fma_free, jax.device_count())"
    )

    def devices(flags: str, fma_free_env: str | None = None) -> str:
        env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
        env.pop(determinism.FMA_FREE_ENV, None)
        if fma_free_env:
            env[determinism.FMA_FREE_ENV] = fma_free_env
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    one = "--xla_force_host_platform_device_count=1"
    assert devices(one) == "False 2"  # FMA on: paired
    assert devices(f"{one} {determinism.FLAG}") == "True 1"  # FMA-free: one device agrees as it is
    assert devices(one, fma_free_env="1") == "True 1"
    assert devices("--xla_force_host_platform_device_count=3") == "False 3"
