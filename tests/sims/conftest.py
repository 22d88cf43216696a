"""A Dask cluster for the Monte Carlo tests: two in-process CPU workers (quick to start)."""

import pytest

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """Two in-process CPU workers of one thread each, made by sphgpu's local_cluster."""
    from sphgpu.distributed import local_cluster

    c = local_cluster(gpus=0, cpu_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0")
    yield c
    c.shutdown()
    c.close()
