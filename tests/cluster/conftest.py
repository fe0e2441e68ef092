"""A real local Ray cluster (2 CPUs, small object store) and the embedded reference campaign."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cluster_helpers import OBJECT_STORE, cluster_config  # noqa: E402

from drivesim.pipeline.campaign import run_campaign  # noqa: E402


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory):
    """The persistent compilation cache this process and the Ray workers share, so workers load
    the reference run's programs instead of compiling them again on this 2-core machine: the
    test run's (tests/conftest.py; JAX_COMPILATION_CACHE_DIR travels to the workers), else one
    made here through DRIVESIM_JAX_CACHE and turned off again afterwards."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cc

    from drivesim.parallel import compile_cache as drivesim_cache

    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        yield Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
        return
    path = tmp_path_factory.mktemp("jax-cache")
    before = os.environ.get("DRIVESIM_JAX_CACHE")
    os.environ["DRIVESIM_JAX_CACHE"] = str(path)
    drivesim_cache.enable(path)
    yield path
    jax.config.update("jax_compilation_cache_dir", None)
    cc.reset_cache()
    if before is None:
        os.environ.pop("DRIVESIM_JAX_CACHE", None)
    else:
        os.environ["DRIVESIM_JAX_CACHE"] = before


@pytest.fixture(scope="module")
def ray_cluster(compile_cache):
    """A fresh local Ray cluster for this module (``ray.cluster_utils.Cluster``: a 2-CPU head
    node with a small object store; tests may add nodes), connected and shut down afterwards."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args=dict(num_cpus=2, object_store_memory=OBJECT_STORE, include_dashboard=False),
    )
    ray.init(address=cluster.address, log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, compile_cache):
    """The embedded single-process run of ``cluster_config``: its directory."""
    out = tmp_path_factory.mktemp("embedded")
    run_campaign(replace(cluster_config(out), cluster=None))
    return out
