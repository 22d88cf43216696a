"""Selections of patches that leave a data set empty, and bins without random pairs.

A jackknife, sample or bootstrap selection in which a data set has no points has no w: it
counts as w = 0 (TreeCorr's fallback for a selection without pairs) with a RuntimeWarning, and
the covariance stays finite (TreeCorr 5.1.4 itself returns NaN there: 0/0 in its random-pair
factors; its design matrix with those rows set to 0 is what ours must equal). A bin with RR = 0
has w = NaN with a warning naming the bin (never a silent -inf)."""

import warnings

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, JackknifeRegions, angular_correlation
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms

from .test_treecorr_covariance import BOX, BINS, _nn, _tc_cat

treecorr = pytest.importorskip("treecorr")


@pytest.fixture(scope="module")
def lopsided():
    """d1 and the randoms cover 4 patches; d2 only patch 3."""
    r = uniform_randoms(600, BOX, seed=13)
    reg = JackknifeRegions.kmeans(*r, 4, seed=1)
    d1 = clustered_catalog(300, BOX, seed=11, members=8, sigma_deg=(0.3, 1.0))
    d2 = clustered_catalog(400, BOX, seed=12, members=8, sigma_deg=(0.3, 1.0))
    lab2 = reg.labels(*d2)
    keep = lab2 == 3
    return {"d1": Catalog(*d1, labels=reg.labels(*d1)),
            "d2": Catalog(d2[0][keep], d2[1][keep], labels=lab2[keep]),
            "r1": Catalog(*r, labels=reg.labels(*r))}


def _treecorr_design(c, method, seed):
    ta, tb, tr = _tc_cat(c["d1"]), _tc_cat(c["d2"]), _tc_cat(c["r1"])
    dd, rr, dr, rd = _nn("shot", seed), _nn(), _nn(), _nn()
    dd.process(ta, tb, num_threads=1)
    rr.process(tr, tr, num_threads=1)
    dr.process(ta, tr, num_threads=1)
    rd.process(tr, tb, num_threads=1)
    dd.calculateXi(rr=rr, dr=dr, rd=rd)
    with np.errstate(invalid="ignore", divide="ignore"):
        v, _ = treecorr.build_multi_cov_design_matrix([dd], method, num_bootstrap=100,
                                                      cross_patch_weight="simple")
    return v


@pytest.mark.parametrize("method", ["jackknife", "bootstrap"])
def test_a_selection_without_a_data_set_counts_as_zero_with_a_warning(lopsided, method):
    res = angular_correlation(lopsided["d1"], lopsided["r1"], data2=lopsided["d2"], bins=BINS,
                              jackknife="labels", normalization="treecorr", backend="cpu",
                              var_method="shot")
    with pytest.warns(RuntimeWarning, match="leave a data set without pairs"):
        got = res.estimate_cov(method, seed=3, num_bootstrap=100)
    assert np.all(np.isfinite(got))
    v = _treecorr_design(lopsided, method, seed=3)
    empty = ~np.isfinite(v).all(axis=1)
    assert empty.any() and not empty.all()
    v[empty] = 0.0
    d = v - v.mean(axis=0)
    want = (d.T @ d) * ((1 - 1 / v.shape[0]) if method == "jackknife" else 1 / (v.shape[0] - 1))
    np.testing.assert_allclose(got, want, rtol=TOL["covariance_vs_treecorr_rtol"],
                               atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(want).max())


def test_default_covariance_of_angular_correlation_is_finite(lopsided):
    with pytest.warns(RuntimeWarning, match="jackknife"):
        res = angular_correlation(lopsided["d1"], lopsided["r1"], data2=lopsided["d2"],
                                  bins=BINS, jackknife="labels", backend="cpu")
    assert np.all(np.isfinite(res.sigma))


@pytest.fixture(scope="module")
def beyond():
    """Data over a wider box than the randoms: the largest bins hold DD pairs but no RR."""
    r = uniform_randoms(300, (0.0, 10.0, -5.0, 5.0), seed=3)
    d = uniform_randoms(200, (0.0, 40.0, -20.0, 20.0), seed=4)
    bins = AngularBins.log(1.0, 40.0, 4)
    reg = JackknifeRegions.kmeans(*r, 3, seed=1)
    return bins, Catalog(*d, labels=reg.labels(*d)), Catalog(*r, labels=reg.labels(*r))


@pytest.mark.parametrize("estimator", ["landy-szalay", "natural"])
def test_a_bin_without_random_pairs_is_nan_with_a_warning_naming_it(beyond, estimator):
    bins, d, r = beyond
    with pytest.warns(RuntimeWarning, match=r"RR = 0\) in bin 3 \[15\.9\d*, 40\) deg"):
        res = angular_correlation(d, r, bins=bins, estimator=estimator, backend="cpu")
    assert res.rr[0].counts[3] == 0 and res.dd.counts[3] > 0
    assert np.isnan(res.w[3]) and np.all(np.isfinite(res.w[:3]))


def test_covariance_of_a_bin_without_random_pairs_is_nan_there_only(beyond):
    bins, d, r = beyond
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = angular_correlation(d, r, bins=bins, jackknife="labels", backend="cpu")
    for method in ("jackknife", "sample", "bootstrap", "marked_bootstrap"):
        with pytest.warns(RuntimeWarning, match="no random pairs in bin 3"):
            c = res.estimate_cov(method, seed=1, num_bootstrap=50)
        assert np.all(np.isnan(c[3])) and np.all(np.isnan(c[:, 3]))
        assert np.all(np.isfinite(c[:3, :3])), method
