"""Test setup: 8 forced CPU devices, set before JAX starts."""

import os

# 8 forced CPU devices; no FMA contraction so 1 device and N devices agree bit for bit
# (drivesim/parallel/determinism.py explains why)
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_cpu_max_isa=AVX")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# no persistent compilation cache in the test process or the commands it starts: the CLI turns
# it on by default (drivesim.parallel.compile_cache), and a test that wants it sets its own
os.environ.setdefault("DRIVESIM_JAX_CACHE", "off")

import pathlib  # noqa: E402

import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def commonroad_dir() -> pathlib.Path:
    """The real CommonRoad files beside the project (skip if the checkout lacks them)."""
    path = SHARED_DATA / "commonroad"
    if not path.is_dir():
        pytest.skip(f"no real CommonRoad data at {path}")
    return path


@pytest.fixture(scope="session")
def artifacts_dir() -> pathlib.Path:
    """Where tests keep artefacts (screenshots, traces) for people to look at."""
    path = ROOT / "artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(autouse=True, scope="module")
def _fresh_programs_per_module():
    """Each test module starts with no compiled programs left by the others: XLA:CPU code is
    mapped page by page, and a process holding every program of the suite would pass the
    kernel's mapping limit (drivesim.parallel.code_memory)."""
    yield
    from drivesim.parallel import code_memory

    code_memory.drop_compiled_programs()
