"""Mean separations per bin (TreeCorr's meanr, meanlogr) against a float64 brute force, on every
host backend and in both arithmetic modes; patch-pair counts against the brute force."""

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, pair_counts
from sphgpu.tpacf.catalog import unit_vectors
from sphgpu.tpacf.reference import pair_d2

from .cases import clustered, sky

BINS = AngularBins.log(3, 300, 6, unit="arcmin")


def _brute(ra1, dec1, ra2, dec2, w1, w2, auto):
    """Weighted mean theta (arcmin) and ln theta per bin, from all pairs in a loop-free form."""
    d2 = pair_d2(unit_vectors(ra1, dec1), unit_vectors(ra2, dec2))
    theta = np.rad2deg(2 * np.arcsin(np.sqrt(d2) / 2)) * 60
    theta[theta == 0] = np.nan            # a point with itself: outside the bins anyway
    w = np.outer(w1, w2)
    k = np.searchsorted(BINS.chord2_edges, d2, side="right") - 1
    ok = (k >= 0) & (k < BINS.nbins)
    if auto:
        ok &= np.triu(np.ones_like(ok), 1)
    m = np.array([np.sum((w * theta)[ok & (k == b)]) / np.sum(w[ok & (k == b)])
                  for b in range(BINS.nbins)])
    lm = np.array([np.sum((w * np.log(theta))[ok & (k == b)]) / np.sum(w[ok & (k == b)])
                   for b in range(BINS.nbins)])
    return m, lm


@pytest.mark.parametrize("backend,precision", [("reference", "float64"), ("cpu", "float64"),
                                               ("cpu", "float32")])
@pytest.mark.parametrize("cross", [False, True])
def test_mean_theta_equals_brute_force(backend, precision, cross, rng):
    ra, dec = clustered(rng, 300, box=(20.0, 30.0, -5.0, 5.0))
    ra2, dec2 = sky(rng, 200, dec=(-5, 5), ra=(20, 30)) if cross else (ra, dec)
    w1, w2 = rng.uniform(0.5, 2, 300), rng.uniform(0.5, 2, ra2.size)
    args = (ra, dec, ra2, dec2) if cross else (ra, dec)
    kw = dict(weights1=w1, weights2=w2) if cross else dict(weights1=w1)
    got = pair_counts(*args, bins=BINS, mean_theta=True, backend=backend, precision=precision,
                      **kw)
    m, lm = _brute(ra, dec, ra2, dec2, w1, w2 if cross else w1, not cross)
    np.testing.assert_allclose(got.mean_theta, m, rtol=TOL["mean_theta_vs_brute_force_rtol"])
    np.testing.assert_allclose(got.mean_log_theta, lm, rtol=0,
                               atol=TOL["mean_log_theta_vs_brute_force_atol"])
    assert np.all((got.mean_theta > BINS.edges[:-1]) & (got.mean_theta < BINS.edges[1:]))
    plain = pair_counts(*args, bins=BINS, backend=backend, precision=precision, **kw)
    assert plain.mean_theta is None
    np.testing.assert_array_equal(plain.counts, got.counts)


def test_separations_add_and_empty_bins_are_nan(rng):
    ra, dec = sky(rng, 200, dec=(0, 1), ra=(0, 1))
    a = pair_counts(ra[:120], dec[:120], bins=BINS, mean_theta=True, backend="cpu")
    b = pair_counts(ra[120:], dec[120:], bins=BINS, mean_theta=True, backend="cpu")
    ab = pair_counts(ra[:120], dec[:120], ra[120:], dec[120:], bins=BINS, mean_theta=True,
                     backend="cpu")
    whole = pair_counts(ra, dec, bins=BINS, mean_theta=True, backend="cpu")
    np.testing.assert_allclose((a + b + ab).mean_theta, whole.mean_theta,
                               rtol=TOL["mean_theta_rtol"])
    assert np.isnan(whole.mean_theta[-1]) and whole.counts[-1] == 0    # 1-degree box: empty
    with pytest.raises(ValueError, match="mean separations"):
        a + pair_counts(ra[:120], dec[:120], bins=BINS, backend="cpu")


@pytest.mark.parametrize("cross", [False, True])
def test_patch_pair_counts_equal_brute_force(cross, rng):
    """patch_counts[a, b]: pairs with the first point in region a and the second in b (auto:
    each unordered pair once, at [min, max])."""
    ra, dec = clustered(rng, 250, box=(20.0, 30.0, -5.0, 5.0))
    lab = rng.integers(0, 4, 250)
    ra2, dec2, lab2 = (*sky(rng, 150, dec=(-5, 5), ra=(20, 30)), rng.integers(0, 4, 150)) \
        if cross else (ra, dec, lab)
    args = (ra, dec, ra2, dec2) if cross else (ra, dec)
    kw = dict(labels1=lab, labels2=lab2) if cross else dict(labels1=lab)
    got = pair_counts(*args, bins=BINS, backend="cpu", precision="float32", **kw)
    d2 = pair_d2(unit_vectors(ra, dec), unit_vectors(ra2, dec2))
    k = np.searchsorted(BINS.chord2_edges, d2, side="right") - 1
    ok = (k >= 0) & (k < BINS.nbins)
    if not cross:
        ok &= np.triu(np.ones_like(ok), 1)
    want = np.zeros((4, 4, BINS.nbins), np.int64)
    i, j = np.nonzero(ok)
    a, b = lab[i], lab2[j]
    if not cross:
        a, b = np.minimum(a, b), np.maximum(a, b)
    np.add.at(want, (a, b, k[i, j]), 1)
    np.testing.assert_array_equal(got.patch_counts, want)
    assert want[0, 1].sum() > 0
