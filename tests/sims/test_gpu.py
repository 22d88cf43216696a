"""sphgpu.sims on a real GPU (run on the GPU machine with SPHGPU_TEST_REAL_GPU=1): draws on the
device equal to the CPU's, device alm2cl, reproducibility over batches and GPU workers, the mean against
the exact expectation."""

import os

import numpy as np
import pytest

import sphgpu
from sphgpu.sims import MonteCarlo, latitude_cut_mask
from sphgpu.testing import TOL

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(os.environ.get("SPHGPU_TEST_REAL_GPU") != "1",
                                 reason="real GPUs only (SPHGPU_TEST_REAL_GPU=1)")]

NSIDE, LMAX = 16, 32


def make(**kw):
    cl = 1e3 / (np.arange(LMAX + 1) + 2.0) ** 2
    args = dict(fwhm=0.05, mask=latitude_cut_mask(NSIDE, 20, apodization_deg=10),
                noise_sigma=0.3, seed=11, backend="cuda")
    args.update(kw)
    return MonteCarlo(cl, NSIDE, LMAX, **args)


def test_alm2cl_of_device_arrays_equals_numpy(rng):
    cupy = pytest.importorskip("cupy")
    n = sphgpu.AlmLayout(40).size
    a = rng.standard_normal((4, 3, n)) + 1j * rng.standard_normal((4, 3, n))
    b = rng.standard_normal((4, 3, n)) + 1j * rng.standard_normal((4, 3, n))
    got = sphgpu.alm2cl(cupy.asarray(a), cupy.asarray(b), lmax_out=30)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(got), sphgpu.alm2cl(a, b, lmax_out=30),
                               rtol=TOL["alm2cl_cross_rtol"],
                               atol=TOL["alm2cl_cross_atol"])


def test_gpu_simulations_are_the_same_whatever_the_batch_size():
    whole = make(batch_size=6).run(6, progress=False).spectra
    ones = make(batch_size=1).run(6, progress=False).spectra
    np.testing.assert_allclose(ones, whole, rtol=TOL["sims_same_skies_rtol"])
    assert not np.array_equal(whole[0], whole[1])


def test_gpu_draws_the_same_skies_as_the_cpu():
    """The random numbers are the same on both: the spectra differ by transform rounding."""
    gpu = make().run(3, progress=False).spectra
    cpu = make(backend="cpu").run(3, progress=False).spectra
    np.testing.assert_allclose(gpu, cpu, rtol=TOL["sims_gpu_vs_cpu_rtol"])


def test_gpu_mean_agrees_with_the_exact_expectation():
    mc = make().run(1000, progress=False)
    expected = mc.expected()[0]
    z = ((mc.mean[0] - expected) / (mc.std[0] / np.sqrt(mc.nsims)))[2:]
    assert np.all(np.abs(z) < 4.5), z
    assert 0.3 < np.mean(z**2) < 2.0


def test_polarized_gpu_simulations():
    cl = 1e3 / (np.arange(LMAX + 1) + 2.0) ** 2
    cls = np.stack([cl, 0.3 * cl, 0.05 * cl, 0.3 * cl])
    mc = MonteCarlo(cls, NSIDE, LMAX, pol=True, fwhm=0.05, seed=3, backend="cuda",
                    mask=latitude_cut_mask(NSIDE, 20, apodization_deg=10)).run(300, progress=False)
    expected = mc.expected()
    keep = expected > 1e-8 * np.abs(expected).max()
    z = ((mc.mean - expected) / (mc.std / np.sqrt(mc.nsims)))[keep]
    assert np.all(np.abs(z) < 5.0)


def test_gpu_workers_give_the_same_simulations():
    import sphgpu.distributed as sd

    if not sd.visible_gpus():
        pytest.skip("no GPU visible")
    client = sd.local_cluster(gpus="all", cpu_workers=0, dashboard_address=":0")
    try:
        there = make().run(8, progress=False, client=client, batch_size=3)
    finally:
        client.shutdown()
        client.close()
    np.testing.assert_allclose(there.spectra, make().run(8, progress=False).spectra,
                               rtol=TOL["sims_same_skies_rtol"])


@pytest.mark.parametrize("purify_b", [False, True])
def test_gpu_bandpowers_equal_the_cpu(purify_b):
    """Decoupled bandpowers (pure B or not) of the same skies on the GPU and the CPU."""
    nside, lmax = 32, 64
    cl = 1e3 / (np.arange(lmax + 1) + 2.0) ** 2
    cls = np.stack([cl, 0.3 * cl, 0.05 * cl, 0.3 * cl])
    mask = latitude_cut_mask(nside, 20, apodization_deg=15)
    kw = dict(pol=True, fwhm=0.05, seed=5, mask=mask, noise_sigma=0.2, bins=8,
              purify_b=purify_b, iter=3)
    gpu = MonteCarlo(cls, nside, lmax, backend="cuda", **kw).run(4, progress=False)
    cpu = MonteCarlo(cls, nside, lmax, backend="cpu", **kw).run(4, progress=False)
    scale = np.abs(cpu.bandpowers).max(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(gpu.bandpowers / scale, cpu.bandpowers / scale, rtol=0,
                               atol=1e-9)
