"""cross_patch_weight ("simple", "mean", "match", "geom") against TreeCorr 5's
estimate_multi_cov on the same catalogs and patches (normalization="treecorr"), for every
method that defines it: auto (Landy-Szalay and natural, whose counts hold different patch
pairs in TreeCorr), cross with separate randoms and cross with one shared random catalog."""

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import angular_correlation, joint_covariance
from sphgpu.tpacf.covariance import CROSS_PATCH_WEIGHTS

from .test_treecorr_covariance import BINS, _nn, _tc_cat, cats  # noqa: F401 (fixture)

treecorr = pytest.importorskip("treecorr")

CASES = [(m, w) for m, ws in CROSS_PATCH_WEIGHTS.items() if m != "shot" for w in ws]


def _pair(c, kind, seed=None):
    """(ours, TreeCorr's NNCorrelation) for one kind of correlation."""
    kw = dict(bins=BINS, jackknife="labels", normalization="treecorr", backend="cpu")
    ta, tb = _tc_cat(c["d1"]), _tc_cat(c["d2"])
    tr1, tr2 = _tc_cat(c["r1"]), _tc_cat(c["r2"])
    dd, rr = _nn("shot", seed), _nn()
    if kind in ("auto", "natural"):
        dd.process(ta, num_threads=1)
        rr.process(tr1, num_threads=1)
        if kind == "natural":
            dd.calculateXi(rr=rr)
            return angular_correlation(c["d1"], c["r1"], estimator="natural", **kw), dd
        dr = _nn()
        dr.process(ta, tr1, num_threads=1)
        dd.calculateXi(rr=rr, dr=dr)
        return angular_correlation(c["d1"], c["r1"], **kw), dd
    shared = kind == "cross-shared"
    rb = tr1 if shared else tr2
    dr, rd = _nn(), _nn()
    dd.process(ta, tb, num_threads=1)
    rr.process(tr1, rb, num_threads=1)
    dr.process(ta, rb, num_threads=1)
    rd.process(tr1, tb, num_threads=1)
    dd.calculateXi(rr=rr, dr=dr, rd=rd)
    ours = angular_correlation(c["d1"], c["r1"], data2=c["d2"],
                               randoms2=None if shared else c["r2"], **kw)
    return ours, dd


@pytest.mark.parametrize("kind", ["auto", "natural", "cross", "cross-shared"])
@pytest.mark.parametrize("method,cpw", CASES)
def test_cross_patch_weight_equals_treecorr(cats, kind, method, cpw):
    ours, ref = _pair(cats, kind, seed=7)
    want = treecorr.estimate_multi_cov([ref], method, num_bootstrap=120,
                                       cross_patch_weight=cpw)
    got = ours.estimate_cov(method, seed=7, num_bootstrap=120, cross_patch_weight=cpw)
    np.testing.assert_allclose(got, want, rtol=TOL["covariance_vs_treecorr_rtol"],
                               atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(want).max())
    if cpw != "simple":          # the option changes the answer (else this test could not fail)
        simple = ours.estimate_cov(method, seed=7, num_bootstrap=120)
        assert not np.allclose(got, simple, rtol=1e-6, atol=0)


def test_joint_covariance_and_angular_correlation_take_cross_patch_weight(cats):
    a, ra = _pair(cats, "auto")
    b, rb = _pair(cats, "cross")
    want = treecorr.estimate_multi_cov([ra, rb], "jackknife", cross_patch_weight="match")
    got = joint_covariance([a, b], "jackknife", cross_patch_weight="match")
    np.testing.assert_allclose(got, want, rtol=TOL["covariance_vs_treecorr_rtol"],
                               atol=TOL["covariance_vs_treecorr_rtol"] * np.abs(want).max())
    res = angular_correlation(cats["d1"], cats["r1"], bins=BINS, jackknife="labels",
                              normalization="treecorr", backend="cpu", var_method="jackknife",
                              cross_patch_weight="mean")
    assert res.cross_patch_weight == "mean"
    np.testing.assert_allclose(res.covariance, a.estimate_cov("jackknife",
                                                              cross_patch_weight="mean"))


@pytest.mark.parametrize("method,cpw", [("jackknife", "geom"), ("sample", "match"),
                                        ("marked_bootstrap", "geom"), ("bootstrap", "match"),
                                        ("jackknife", "median")])
def test_cross_patch_weight_a_method_does_not_define_is_a_named_error(cats, method, cpw):
    ours, _ = _pair(cats, "auto")
    with pytest.raises(ValueError, match="cross_patch_weight"):
        ours.estimate_cov(method, cross_patch_weight=cpw)
    with pytest.raises(ValueError, match="cross_patch_weight"):
        angular_correlation(cats["d1"], cats["r1"], bins=BINS, jackknife="labels",
                            var_method=method, cross_patch_weight=cpw, backend="cpu")
