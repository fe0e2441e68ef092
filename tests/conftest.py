"""Test setup: 8 forced CPU devices, set before JAX starts."""

import os
import tempfile

# 8 forced CPU devices; no FMA contraction so 1 device and N devices agree bit for bit
# (drivesim/parallel/determinism.py explains why)
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_cpu_max_isa=AVX")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# One persistent compilation cache for the whole run, made by the first process that loads this
# file and inherited by the xdist workers and every process a test starts (CLI, README snippets,
# Ray workers): a program compiled once is loaded by every later module (JAX's own
# JAX_COMPILATION_CACHE_DIR; it wins over DRIVESIM_JAX_CACHE, drivesim.parallel.compile_cache).
# The user's own cache (~/.cache/drivesim) is never touched. Removed at the end of the run.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="drivesim-tests-jax-cache-")
    os.environ["DRIVESIM_TESTS_CACHE_OWNER"] = str(os.getpid())
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
os.environ.setdefault("DRIVESIM_JAX_CACHE", "off")

import pathlib  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
# the shared data beside the checkout, or DRIVESIM_SHARED_DATA (a worktree elsewhere)
SHARED_DATA = pathlib.Path(os.environ.get("DRIVESIM_SHARED_DATA", ROOT.parent / "shared" / "data"))


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


def pytest_sessionfinish(session, exitstatus):
    """The process that made the run's compilation cache removes it (xdist: the controller,
    after its workers)."""
    if os.environ.get("DRIVESIM_TESTS_CACHE_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)
