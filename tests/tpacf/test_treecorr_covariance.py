"""w, covariances and mean separations against TreeCorr 5 (bin_slop=0, metric "Arc") on the
same catalogs and the same patches (given to both as labels), normalization="treecorr".

TreeCorr's deterministic covariances (jackknife, sample, shot) and its joint covariance must
equal ours to 1e-10; its bootstraps draw patches with ``rng.choice`` from the Generator it is
given, as ours do from ``default_rng(seed)``, so they are compared for one seed exactly and,
over many seeds, in expectation."""

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import (AngularBins, Catalog, JackknifeRegions, angular_correlation,
                          angular_correlations, joint_covariance)
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms

treecorr = pytest.importorskip("treecorr")

BOX = (0.0, 30.0, -15.0, 15.0)
BINS = AngularBins.log(0.5, 8.0, 5)
NPATCH = 4


@pytest.fixture(scope="module")
def cats():
    """Two clustered data sets and their randoms on one footprint, labelled by 4 k-means
    regions of the first random catalog."""
    d1 = clustered_catalog(260, BOX, seed=11, members=8, sigma_deg=(0.3, 1.0))
    d2 = clustered_catalog(220, BOX, seed=12, members=8, sigma_deg=(0.3, 1.0))
    r1, r2 = uniform_randoms(500, BOX, seed=13), uniform_randoms(450, BOX, seed=14)
    reg = JackknifeRegions.kmeans(*r1, NPATCH, seed=1)
    return {k: Catalog(*v, labels=reg.labels(*v))
            for k, v in {"d1": d1, "d2": d2, "r1": r1, "r2": r2}.items()}


def _tc_cat(c):
    return treecorr.Catalog(ra=c.ra, dec=c.dec, ra_units="deg", dec_units="deg",
                            patch=c.labels, w=c.weights)


def _nn(var_method="shot", seed=None):
    return treecorr.NNCorrelation(min_sep=BINS.edges[0], max_sep=BINS.edges[-1],
                                  nbins=BINS.nbins, sep_units="deg", bin_slop=0, metric="Arc",
                                  var_method=var_method, cross_patch_weight="simple",
                                  num_bootstrap=200, rng=np.random.default_rng(seed))


def _treecorr(c, a, b=None, var_method="shot", seed=None):
    """TreeCorr's xi and NN objects for catalogs a (and b: a cross-correlation)."""
    ta, ra = _tc_cat(c[a]), _tc_cat(c["r1"])
    dd, rr, dr = _nn(var_method, seed), _nn(), _nn()
    if b is None:
        dd.process(ta, num_threads=1)
        rr.process(ra, num_threads=1)
        dr.process(ta, ra, num_threads=1)
        dd.calculateXi(rr=rr, dr=dr)
        return dd
    tb, rb, rd = _tc_cat(c[b]), _tc_cat(c["r2"]), _nn()
    dd.process(ta, tb, num_threads=1)
    rr.process(ra, rb, num_threads=1)
    dr.process(ta, rb, num_threads=1)
    rd.process(ra, tb, num_threads=1)
    dd.calculateXi(rr=rr, dr=dr, rd=rd)
    return dd


def _ours(c, a, b=None, **kw):
    kw = {"bins": BINS, "jackknife": "labels", "normalization": "treecorr", "backend": "cpu",
          **kw}
    if b is None:
        return angular_correlation(c[a], c["r1"], **kw)
    return angular_correlation(c[a], c["r1"], data2=c[b], randoms2=c["r2"], **kw)


@pytest.mark.parametrize("cross", [False, True])
def test_w_mean_theta_and_deterministic_covariances_equal_treecorr(cats, cross):
    b = "d2" if cross else None
    ours = _ours(cats, "d1", b)
    assert ours.cross == cross
    ref = _treecorr(cats, "d1", b)
    np.testing.assert_array_equal(ours.dd.counts, np.rint(ref.npairs).astype(np.int64))
    np.testing.assert_allclose(ours.w, ref.xi, rtol=TOL["w_vs_treecorr_rtol"], atol=0)
    np.testing.assert_allclose(ours.mean_theta, ref.meanr, rtol=TOL["mean_theta_vs_treecorr_rtol"],
                               atol=0)
    np.testing.assert_allclose(ours.mean_log_theta, ref.meanlogr, rtol=0,
                               atol=TOL["mean_log_theta_vs_treecorr_atol"])
    for method in ("jackknife", "sample", "shot"):
        want = ref.estimate_cov(method)
        if method == "shot":
            want = np.diag(want)
        got = ours.estimate_cov(method)
        np.testing.assert_allclose(got, want, rtol=TOL["covariance_vs_treecorr_rtol"],
                                   atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(want).max())
    # the default normalisation differs from TreeCorr's for auto counts (by about 1/n), not
    # for cross counts (n1 n2 in both)
    diff = np.max(np.abs(_ours(cats, "d1", b, normalization="pairs").w - ref.xi))
    assert diff < TOL["w_pairs_norm_vs_treecorr_atol"] if cross else 1e-4 < diff < 0.1


