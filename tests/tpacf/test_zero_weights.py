"""Points of weight 0 are not counted (TreeCorr's ``npairs`` leaves w = 0 objects out): counts,
totals and n1/n2 equal TreeCorr's and a brute-force loop over the points of non-zero weight,
on every backend (cuda in Numba's simulator), auto and cross, with and without regions."""

import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.tpacf import AngularBins, pair_counts

from .cases import sky
from .test_treecorr import _away_from_edges

treecorr = pytest.importorskip("treecorr")

BINS = AngularBins.log(0.5, 10.0, 6)
BACKENDS = ["reference", "cpu",
            pytest.param("cuda", marks=pytest.mark.skipif(not cuda_available(),
                                                          reason="no CUDA GPU or simulator"))]


@pytest.fixture
def cats(rng):
    """Two catalogs where about half the weights are 0 (and some are 2)."""
    a = sky(rng, 47, ra=(0, 20), dec=(-10, 10))
    b = sky(rng, 39, ra=(0, 20), dec=(-10, 10))
    _away_from_edges(BINS, *a, *b)
    _away_from_edges(BINS, *a, *a)
    wa = rng.integers(0, 3, a[0].size).astype(float)
    wb = rng.integers(0, 2, b[0].size).astype(float)
    assert (wa == 0).sum() > 5 and (wb == 0).sum() > 5
    return a, wa, b, wb


def _brute(bins, ra1, dec1, w1, ra2=None, dec2=None, w2=None):
    """Counts of the pairs of points of non-zero weight, by a loop over arccos of dot
    products (these catalogs hold no pair near an edge)."""
    from sphgpu.tpacf.catalog import unit_vectors
    auto = ra2 is None
    if auto:
        ra2, dec2, w2 = ra1, dec1, w1
    x1, x2 = unit_vectors(ra1, dec1), unit_vectors(ra2, dec2)
    edges = bins.edges_rad
    out = np.zeros(bins.nbins, np.int64)
    for i in range(x1.shape[1]):
        for j in range(i + 1 if auto else 0, x2.shape[1]):
            if w1[i] == 0 or w2[j] == 0:
                continue
            t = np.arccos(np.clip(x1[:, i] @ x2[:, j], -1, 1))
            k = np.searchsorted(edges, t, side="right") - 1
            if 0 <= k < bins.nbins:
                out[k] += 1
    return out


def _treecorr(bins, ra1, dec1, w1, ra2=None, dec2=None, w2=None):
    nn = treecorr.NNCorrelation(min_sep=bins.edges[0], max_sep=bins.edges[-1],
                                nbins=bins.nbins, sep_units=bins.unit, bin_slop=0,
                                metric="Arc")
    c1 = treecorr.Catalog(ra=ra1, dec=dec1, w=w1, ra_units="deg", dec_units="deg")
    if ra2 is None:
        nn.process(c1, num_threads=1)
    else:
        nn.process(c1, treecorr.Catalog(ra=ra2, dec=dec2, w=w2, ra_units="deg",
                                        dec_units="deg"), num_threads=1)
    return nn


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cross", [False, True])
def test_zero_weight_points_are_not_counted(cats, backend, cross):
    (ra1, dec1), w1, (ra2, dec2), w2 = cats
    other = (ra2, dec2, w2) if cross else ()
    ref = _treecorr(BINS, ra1, dec1, w1, *other)
    want = np.rint(ref.npairs).astype(np.int64)
    np.testing.assert_array_equal(_brute(BINS, ra1, dec1, w1, *other), want)
    kw = dict(weights1=w1, weights2=w2) if cross else dict(weights1=w1)
    args = (ra1, dec1, ra2, dec2) if cross else (ra1, dec1)
    got = pair_counts(*args, bins=BINS, backend=backend, **kw)
    np.testing.assert_array_equal(got.counts, want)
    np.testing.assert_allclose(got.weights, ref.weight, rtol=1e-12)
    assert got.n1 == np.count_nonzero(w1)
    assert got.n2 == np.count_nonzero(w2 if cross else w1)
    n1, n2 = got.n1, got.n2
    assert got.total == (n1 * n2 if cross else n1 * (n1 - 1) / 2)
    # with regions: the per-region counts hold the same pairs
    lab1 = (np.arange(ra1.size) % 3)
    lab2 = (np.arange(ra2.size) % 3)
    kw.update(labels1=lab1, **({"labels2": lab2} if cross else {}))
    reg = pair_counts(*args, bins=BINS, backend=backend, **kw)
    np.testing.assert_array_equal(reg.counts, want)
    np.testing.assert_array_equal(reg.patch_counts.sum(axis=(0, 1)), want)
    assert reg.patch_total.sum() == got.total


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_every_weight_zero_counts_nothing(cats, backend):
    (ra1, dec1), w1, (ra2, dec2), _ = cats
    got = pair_counts(ra1, dec1, ra2, dec2, bins=BINS, weights1=np.zeros(ra1.size),
                      backend=backend)
    assert got.counts.sum() == 0 and got.n1 == 0 and got.total == 0
    assert got.weights.sum() == 0
