"""Jackknife regions and leave-one-out w(theta) from one pass of per-region counts."""

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, JackknifeRegions, angular_correlation
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms

BOX = (10.0, 50.0, -20.0, 20.0)
BINS = AngularBins.log(0.2, 8, 5)


def test_kmeans_regions_are_compact_balanced_and_reproducible():
    ra, dec = uniform_randoms(6000, BOX, seed=1)
    reg = JackknifeRegions.kmeans(ra, dec, 8, seed=3)
    lab = reg.labels(ra, dec)
    assert reg.n_regions == 8 and lab.min() == 0 and lab.max() == 7
    counts = np.bincount(lab, minlength=8)
    assert counts.min() > 6000 / 8 / 3
    np.testing.assert_array_equal(JackknifeRegions.kmeans(ra, dec, 8, seed=3).labels(ra, dec),
                                  lab)
    np.testing.assert_allclose(np.linalg.norm(reg.centers, axis=1), 1.0)


def test_healpix_regions_follow_the_cells():
    healpy = pytest.importorskip("healpy")
    ra, dec = uniform_randoms(3000, BOX, seed=5)
    reg = JackknifeRegions.healpix(4, ra, dec)
    cells = healpy.ang2pix(4, np.deg2rad(90 - dec), np.deg2rad(ra))
    lab = reg.labels(ra, dec)
    assert reg.n_regions == np.unique(cells).size
    # one region per occupied cell, numbered in cell order
    np.testing.assert_array_equal(lab, np.searchsorted(np.unique(cells), cells))
    # a point in a cell the fit never saw goes to the nearest region centre
    far = reg.labels(np.array([200.0]), np.array([-60.0]))
    assert 0 <= far[0] < reg.n_regions


@pytest.mark.parametrize("estimator", ["landy-szalay", "natural", "multi-random"])
def test_leave_one_out_w_equals_recomputing_without_the_region(estimator):
    d_ra, d_dec = clustered_catalog(500, BOX, seed=6, members=10, sigma_deg=(0.2, 1.0))
    randoms = [uniform_randoms(700, BOX, seed=7), uniform_randoms(600, BOX, seed=8)]
    reg = JackknifeRegions.kmeans(*randoms[0], 4, seed=0)
    res = angular_correlation((d_ra, d_dec), randoms, bins=BINS, estimator=estimator,
                              jackknife=reg, backend="cpu")
    assert res.w_jackknife.shape == (4, BINS.nbins)
    assert res.covariance.shape == (BINS.nbins, BINS.nbins)
    assert np.all(res.sigma > 0)
    for k in (0, 3):
        keep_d = reg.labels(d_ra, d_dec) != k
        sub_r = []
        for r_ra, r_dec in randoms:
            keep = reg.labels(r_ra, r_dec) != k
            sub_r.append(Catalog(r_ra[keep], r_dec[keep]))
        again = angular_correlation(Catalog(d_ra[keep_d], d_dec[keep_d]), sub_r, bins=BINS,
                                    estimator=estimator, backend="cpu")
        np.testing.assert_allclose(res.w_jackknife[k], again.w,
                                   rtol=TOL["jackknife_vs_recomputed_rtol"],
                                   atol=TOL["jackknife_vs_recomputed_atol"])


def test_jackknife_by_int_and_by_labels():
    d = Catalog(*clustered_catalog(400, BOX, seed=9))
    r = Catalog(*uniform_randoms(800, BOX, seed=10))
    res = angular_correlation(d, r, bins=BINS, jackknife=5, backend="cpu")
    assert res.regions.n_regions == 5 and res.w_jackknife.shape == (5, BINS.nbins)
    lab_d, lab_r = res.regions.labels(d.ra, d.dec), res.regions.labels(r.ra, r.dec)
    again = angular_correlation(d.with_labels(lab_d), r.with_labels(lab_r), bins=BINS,
                                jackknife="labels", backend="cpu")
    np.testing.assert_allclose(again.w_jackknife, res.w_jackknife,
                               rtol=TOL["jackknife_same_regions_rtol"])
    np.testing.assert_allclose(again.covariance, res.covariance,
                               rtol=TOL["jackknife_covariance_same_regions_rtol"])
    # without jackknife, labels in the catalogs are ignored
    plain = angular_correlation(d.with_labels(lab_d), r.with_labels(lab_r), bins=BINS,
                                backend="cpu")
    assert plain.w_jackknife is None and plain.dd.region_counts is None
    np.testing.assert_allclose(plain.w, res.w, rtol=TOL["w_same_counts_rtol"])
