"""Estimators on PairCounts: formulas, the slides' multi-random form, behaviour on mock skies."""

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import (AngularBins, Catalog, PairCounts, angular_correlation,
                          jackknife_covariance, landy_szalay, multi_random, natural, pair_counts)
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms

BINS = AngularBins.log(0.1, 10, 6)
BOX = (10.0, 50.0, -20.0, 20.0)


def _pc(counts, total, auto=True):
    return PairCounts(BINS, np.asarray(counts), n1=10, n2=10, auto=auto, total=total)


def test_formulas_on_known_counts():
    dd = _pc([10, 20, 30, 40, 50, 60], 100.0)
    dr = _pc([40, 60, 80, 100, 120, 140], 400.0, auto=False)
    rr = _pc([16, 36, 56, 76, 96, 116], 200.0)
    d, x, r = dd.counts / 100, dr.counts / 400, rr.counts / 200
    np.testing.assert_allclose(natural(dd, rr), d / r - 1)
    np.testing.assert_allclose(landy_szalay(dd, dr, rr), (d - 2 * x + r) / r)
    rd = _pc([30, 50, 70, 90, 110, 130], 400.0, auto=False)
    np.testing.assert_allclose(landy_szalay(dd, dr, rr, rd=rd),
                               (d - x - rd.counts / 400 + r) / r)
    # several randoms: pooled (sums of counts and of totals) vs averaged
    rr2 = _pc([30, 70, 110, 150, 190, 230], 400.0)
    dr2 = _pc([70, 110, 150, 190, 230, 270], 800.0, auto=False)
    pooled_r = (rr.counts + rr2.counts) / 600
    pooled_x = (dr.counts + dr2.counts) / 1200
    np.testing.assert_allclose(landy_szalay(dd, [dr, dr2], [rr, rr2]),
                               (d - 2 * pooled_x + pooled_r) / pooled_r)
    mean_r = (rr.counts / 200 + rr2.counts / 400) / 2
    mean_x = (dr.counts / 400 + dr2.counts / 800) / 2
    np.testing.assert_allclose(multi_random(dd, [dr, dr2], [rr, rr2]),
                               (d - 2 * mean_x + mean_r) / mean_r)
    with pytest.raises(ValueError, match="one entry per random"):
        multi_random(dd, [dr], [rr, rr2])
    with pytest.raises(TypeError, match="PairCounts"):
        natural(dd, [])


def test_multi_random_is_the_slides_raw_count_formula():
    """n_R random catalogs of the data's size n: w = 1 + (n_R DD - (n-1)/n sum DR) / sum RR."""
    n, nr = 400, 3
    ra, dec = clustered_catalog(n, BOX, seed=1)
    dd = pair_counts(ra, dec, bins=BINS, backend="cpu")
    dr, rr = [], []
    for s in range(nr):
        r_ra, r_dec = uniform_randoms(n, BOX, seed=10 + s)
        dr.append(pair_counts(ra, dec, r_ra, r_dec, bins=BINS, backend="cpu"))
        rr.append(pair_counts(r_ra, r_dec, bins=BINS, backend="cpu"))
    sdr = sum(c.counts for c in dr)
    srr = sum(c.counts for c in rr)
    slides = 1 + (nr * dd.counts - (n - 1) / n * sdr) / srr
    np.testing.assert_allclose(multi_random(dd, dr, rr), slides, rtol=TOL["estimator_formula_rtol"])
    # equal catalog sizes: the averaged and the pooled forms agree
    np.testing.assert_allclose(multi_random(dd, dr, rr), landy_szalay(dd, dr, rr),
                               rtol=TOL["estimator_formula_rtol"])


def test_mock_skies():
    """Unclustered 'data' give w ~ 0; the clustered mock gives w > 0, falling with theta."""
    bins = AngularBins.log(0.3, 8, 5)
    r_ra, r_dec = uniform_randoms(6000, BOX, seed=2)
    u_ra, u_dec = uniform_randoms(2500, BOX, seed=3)
    flat = angular_correlation((u_ra, u_dec), (r_ra, r_dec), bins=bins, backend="cpu")
    assert np.all(np.abs(flat.w) < 0.15), flat.w
    c_ra, c_dec = clustered_catalog(2500, BOX, seed=4, members=20, sigma_deg=(0.1, 1.0))
    clus = angular_correlation((c_ra, c_dec), (r_ra, r_dec), bins=bins, backend="cpu")
    assert clus.w[0] > 1.0 and clus.w[0] > clus.w[1] > clus.w[2], clus.w
    assert np.all(np.abs(clus.w[3:]) < 0.15)           # clusters are smaller than a degree
    nat = angular_correlation(Catalog(c_ra, c_dec), [(r_ra, r_dec)], bins=bins,
                              estimator="natural", backend="cpu")
    assert nat.dr == [] and nat.w[0] > 1.0


def test_jackknife_covariance_formula(rng):
    w = rng.standard_normal((7, 4))
    mean, cov = jackknife_covariance(w)
    direct = sum(np.outer(x - w.mean(0), x - w.mean(0)) for x in w) * 6 / 7
    np.testing.assert_allclose(cov, direct, rtol=TOL["estimator_formula_rtol"])
    np.testing.assert_allclose(mean, w.mean(0))
    with pytest.raises(ValueError, match="K >= 2"):
        jackknife_covariance(w[:1])