def test_weighted_auto_correlation_equals_treecorr(cats):
    # TreeCorr keeps weights in float32: weights exact in float32 compare to rounding
    w = 0.5 + (np.arange(cats["d1"].size) % 97) / 64.0
    c = dict(cats, dw=Catalog(cats["d1"].ra, cats["d1"].dec, weights=w,
                              labels=cats["d1"].labels))
    ours, ref = _ours(c, "dw"), _treecorr(c, "dw")
    np.testing.assert_allclose(ours.dd.weights, ref.weight, rtol=TOL["weights_vs_treecorr_rtol"])
    np.testing.assert_allclose(ours.w, ref.xi, rtol=TOL["w_vs_treecorr_rtol"])
    np.testing.assert_allclose(ours.mean_theta, ref.meanr, rtol=TOL["mean_theta_vs_treecorr_rtol"])
    for method in ("jackknife", "sample", "shot"):
        want = ref.estimate_cov(method)
        want = np.diag(want) if method == "shot" else want
        np.testing.assert_allclose(ours.estimate_cov(method), want,
                                   rtol=TOL["covariance_vs_treecorr_rtol"],
                                   atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(want).max())


def test_bootstraps_equal_treecorr_for_the_same_draws(cats):
    ours = _ours(cats, "d1", "d2")
    for method in ("bootstrap", "marked_bootstrap"):
        ref = _treecorr(cats, "d1", "d2", var_method=method, seed=5)
        got = ours.estimate_cov(method, seed=5, num_bootstrap=200)
        np.testing.assert_allclose(got, ref.cov, rtol=TOL["covariance_vs_treecorr_rtol"],
                                   atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(ref.cov).max())
        again = ours.estimate_cov(method, seed=5, num_bootstrap=200)
        np.testing.assert_array_equal(again, got)              # a seed repeats exactly
        other = ours.estimate_cov(method, seed=6, num_bootstrap=200)
        assert not np.array_equal(other, got)


def test_bootstrap_agrees_with_treecorr_in_expectation(cats):
    """Means over 20 seeds (ours 100..119, TreeCorr's 200..219: independent draws) agree within
    their scatter."""
    ours = _ours(cats, "d1")
    ref = _treecorr(cats, "d1", var_method="bootstrap")
    a = np.array([np.diag(ours.estimate_cov("bootstrap", seed=s, num_bootstrap=60))
                  for s in range(100, 120)])
    b = []
    for s in range(200, 220):
        ref._rng = np.random.default_rng(s)
        b.append(np.diag(treecorr.estimate_multi_cov([ref], "bootstrap",
                                                     num_bootstrap=60,
                                                     cross_patch_weight="simple")))
    b = np.array(b)
    err = np.sqrt(a.var(axis=0) / len(a) + b.var(axis=0) / len(b))
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 4 * err + 1e-12)


def test_joint_covariance_equals_treecorr_estimate_multi_cov(cats):
    res = angular_correlations([cats["d1"], cats["d2"]], [cats["r1"], cats["r2"]], bins=BINS,
                               jackknife="labels", normalization="treecorr", backend="cpu")
    assert sorted(res) == [(0, 0), (0, 1), (1, 1)]
    refs = [_treecorr(cats, "d1"), _treecorr(cats, "d1", "d2")]
    ours = [res[(0, 0)], res[(0, 1)]]
    np.testing.assert_allclose(ours[1].w, refs[1].xi, rtol=TOL["w_vs_treecorr_rtol"])
    for method in ("jackknife", "sample"):
        want = treecorr.estimate_multi_cov(refs, method, cross_patch_weight="simple")
        got = joint_covariance(ours, method)
        np.testing.assert_allclose(got, want, rtol=TOL["covariance_vs_treecorr_rtol"],
                                   atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(want).max())


def _treecorr_shared(c, var_method="shot", seed=None):
    """TreeCorr's cross-correlation of d1 and d2 with one random catalog (r1) for both:
    RR = rr.process(r1, r1), DR = d1 x r1, RD = r1 x d2."""
    ta, tb, tr = _tc_cat(c["d1"]), _tc_cat(c["d2"]), _tc_cat(c["r1"])
    dd, rr, dr, rd = _nn(var_method, seed), _nn(), _nn(), _nn()
    dd.process(ta, tb, num_threads=1)
    rr.process(tr, tr, num_threads=1)
    dr.process(ta, tr, num_threads=1)
    rd.process(tr, tb, num_threads=1)
    dd.calculateXi(rr=rr, dr=dr, rd=rd)
    return dd, rr


@pytest.mark.parametrize("how", ["angular_correlation", "angular_correlations"])
def test_cross_correlation_with_one_shared_random_catalog_equals_treecorr(cats, how):
    """One random catalog for both data sets (randoms2 not given, the default): every
    covariance equals TreeCorr's with rr.process(r, r); the sample and marked-bootstrap
    covariances select pairs by their first point's patch, so R1R2 must hold both orders."""
    kw = dict(bins=BINS, jackknife="labels", normalization="treecorr", backend="cpu")
    if how == "angular_correlation":
        ours = angular_correlation(cats["d1"], cats["r1"], data2=cats["d2"], **kw)
    else:
        ours = angular_correlations([cats["d1"], cats["d2"]], cats["r1"], **kw)[(0, 1)]
    ref, rr = _treecorr_shared(cats)
    np.testing.assert_array_equal(ours.rr[0].counts, np.rint(rr.npairs).astype(np.int64))
    np.testing.assert_allclose(ours.w, ref.xi, rtol=TOL["w_vs_treecorr_rtol"], atol=0)
    for method in ("jackknife", "sample", "shot", "bootstrap", "marked_bootstrap"):
        if method in ("bootstrap", "marked_bootstrap"):
            want = _treecorr_shared(cats, method, seed=5)[0].cov
        else:
            want = ref.estimate_cov(method)
            want = np.diag(want) if method == "shot" else want
        got = ours.estimate_cov(method, seed=5, num_bootstrap=200)
        np.testing.assert_allclose(got, want, rtol=TOL["covariance_vs_treecorr_rtol"],
                                   atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(want).max(),
                                   err_msg=method)
