"""Dask clusters for the distributed tests: in-process CPU workers (quick to start)."""

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


@pytest.fixture(scope="module")
def plain_client():
    """An existing cluster that declares no resources: Dask's own LocalCluster."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture
def fresh_process_client():
    """Two process workers (one thread each) of a cluster of this test alone, for tests that
    kill a worker: Dask's Nanny sometimes takes 20 s or more to start a killed worker again
    (seen in about 1 of 20 kills on a 2-core machine, distributed 2026.8), so a test never
    waits for a worker killed by an earlier one."""
    from sphgpu.distributed import local_cluster

    c = local_cluster(gpus=0, cpu_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0")
    yield c
    c.shutdown()
    c.close()
