"""CorrelationResult: cross-correlations, k catalogs in one call, files, plot, bad input."""

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import (AngularBins, Catalog, CorrelationResult, JackknifeRegions,
                          angular_correlation, angular_correlations, joint_covariance,
                          pair_counts)
from sphgpu.tpacf import grid
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms

BOX = (0.0, 20.0, -10.0, 10.0)
BINS = AngularBins.log(0.5, 6.0, 4)


@pytest.fixture(scope="module")
def cats():
    reg = JackknifeRegions.kmeans(*uniform_randoms(400, BOX, seed=3), 4, seed=0)
    out = {"d1": clustered_catalog(150, BOX, seed=1), "d2": clustered_catalog(120, BOX, seed=2),
           "r1": uniform_randoms(300, BOX, seed=3), "r2": uniform_randoms(250, BOX, seed=4)}
    return {k: Catalog(*v, labels=reg.labels(*v)) for k, v in out.items()}


def test_cross_correlation_terms_are_the_pair_counts(cats):
    res = angular_correlation(cats["d1"], cats["r1"], data2=cats["d2"], randoms2=cats["r2"],
                              bins=BINS, backend="cpu")
    c = {k: (v.ra, v.dec) for k, v in cats.items()}

    def count(a, b):
        return pair_counts(*c[a], *c[b], bins=BINS, backend="reference")
    d1d2, d1r2, r1d2, r1r2 = count("d1", "d2"), count("d1", "r2"), count("r1", "d2"), \
        count("r1", "r2")
    for got, want in ((res.dd, d1d2), (res.dr[0], d1r2), (res.rd[0], r1d2), (res.rr[0], r1r2)):
        np.testing.assert_array_equal(got.counts, want.counts)
    n = [d1d2.normalized(), d1r2.normalized(), r1d2.normalized(), r1r2.normalized()]
    np.testing.assert_allclose(res.w, (n[0] - n[1] - n[2] + n[3]) / n[3],
                               rtol=TOL["w_from_counts_rtol"])
    nat = angular_correlation(cats["d1"], cats["r1"], data2=cats["d2"], randoms2=cats["r2"],
                              bins=BINS, estimator="natural", backend="cpu")
    np.testing.assert_allclose(nat.w, n[0] / n[3] - 1, rtol=TOL["w_from_counts_rtol"])
    assert nat.dr == [] and nat.rd == [] and res.cross and res.covariance is None
    # one random catalog for both data sets: R1R2 is its auto count in both orders (each
    # pair of distinct points twice, as TreeCorr's rr.process(r, r)), over n (n - 1) pairs
    one = angular_correlation(cats["d1"], cats["r1"], data2=cats["d2"], bins=BINS,
                              backend="cpu")
    rr = pair_counts(*c["r1"], bins=BINS, backend="reference")
    np.testing.assert_array_equal(one.rr[0].counts, 2 * rr.counts)
    np.testing.assert_allclose(one.rr[0].normalized(), rr.normalized(), rtol=1e-15)


