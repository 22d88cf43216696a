"""Approximate counts (bin_slop) against the exact ones: the stated bound, checked by brute
force; the same counts from the cpu backend and the CUDA kernel (simulator); the error against
TreeCorr's with the same bin_slop; bad values."""

import math

import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, angular_correlation, mocks, pair_counts
from sphgpu.tpacf.catalog import unit_vectors
from sphgpu.tpacf.reference import pair_d2

BINS = AngularBins.log(0.5, 10, 8)
BOX = (0.0, 10.0, 0.0, 10.0)


def _theta(ra1, dec1, ra2=None, dec2=None):
    """Separations (radians) of every pair: i < j for one catalog, all for two."""
    x1 = unit_vectors(ra1, dec1)
    if ra2 is None:
        d2 = pair_d2(x1, x1)[np.triu_indices(ra1.size, 1)]
    else:
        d2 = pair_d2(x1, unit_vectors(ra2, dec2)).ravel()
    return 2.0 * np.arcsin(np.minimum(np.sqrt(d2) / 2.0, 1.0))


def _near_edges(bins, s, theta, weights=None):
    """Per bin, pairs (or their weights) inside it and outside it whose separation lies within
    s * Delta of one of its edges, Delta the bin width in ln(theta) (log bins) or theta."""
    e = bins.edges_rad
    if bins.spacing == "log":
        with np.errstate(divide="ignore"):
            u, ue = np.log(theta), np.log(e)
        delta = (ue[-1] - ue[0]) / bins.nbins
    else:
        u, ue = theta, e
        delta = (ue[-1] - ue[0]) / bins.nbins
    w = np.ones(theta.size) if weights is None else weights
    n_in, n_out = np.zeros(bins.nbins), np.zeros(bins.nbins)
    for k in range(bins.nbins):
        near = (np.abs(u - ue[k]) <= s * delta) | (np.abs(u - ue[k + 1]) <= s * delta)
        inside = (u >= ue[k]) & (u < ue[k + 1])
        n_in[k] = w[near & inside].sum()
        n_out[k] = w[near & ~inside].sum()
    return n_in, n_out


def _catalog(kind, n, seed):
    if kind == "clustered":
        return mocks.clustered_catalog(n, BOX, seed=seed, sigma_deg=(0.2, 1.0))
    return mocks.uniform_randoms(n, BOX, seed=seed)


def test_zero_slop_is_the_exact_count():
    ra, dec = _catalog("clustered", 1500, 3)
    exact = pair_counts(ra, dec, bins=BINS, backend="cpu")
    for s in (0, 0.0, None):
        got = pair_counts(ra, dec, bins=BINS, backend="cpu", bin_slop=s)
        np.testing.assert_array_equal(got.counts, exact.counts)
        assert got.pairs_at_once == 0
    assert exact.counts.sum() > 10000


@pytest.mark.parametrize("kind", ["clustered", "uniform"])
@pytest.mark.parametrize("s", [0.1, 0.5, 1.0])
def test_counts_within_the_stated_bound(kind, s):
    ra, dec = _catalog(kind, 3000, 1)
    theta = _theta(ra, dec)
    exact = pair_counts(ra, dec, bins=BINS, backend="cpu")
    got = pair_counts(ra, dec, bins=BINS, backend="cpu", bin_slop=s)
    n_in, n_out = _near_edges(BINS, s, theta)
    diff = got.counts - exact.counts
    assert np.all(diff <= n_out) and np.all(-diff <= n_in), (diff, n_in, n_out)
    # not vacuous: many pairs were counted at once, and some landed in another bin
    assert got.pairs_at_once > 0.25 * exact.counts.sum()
    assert np.any(diff != 0)


def test_weighted_cross_counts_with_regions_within_the_bound(rng):
    ra1, dec1 = _catalog("clustered", 1800, 5)
    ra2, dec2 = _catalog("uniform", 1500, 6)
    w1, w2 = rng.uniform(0.5, 2.0, ra1.size), rng.uniform(0.5, 2.0, ra2.size)
    lab1, lab2 = rng.integers(0, 4, ra1.size), rng.integers(0, 4, ra2.size)
    kw = dict(bins=BINS, weights1=w1, weights2=w2, labels1=lab1, labels2=lab2, backend="cpu")
    exact = pair_counts(ra1, dec1, ra2, dec2, **kw)
    s = 0.5
    got = pair_counts(ra1, dec1, ra2, dec2, bin_slop=s, **kw)
    theta = _theta(ra1, dec1, ra2, dec2)
    n_in, n_out = _near_edges(BINS, s, theta)
    diff = got.counts - exact.counts
    assert np.all(diff <= n_out) and np.all(-diff <= n_in)
    w_in, w_out = _near_edges(BINS, s, theta, np.outer(w1, w2).ravel())
    wdiff = got.weights - exact.weights
    tol = 1e-9 * exact.weights.max()            # float64 sums in another order
    assert np.all(wdiff <= w_out + tol) and np.all(-wdiff <= w_in + tol)
    # every pair's patch pair is kept: the patches sum to the counts
    np.testing.assert_array_equal(got.patch_counts.sum(axis=(0, 1)), got.counts)
    np.testing.assert_allclose(got.patch_weights.sum(axis=(0, 1)), got.weights,
                               rtol=TOL["pair_sums_rtol"])
    assert got.pairs_at_once > 0.25 * exact.counts.sum() and np.any(diff != 0)


