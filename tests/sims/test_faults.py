"""A Dask worker killed during a Monte Carlo run costs time, never simulations or a
traceback: the spectra equal those of the same run undisturbed (each simulation depends only
on the seed and its number). Two process workers of the test's own, CPU backend."""

import os

import numpy as np
import pytest

from sphgpu.sims import MonteCarlo, latitude_cut_mask
from tests.distributed.test_faults import TimedKill, _killer, lasting

NSIDE = 16


def make():
    cl = 1e3 / (np.arange(3 * NSIDE) + 2.0) ** 2
    return MonteCarlo(cl, NSIDE, mask=latitude_cut_mask(NSIDE, 20), noise_sigma=1.0, seed=3,
                      backend="cpu")


def test_both_workers_killed_as_their_first_batches_start(fresh_process_client, tmp_path):
    """Each worker dies as it starts its first batch, and the plan dies with them: every
    future of the run is cancelled (this had raised TypeError: 'FutureCancelledError' object
    is not iterable). The plan is sent to the restarted workers and the run completes."""
    client = fresh_process_client
    want = make().run(8, progress=False, client=client, batch_size=1).spectra
    for index in (0, 1):                    # batches 0 and 1 start first, one on each worker
        client.register_plugin(_killer(str(tmp_path / f"k{index}"), index, once=True,
                                       prefix="sphgpu-sims"), name=f"killer{index}")
    mc = make().run(8, progress=False, client=client, batch_size=1)
    assert os.path.exists(tmp_path / "k0") and os.path.exists(tmp_path / "k1")
    assert mc.nsims == 8 and not mc.stopped
    np.testing.assert_array_equal(mc.spectra, want)


@pytest.mark.parametrize("index", [0, 6])    # batches of 2: 0, 2, ..., 10
def test_a_worker_killed_as_a_batch_starts(fresh_process_client, tmp_path, index):
    """The first batch, or one in the middle of the run."""
    client = fresh_process_client
    want = make().run(12, progress=False, client=client, batch_size=2).spectra
    client.register_plugin(_killer(str(tmp_path / "k"), index, once=True,
                                   prefix="sphgpu-sims"), name="killer")
    mc = make().run(12, progress=False, client=client, batch_size=2)
    assert os.path.exists(tmp_path / "k")
    np.testing.assert_array_equal(mc.spectra, want)


@pytest.mark.parametrize("delay", [0.1, 0.5, 1.0])
def test_a_worker_killed_at_any_moment_of_a_run(fresh_process_client, delay, monkeypatch):
    """SIGKILL 0.1, 0.5 or 1 s into a run of batches of 2: identical spectra, all of them."""
    from sphgpu.distributed import cluster

    monkeypatch.setattr(cluster, "GATHER_TIMEOUT", 1.0, raising=False)
    client = fresh_process_client
    # a cluster's first batches are slower (plans made on every worker): pay them here, so
    # that the run lasting() times is as long as the run that gets killed
    make().run(2, progress=False, client=client, batch_size=2)
    n, want = lasting("sims", lambda n: make().run(n, progress=False, client=client,
                                                   batch_size=2).spectra, 64)
    with TimedKill(client, delay) as kill:
        mc = make().run(n, progress=False, client=client, batch_size=2)
    assert kill.landed, "the kill came after the run: make it longer"
    assert mc.nsims == n
    np.testing.assert_array_equal(mc.spectra, want)