def test_all_pairs_of_k_catalogs_each_prepared_once(cats, monkeypatch):
    prepared = []
    real = grid.sorted_catalog

    def spy(cat, *a, **k):
        if not any(key[0] == "sorted" for key in cat._cache):
            prepared.append(id(cat))
        return real(cat, *a, **k)
    monkeypatch.setattr(grid, "sorted_catalog", spy)           # build_plan's call goes here
    ds = [Catalog(*clustered_catalog(100, BOX, seed=s)) for s in (5, 6, 7)]
    r = Catalog(*uniform_randoms(200, BOX, seed=8))
    res = angular_correlations(ds, r, bins=BINS, backend="cpu")
    assert sorted(res) == [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    assert len(prepared) == len(set(prepared)) == 4          # 3 data sets and the randoms
    alone = angular_correlation(ds[0], r, data2=ds[2], bins=BINS, backend="cpu")
    np.testing.assert_array_equal(res[(0, 2)].w, alone.w)
    np.testing.assert_array_equal(res[(1, 1)].w,
                                  angular_correlation(ds[1], r, bins=BINS, backend="cpu").w)


@pytest.mark.parametrize("suffix", [".fits", ".txt"])
def test_write_and_read_back_identical(cats, tmp_path, suffix):
    if suffix == ".fits":
        pytest.importorskip("astropy")
    res = angular_correlation(cats["d1"], cats["r1"], data2=cats["d2"], randoms2=cats["r2"],
                              bins=BINS, jackknife="labels", var_method="bootstrap", seed=3,
                              num_bootstrap=20, backend="cpu")
    path = tmp_path / f"w{suffix}"
    res.write(path)
    back = CorrelationResult.read(path)
    assert back.bins == res.bins and back.bins.unit == res.bins.unit
    for name in ("theta", "w", "covariance", "sigma", "present", "mean_theta"):
        np.testing.assert_array_equal(getattr(back, name), getattr(res, name))
    for name in ("estimator", "normalization", "var_method", "seed", "num_bootstrap"):
        assert getattr(back, name) == getattr(res, name)
    for a, b in zip(res._terms(), back._terms()):
        assert a[0] == b[0]
        for f in ("counts", "total", "self_total", "patch_counts", "patch_total", "n1", "n2",
                  "auto", "theta_sum", "log_theta_sum"):
            np.testing.assert_array_equal(getattr(a[1], f), getattr(b[1], f))
    np.testing.assert_array_equal(back.estimate_cov("jackknife"), res.estimate_cov("jackknife"))
    text = path.read_bytes()
    assert (b"WTHETA" in text) if suffix == ".fits" else text.startswith(b"# sphgpu.tpacf")
    bad = tmp_path / "other.txt"
    bad.write_text("# nothing\n1 2\n")
    with pytest.raises(ValueError, match="not a saved CorrelationResult"):
        CorrelationResult.read(bad)


def test_plot_draws_w_with_error_bars(cats):
    pytest.importorskip("matplotlib")
    res = angular_correlation(cats["d1"], cats["r1"], bins=BINS, jackknife="labels",
                              backend="cpu")
    ax = res.plot()
    line = ax.lines[0]
    np.testing.assert_allclose(line.get_xdata(), res.theta)
    np.testing.assert_allclose(line.get_ydata(), res.w)
    assert ax.get_xscale() == "log" and len(ax.collections) >= 1      # the error bars


def test_bad_input_names_the_argument(cats):
    kw = dict(bins=BINS, backend="cpu")
    odd = Catalog(cats["r2"].ra, cats["r2"].dec, labels=np.minimum(cats["r2"].labels, 2))
    with pytest.raises(ValueError, match="patches differ.*randoms2"):
        angular_correlation(cats["d1"], cats["r1"], data2=cats["d2"], randoms2=odd,
                            jackknife="labels", **kw)
    two = {k: Catalog(v.ra, v.dec, labels=np.zeros(v.size, int)) for k, v in cats.items()}
    with pytest.raises(ValueError, match="at least 2 regions"):
        angular_correlation(two["d1"], two["r1"], jackknife="labels", var_method="bootstrap",
                            **kw)
    far = Catalog(cats["d2"].ra + 90, cats["d2"].dec)
    far_r = Catalog(cats["r2"].ra + 90, cats["r2"].dec)
    with pytest.raises(ValueError, match="data2/randoms2.*do not overlap"):
        angular_correlation(cats["d1"], cats["r1"], data2=far, randoms2=far_r, **kw)
    with pytest.raises(ValueError, match="needs jackknife regions"):
        angular_correlation(cats["d1"], cats["r1"], var_method="sample", **kw)
    with pytest.raises(ValueError, match="var_method must be one of"):
        angular_correlation(cats["d1"], cats["r1"], var_method="bogus", **kw)
    with pytest.raises(ValueError, match="normalization must be one of"):
        angular_correlation(cats["d1"], cats["r1"], normalization="n2", **kw)
    with pytest.raises(ValueError, match="randoms2 was given without data2"):
        angular_correlation(cats["d1"], cats["r1"], randoms2=cats["r2"], **kw)
    with pytest.raises(ValueError, match="multi-random"):
        angular_correlation(cats["d1"], cats["r1"], data2=cats["d2"], estimator="multi-random",
                            **kw)
    a = angular_correlation(cats["d1"], cats["r1"], jackknife="labels", **kw)
    b = angular_correlation(cats["d1"], cats["r1"], jackknife=3, **kw)
    with pytest.raises(ValueError, match="same jackknife regions"):
        joint_covariance([a, b])
    with pytest.raises(TypeError, match="results must be"):
        joint_covariance([a.w])
    with pytest.raises(ValueError, match="num_bootstrap"):
        a.estimate_cov("bootstrap", num_bootstrap=1)
    shot = angular_correlation(cats["d1"], cats["r1"], var_method="shot", **kw)
    assert shot.covariance.shape == (4, 4) and np.all(shot.sigma > 0)
