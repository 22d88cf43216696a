"""The CUDA pair-count kernel against the reference: Numba's simulator at tiny sizes in CI, real
sizes on the GPU machine (`pytest -m gpu`)."""


import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, pair_counts

from .cases import awkward, clustered, edge_pairs, sky

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")

BINS = AngularBins.log(0.05, 10, 6)


def _same(got, ref):
    np.testing.assert_array_equal(got.counts, ref.counts)
    if ref.weights is not None:
        np.testing.assert_allclose(got.weights, ref.weights, rtol=TOL["pair_sums_rtol"])
    if ref.patch_counts is not None:
        np.testing.assert_array_equal(got.patch_counts, ref.patch_counts)
        np.testing.assert_array_equal(got.region_counts, ref.region_counts)
        if ref.patch_weights is not None:
            np.testing.assert_allclose(got.patch_weights, ref.patch_weights,
                                       rtol=TOL["pair_sums_rtol"])
    if ref.theta_sum is not None:
        np.testing.assert_allclose(got.mean_theta, ref.mean_theta, rtol=TOL["mean_theta_rtol"])
        np.testing.assert_allclose(got.mean_log_theta, ref.mean_log_theta, rtol=0,
                                   atol=TOL["mean_log_theta_atol"])


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_auto_and_cross_in_the_simulator(precision, rng):
    ra, dec = clustered(rng, 45, box=(10.0, 18.0, -4.0, 4.0))
    ra2, dec2 = sky(rng, 35, dec=(-4, 4), ra=(10, 18))
    for args in ((ra, dec), (ra, dec, ra2, dec2)):
        ref = pair_counts(*args, bins=BINS, backend="reference")
        got = pair_counts(*args, bins=BINS, backend="cuda", precision=precision)
        _same(got, ref)
        assert ref.counts.sum() > 50


def test_weights_labels_and_awkward_points_in_the_simulator(rng):
    ra, dec = awkward(rng)
    keep = rng.permutation(ra.size)[:60]
    ra, dec = ra[keep], dec[keep]
    bins = AngularBins.linear(0, 180, 5)
    w = rng.uniform(0.5, 2, ra.size)
    lab = rng.integers(0, 3, ra.size)
    ref = pair_counts(ra, dec, bins=bins, weights1=w, labels1=lab, backend="reference")
    got = pair_counts(ra, dec, bins=bins, weights1=w, labels1=lab, backend="cuda")
    _same(got, ref)


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_mean_separations_and_patch_pairs_in_the_simulator(precision, rng):
    """The kernel compiled with mean separations (weighted, labelled, cross) against the
    reference; without them it returns none."""
    ra, dec = clustered(rng, 40, box=(10.0, 18.0, -4.0, 4.0))
    ra2, dec2 = sky(rng, 30, dec=(-4, 4), ra=(10, 18))
    kw = dict(bins=BINS, weights1=rng.uniform(0.5, 2, 40), labels1=rng.integers(0, 3, 40),
              labels2=rng.integers(0, 3, 30), mean_theta=True)
    ref = pair_counts(ra, dec, ra2, dec2, backend="reference", **kw)
    got = pair_counts(ra, dec, ra2, dec2, backend="cuda", precision=precision, **kw)
    _same(got, ref)
    assert np.isfinite(ref.mean_theta).sum() >= 3
    assert pair_counts(ra, dec, bins=BINS, backend="cuda").mean_theta is None


def test_edge_pairs_in_the_simulator(rng):
    bins = AngularBins.log(1, 120, 4, unit="arcsec")
    ra1, dec1, ra2, dec2, stats = edge_pairs(bins, rng)
    assert stats[0] >= 2
    ref = pair_counts(ra1, dec1, ra2, dec2, bins=bins, backend="reference")
    for precision in ("float32", "float64"):
        got = pair_counts(ra1, dec1, ra2, dec2, bins=bins, backend="cuda", precision=precision)
        _same(got, ref)
    assert got.refined == 0 and pair_counts(ra1, dec1, ra2, dec2, bins=bins, backend="cuda",
                                             precision="float32").refined >= ra1.size


def test_launch_parameters_and_shared_memory_limit():
    from sphgpu.tpacf import _cuda

    with pytest.raises(ValueError, match="power of two"):
        _cuda.count_pairs(Catalog([1.0], [2.0]), None, BINS, threads=48)
    many = AngularBins.log(0.01, 10, 400)
    with pytest.raises(ValueError, match="shared memory"):
        _cuda.count_pairs(Catalog([1.0, 1.1], [2.0, 2.0]), None, many, weighted=True)


