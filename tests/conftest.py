"""Test setup: 8 forced CPU devices, set before JAX starts."""

import os
import pathlib
import tempfile

# 8 forced CPU devices; no FMA contraction so 1 device and N devices agree bit for bit
# (drivesim/parallel/determinism.py explains why)
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_cpu_max_isa=AVX")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# One persistent compilation cache for every run of the suite on this machine, inherited by the
# xdist workers and every process a test starts (CLI, README and docs snippets, Ray workers): a program
# compiled once is loaded by every later module and every later run, and most of the suite's
# time is XLA compiling (BENCHMARKS.md "Test suite time"). JAX keys each entry by the program,
# its compile options, the devices and the jax/jaxlib versions, so an entry is never used for
# another program; least recently used entries go past CACHE_BYTES. The directory is
# $DRIVESIM_TESTS_JAX_CACHE (default: $XDG_CACHE_HOME/drivesim/tests-jax or
# ~/.cache/drivesim/tests-jax; the user's own campaign cache is never touched), a folder in it
# per processor (drivesim.parallel.processor.key: machines with other processors
# sharing a home directory never load each other's machine code);
# DRIVESIM_TESTS_JAX_CACHE=off gives the run a cache of its own, removed at the end (a cold run).
# JAX_COMPILATION_CACHE_DIR, when set, wins over both.
CACHE_BYTES = 2 * 1024**3  # about 20 whole runs of programs that changed (~100 MB each)
_USER_NAMED_JAX_CACHE = "JAX_COMPILATION_CACHE_DIR" in os.environ  # before `import drivesim` sets it
from drivesim.parallel import compile_cache, processor  # noqa: E402, I001  (imports no JAX)

if not _USER_NAMED_JAX_CACHE:
    _named = os.environ.get("DRIVESIM_TESTS_JAX_CACHE", "").strip()
    if _named and _named.lower() in compile_cache.OFF:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="drivesim-tests-jax-cache-")
        os.environ["DRIVESIM_TESTS_CACHE_OWNER"] = str(os.getpid())
    else:
        _folder = pathlib.Path(_named, processor.key()) if _named else compile_cache.default_dir("tests-jax")
        _folder.mkdir(parents=True, exist_ok=True)
        os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_folder)
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(CACHE_BYTES))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
os.environ.setdefault("DRIVESIM_JAX_CACHE", "off")

import shutil  # noqa: E402

import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
# the shared data beside the checkout, or DRIVESIM_SHARED_DATA (a worktree elsewhere)
SHARED_DATA = pathlib.Path(os.environ.get("DRIVESIM_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _shared(name: str, what: str) -> pathlib.Path:
    """``SHARED_DATA/name``, or skip the test saying the data is absent."""
    path = SHARED_DATA / name
    if not path.is_dir():
        pytest.skip(f"no {what} data at {path}")
    return path


@pytest.fixture(scope="session")
def commonroad_dir() -> pathlib.Path:
    """The real CommonRoad files beside the project (skip if the checkout lacks them)."""
    return _shared("commonroad", "real CommonRoad")


@pytest.fixture(scope="session")
def womd_dir() -> pathlib.Path:
    """The Waymo Open Motion scenarios in GPUDrive JSON beside the project (skip if absent)."""
    return _shared("womd", "WOMD")


@pytest.fixture(scope="session")
def av2_dir() -> pathlib.Path:
    """The Argoverse 2 scenario and map beside the project (skip if absent)."""
    return _shared("av2", "AV2")


@pytest.fixture(scope="session")
def artifacts_dir() -> pathlib.Path:
    """Where tests keep artefacts (screenshots, traces) for people to look at."""
    path = ROOT / "artifacts"
    path.mkdir(exist_ok=True)
    return path


def _assert_bitwise(got, want, skip: tuple[str, ...] = ()) -> None:
    """Every metric field identical, bit for bit (NaN where NaN), but those in ``skip``."""
    import numpy as np

    for name in want.__dataclass_fields__:
        if name in skip:
            continue
        a, b = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert a.shape == b.shape, name
        assert a.dtype == b.dtype, name
        rows = a.view(np.uint8).reshape(a.shape[0], -1) != b.view(np.uint8).reshape(b.shape[0], -1)
        bad = np.flatnonzero(rows.any(axis=1))
        assert bad.size == 0, f"{name} differs at rows {bad.tolist()}: {a[bad]} != {b[bad]}"


@pytest.fixture(scope="session")
def assert_bitwise():
    """assert_bitwise(got, want, skip=()): every RolloutMetrics field identical bit for bit."""
    return _assert_bitwise


@pytest.fixture(autouse=True, scope="module")
def _fresh_programs_per_module():
    """Each test module starts with no compiled programs left by the others: XLA:CPU code is
    mapped page by page, and a process holding every program of the suite would pass the
    kernel's mapping limit (drivesim.parallel.code_memory)."""
    yield
    from drivesim.parallel import code_memory

    code_memory.drop_compiled_programs()


def pytest_sessionfinish(session, exitstatus):
    """The process that made a cold run's own compilation cache removes it (xdist: the
    controller, after its workers)."""
    if os.environ.get("DRIVESIM_TESTS_CACHE_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)
