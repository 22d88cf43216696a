"""A worker killed in the middle of a batch: the result is still complete and identical; a
task that keeps killing workers raises instead of returning part of the batch.

Process workers (a killed worker takes only its own process down; its Nanny restarts it). The
kill comes from a worker plugin when a chosen task starts, so it lands mid-batch every time.
"""

import os

import dask
import pytest
from distributed import KilledWorker, WorkerPlugin

import sphgpu
import sphgpu.distributed as sd
from sphgpu import AlmLayout

from sphgpu.testing import TOL, random_alm, random_map, rel_err


def _killer(flag, index, once, prefix="sphgpu-synthesis"):
    """A worker plugin (defined here, so it is sent by value) that ends its worker's process
    when the task ``(prefix..., index)`` (batch item ``index`` of a synthesis, by default)
    starts: once (guarded by the file ``flag``), or every time."""

    class Killer(WorkerPlugin):
        def transition(self, key, start, finish, **kwargs):
            if (finish == "executing" and isinstance(key, tuple)
                    and str(key[0]).startswith(prefix) and key[1] == index):
                if once and os.path.exists(flag):
                    return
                open(flag, "a").close()
                os._exit(1)

    return Killer()


@pytest.fixture(scope="module")
def process_client():
    # allowed-failures: a task may see one worker die under it and still be retried once more
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        c = sd.local_cluster(gpus=0, cpu_workers=2, threads_per_worker=1, processes=True,
                             dashboard_address=":0")
    yield c
    c.shutdown()
    c.close()


def test_worker_killed_mid_batch_leaves_the_result_complete(process_client, tmp_path, rng):
    layout = AlmLayout(24)
    alms = random_alm(rng, layout, k=8)
    want = sphgpu.alm2map(alms, 8, pol=False, backend="cpu")
    flag = str(tmp_path / "killed")
    process_client.register_plugin(_killer(flag, 3, once=True), name="killer")
    try:
        got = sd.alm2map_many(alms, 8, client=process_client)
    finally:
        process_client.unregister_worker_plugin("killer")
    assert os.path.exists(flag)                      # a worker really died mid-batch
    assert got.shape == want.shape and rel_err(got, want) <= TOL["distributed"]


def test_a_task_that_keeps_killing_workers_raises(process_client, tmp_path, rng):
    layout = AlmLayout(12)
    alms = random_alm(rng, layout, k=4)
    process_client.register_plugin(_killer(str(tmp_path / "k"), 2, once=False), name="killer")
    try:
        # KilledWorker when the task dies on workers that did not hold its input; else its
        # input dies with it, and sphgpu gives up after ATTEMPTS rounds
        with pytest.raises((KilledWorker, sd.WorkersLostError)):
            sd.alm2map_many(alms, 4, client=process_client)
    finally:
        process_client.unregister_worker_plugin("killer")
    process_client.wait_for_workers(2, timeout=60)
    # the cluster recovers and the same call now succeeds
    got = sd.alm2map_many(alms, 4, client=process_client)
    assert rel_err(got, sphgpu.alm2map(alms, 4, pol=False, backend="cpu")) <= TOL["distributed"]


def test_worker_killed_in_a_split_convolution_leaves_it_complete(process_client, tmp_path,
                                                                   rng):
    """The worker of one latitude band dies as the band starts: the convolution is sent and
    run again, complete and equal to the serial one."""
    from sphgpu.convolve import RadialKernel, convolve

    process_client.wait_for_workers(2, timeout=60)
    k = RadialKernel.gaussian(600.0, 16)
    m = random_map(rng, 8)
    kw = dict(method="split", l_cut=6, theta_cut=0.5)
    want = convolve(m, k, backend="cpu", **kw)
    flag = str(tmp_path / "killed")
    process_client.register_plugin(_killer(flag, 1, once=True, prefix="sphgpu-band"),
                                   name="killer")
    try:
        got = sd.convolve(m, k, client=process_client, nbands=3, **kw)
    finally:
        process_client.unregister_worker_plugin("killer")
    assert os.path.exists(flag)
    assert rel_err(got, want) <= TOL["distributed"]