def test_lookup_table_left_out_when_only_that_fits(rng):
    """Bins that leave no room for the float32 lookup table still count, by the search alone,
    with the same counts."""
    from sphgpu.tpacf import _cuda, exact

    fits = {}
    for nb in range(250, 420, 2):
        edges = AngularBins.log(0.05, 10, nb).chord2_edges
        T, E = exact.float32_thresholds(edges)[0], exact.padded_edges(edges)
        try:
            fits[nb] = _cuda._launch_shape(256, _cuda.I_TILE, nb, T.size, E.size, True, False)
        except ValueError:
            break
    without = [nb for nb, (th, look) in fits.items() if not look]
    assert without and any(look for th, look in fits.values())
    bins = AngularBins.log(0.05, 10, without[0])
    ra, dec = clustered(rng, 30, box=(10.0, 14.0, -2.0, 2.0))
    _same(pair_counts(ra, dec, bins=bins, backend="cuda"),
          pair_counts(ra, dec, bins=bins, backend="reference"))


# --- real GPU, real sizes -------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_real_sizes_against_the_cpu_backend(precision, rng):
    bins = AngularBins.log(0.01, 10, 20)
    ra, dec = clustered(rng, 30000, box=(0.0, 90.0, 0.0, 60.0))
    ra2, dec2 = sky(rng, 60000, dec=(0, 60), ra=(0, 90))
    for args in ((ra, dec), (ra, dec, ra2, dec2), (ra2, dec2)):
        cpu = pair_counts(*args, bins=bins, backend="cpu")
        gpu = pair_counts(*args, bins=bins, backend="cuda", precision=precision)
        _same(gpu, cpu)


@pytest.mark.gpu
def test_real_sizes_with_weights_labels_poles_and_edges(rng):
    bins = AngularBins.log(1, 3600, 12, unit="arcsec")
    ra, dec = np.concatenate([clustered(rng, 8000), sky(rng, 8000, dec=(80, 90)),
                              awkward(rng)], axis=1)
    e = edge_pairs(bins, rng)
    ra = np.concatenate([ra, e[0], e[2]])
    dec = np.concatenate([dec, e[1], e[3]])
    w = rng.uniform(0.5, 2, ra.size)
    lab = rng.integers(0, 20, ra.size)
    ref = pair_counts(ra, dec, bins=bins, weights1=w, labels1=lab, backend="cpu")
    for precision in ("float32", "float64"):
        _same(pair_counts(ra, dec, bins=bins, weights1=w, labels1=lab, backend="cuda",
                          precision=precision), ref)
    small = slice(0, 3000)
    ref = pair_counts(ra[small], dec[small], bins=bins, backend="reference")
    _same(pair_counts(ra[small], dec[small], bins=bins, backend="cuda"), ref)


@pytest.mark.gpu
def test_real_all_pairs_mode(rng):
    bins = AngularBins.linear(0, 180, 12)
    ra, dec = sky(rng, 20000)
    cpu = pair_counts(ra, dec, bins=bins, backend="cpu")
    gpu = pair_counts(ra, dec, bins=bins, backend="cuda")
    _same(gpu, cpu)
    assert gpu.counts.sum() == 20000 * 19999 // 2


@pytest.mark.gpu
@pytest.mark.parametrize("use32", [True, False])
def test_float64_decisions_are_not_contracted_into_fma(use32):
    """The exact path must round every product (mul.rn.f64, no fma.rn.f64) to match NumPy."""
    from numba import cuda, types

    from sphgpu.tpacf import _cuda_kernels as K

    arr = types.Array
    sig = (arr(types.int32, 2, "C"), arr(types.int32, 1, "C"), arr(types.float32, 2, "C"),
           arr(types.float32, 2, "C"), arr(types.float64, 2, "C"), arr(types.float64, 2, "C"),
           arr(types.float32, 1, "C"), arr(types.int32, 1, "C"), arr(types.float64, 1, "C"),
           arr(types.int16, 1, "C"), types.int32, types.int32, types.float32, types.float64,
           arr(types.float64, 1, "C"), arr(types.float64, 1, "C"),
           arr(types.int64, 1, "C"), arr(types.float64, 1, "C"), arr(types.int64, 1, "C"),
           arr(types.float64, 1, "C"), arr(types.int64, 1, "C"), types.int32,
           arr(types.float64, 1, "C"), arr(types.float64, 1, "C"))
    # cnt ... nref, nreg, tsum, lsum as count_pairs passes them; mean separations off
    kernel = K.pair_kernel(256, 256, 20, 64, 32, use32, False, True, False, False)
    ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=cuda.get_current_device().compute_capability)
    assert "mul.rn.f64" in ptx and "fma.rn.f64" not in ptx
    assert ".local" not in ptx                       # no spills of the histograms or tables