def test_linear_bins_from_zero_within_the_bound():
    """Linear bins from 0: the cells of one chunk are never taken at once in an auto count
    (their pairs i < j only), the bound holds in theta."""
    bins = AngularBins.linear(0, 4, 5)
    ra, dec = _catalog("clustered", 2500, 8)
    s = 1.0
    exact = pair_counts(ra, dec, bins=bins, backend="cpu")
    got = pair_counts(ra, dec, bins=bins, backend="cpu", bin_slop=s)
    n_in, n_out = _near_edges(bins, s, _theta(ra, dec))
    diff = got.counts - exact.counts
    assert np.all(diff <= n_out) and np.all(-diff <= n_in)
    assert got.pairs_at_once > 0.05 * exact.counts.sum() and np.any(diff != 0)


def test_correlations_take_bin_slop():
    ra, dec = _catalog("clustered", 1500, 9)
    rr, rd = _catalog("uniform", 2000, 10)
    exact = angular_correlation((ra, dec), (rr, rd), bins=BINS, backend="cpu")
    got = angular_correlation((ra, dec), (rr, rd), bins=BINS, backend="cpu", bin_slop=0.1)
    assert got.dd.pairs_at_once > 0 and got.rr[0].pairs_at_once > 0
    assert got.dr[0].pairs_at_once > 0
    # a slop of 0.1 bin widths moves few pairs: w within 0.01 of the exact one (a tenth of
    # its values at small separations here), and not equal to it everywhere
    assert exact.w[0] > 0.1
    np.testing.assert_allclose(got.w, exact.w, rtol=0, atol=0.01)
    assert np.any(got.w != exact.w)


@pytest.mark.parametrize("backend", ["cuda", "reference"])
def test_backends_without_an_approximate_mode_count_exactly(backend, rng):
    """"cuda" and "reference" count exactly whatever the slop (an exact count is within the
    bound), where the cpu backend's approximate count differs from the exact one."""
    if backend == "cuda" and not cuda_available():
        pytest.skip("no CUDA GPU or simulator")
    box = (0.0, 3.0, 0.0, 3.0)
    ra, dec = mocks.clustered_catalog(60, box, seed=2, sigma_deg=(0.1, 0.3))
    ra2, dec2 = mocks.uniform_randoms(60, box, seed=3)
    bins = AngularBins.log(1.5, 3.0, 2)
    kw = dict(weights1=rng.uniform(0.5, 2, 60), labels1=rng.integers(0, 2, 60),
              labels2=rng.integers(0, 2, 60))
    for args, extra in (((ra, dec), {}), ((ra, dec, ra2, dec2), kw)):
        exact = pair_counts(*args, bins=bins, backend="cpu", **extra)
        got = pair_counts(*args, bins=bins, backend=backend, bin_slop=1.0, **extra)
        np.testing.assert_array_equal(got.counts, exact.counts)
        assert got.pairs_at_once == 0
        approx = pair_counts(*args, bins=bins, backend="cpu", bin_slop=1.0, **extra)
        assert approx.pairs_at_once > 0 and np.any(approx.counts != exact.counts)
        if extra:
            np.testing.assert_array_equal(got.patch_counts, exact.patch_counts)


def test_against_treecorr_bin_slop():
    """The error of the approximate counts is of the order of TreeCorr's with the same
    bin_slop or below (the two group pairs differently, so only the order is compared: the
    largest relative error over the bins at most 10 times TreeCorr's), and not zero where
    the slop is large."""
    treecorr = pytest.importorskip("treecorr")
    # TreeCorr's test catalogs: a Gaussian blob of points (here on the sphere)
    gen = np.random.default_rng(8675309)
    ra = 10.0 + gen.normal(0.0, 3.0, 4000)
    dec = gen.normal(0.0, 3.0, 4000)
    bins = AngularBins.log(0.5, 5.0, 6)

    def tc(s):
        nn = treecorr.NNCorrelation(min_sep=0.5, max_sep=5.0, nbins=6, sep_units="deg",
                                    bin_slop=s, metric="Arc", bin_type="Log")
        nn.process(treecorr.Catalog(ra=ra, dec=dec, ra_units="deg", dec_units="deg"),
                   num_threads=1)
        return nn.npairs

    exact = pair_counts(ra, dec, bins=bins, backend="cpu").counts
    np.testing.assert_array_equal(np.rint(tc(0)).astype(np.int64), exact)
    for s in (0.1, 0.5, 1.0):
        ours = np.max(np.abs(pair_counts(ra, dec, bins=bins, backend="cpu",
                                         bin_slop=s).counts / exact - 1))
        theirs = np.max(np.abs(tc(s) / exact - 1))
        assert ours <= 10 * theirs, (s, ours, theirs)
        if s >= 0.5:
            assert ours > 0


@pytest.mark.parametrize("bad, exc", [(-0.1, ValueError), (math.nan, ValueError),
                                      (math.inf, ValueError), ("0.1", TypeError),
                                      (True, TypeError), ([0.1], TypeError)])
def test_bad_bin_slop_is_named(bad, exc):
    ra, dec = _catalog("uniform", 50, 0)
    with pytest.raises(exc, match="bin_slop"):
        pair_counts(ra, dec, bins=BINS, backend="cpu", bin_slop=bad)
    with pytest.raises(exc, match="bin_slop"):
        angular_correlation((ra, dec), (ra, dec), bins=BINS, backend="cpu", bin_slop=bad)

