"""sphgpu.distributed on real GPUs (run on the GPU machine with `pytest -m gpu`): one
worker process per GPU, results against the serial CPU transforms."""

import os

import numpy as np
import pytest

import sphgpu
import sphgpu.distributed as sd
from sphgpu import AlmLayout

from sphgpu.testing import TOL, random_alm, rel_err

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_client():
    if not sd.visible_gpus():
        pytest.skip("no GPU visible")
    c = sd.local_cluster(gpus="all", cpu_workers=1, dashboard_address=":0")
    yield c
    c.shutdown()
    c.close()


def test_every_gpu_has_a_pinned_worker(gpu_client):
    seen = gpu_client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"),
                          workers=sd.gpu_workers(gpu_client))
    assert sorted(seen.values()) == sorted(sd.visible_gpus())


def test_batches_and_split_transforms_on_the_gpus(gpu_client, rng):
    nside, layout = 64, AlmLayout(128)
    alms = random_alm(rng, layout, k=2 * len(sd.gpu_workers(gpu_client)) + 1)
    want = sphgpu.alm2map(alms, nside, pol=False, backend="cpu")
    got = sd.alm2map_many(alms, nside, client=gpu_client, backend="cuda")
    assert rel_err(got, want) <= TOL["vs_ducc0"]
    back = sd.map2alm_many(want, 128, iter=3, client=gpu_client, backend="cuda")
    assert rel_err(back, sphgpu.map2alm(want, 128, iter=3, pol=False, backend="cpu")) <= TOL["vs_healpy_iter"]
    one = sd.alm2map(alms[0], nside, client=gpu_client, backend="cuda", pattern="rings")
    assert rel_err(one, want[0]) <= TOL["vs_ducc0"]
    a = sd.map2alm(want[0], 128, iter=3, client=gpu_client, backend="cuda", pattern="rings")
    assert rel_err(a, back[0]) <= TOL["vs_healpy_iter"]


def test_device_arrays_stay_on_the_workers_gpus(gpu_client, rng):
    import cupy

    layout = AlmLayout(64)
    alms = random_alm(rng, layout, k=3)
    ws = sd.gpu_workers(gpu_client)
    futs = [gpu_client.submit(cupy.asarray, a, workers=[ws[i % len(ws)]], resources={"GPU": 1})
            for i, a in enumerate(alms)]
    out = sd.alm2map_many(futs, 32, 64, client=gpu_client, backend="cuda", gather=False)
    kinds = gpu_client.gather([gpu_client.submit(lambda m: type(m).__module__, f) for f in out])
    assert all(k.startswith("cupy") for k in kinds)
    maps = np.stack([m.get() for m in gpu_client.gather(out)])
    assert rel_err(maps, sphgpu.alm2map(alms, 32, pol=False, backend="cpu")) <= TOL["vs_ducc0"]


def test_split_convolution_over_the_gpus(gpu_client, rng):
    """The harmonic part on one GPU (or on the CPU worker), the real-space bands on the
    others: equal to the serial convolution on the GPU (and to the CPU one)."""
    from sphgpu.convolve import ARCMIN, RadialKernel, convolve

    nside = 64
    k = RadialKernel.gaussian(120.0, 2 * nside)
    m = rng.standard_normal((2, 12 * nside ** 2))
    kw = dict(method="split", l_cut=60, theta_cut=300 * ARCMIN)
    serial = convolve(m, k, backend="cuda", **kw)
    for hb in (None, "cpu"):
        got = sd.convolve(m, k, backend="cuda", harmonic_backend=hb, client=gpu_client, **kw)
        assert rel_err(got, serial) <= TOL["distributed"]
    many = sd.convolve_many(m, k, backend="cuda", client=gpu_client, **kw)
    assert rel_err(many, serial) <= TOL["distributed"]


def test_device_alm_holding_nan_raise_naming_them(gpu_client, rng):
    """A device a_lm future is checked for NaN after its transform is queued (so the check
    does not wait for the previous task): a NaN still fails the call, naming the future, and
    its neighbours' maps are those of clean inputs."""
    import cupy

    alms = random_alm(rng, AlmLayout(64), k=3)
    alms[1, 5] = np.nan
    ws = sd.gpu_workers(gpu_client)
    futs = [gpu_client.submit(cupy.asarray, a, workers=[ws[i % len(ws)]], resources={"GPU": 1})
            for i, a in enumerate(alms)]
    with pytest.raises(ValueError, match=r"alms\[1\] contains NaN"):
        sd.alm2map_many(futs, 32, 64, client=gpu_client, backend="cuda")
    good = sd.alm2map_many([futs[0], futs[2]], 32, 64, client=gpu_client, backend="cuda")
    want = sphgpu.alm2map(alms[[0, 2]], 32, pol=False, backend="cpu")
    assert rel_err(np.stack([m.get() for m in good]), want) <= TOL["vs_ducc0"]


def test_a_gpu_worker_killed_mid_run_costs_time_not_results(tmp_path):
    """On the GPU node (issue 42): a GPU worker's process ends as a Monte Carlo batch starts,
    and again as a stripe of a pair count starts; the nanny restarts it on its GPU, the lost
    tasks run again, and the spectra and counts equal those of the undisturbed calls."""
    from sphgpu.sims import MonteCarlo
    from sphgpu.tpacf import AngularBins
    from sphgpu.tpacf.mocks import uniform_randoms
    from tests.distributed.test_faults import _killer

    if not sd.visible_gpus():
        pytest.skip("no GPU visible")
    client = sd.local_cluster(gpus="all", cpu_workers=0, dashboard_address=":0")
    try:
        nside = 64

        def mc():
            cl = 1e3 / (np.arange(2 * nside + 1) + 2.0) ** 2
            return MonteCarlo(cl, nside, 2 * nside, seed=5, backend="cuda")

        want = mc().run(12, progress=False, client=client, batch_size=2).spectra
        client.register_plugin(_killer(str(tmp_path / "sims"), 4, once=True,
                                       prefix="sphgpu-sims"), name="kill-sims")
        got = mc().run(12, progress=False, client=client, batch_size=2)
        assert os.path.exists(tmp_path / "sims")
        np.testing.assert_array_equal(got.spectra, want)
        client.unregister_worker_plugin("kill-sims")

        ra, dec = uniform_randoms(200_000, (0.0, 360.0, -90.0, 90.0), seed=3)
        bins = AngularBins.log(0.1, 5.0, 8, unit="deg")
        want = sd.pair_counts(ra, dec, bins=bins, client=client, backend="cuda")
        client.register_plugin(_killer(str(tmp_path / "pairs"), 0, once=True,
                                       prefix="sphgpu-paircount"), name="kill-pairs")
        got = sd.pair_counts(ra, dec, bins=bins, client=client, backend="cuda")
        assert os.path.exists(tmp_path / "pairs")
        np.testing.assert_array_equal(got.counts, want.counts)
    finally:
        client.shutdown()
        client.close()
