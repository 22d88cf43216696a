"""Survey-scale pair counts with many jackknife regions (100-200) over a Dask cluster: equal to
the serial counts as integers, per region pair too; what a stripe sends back is the region
pairs it met, not R x R x nbins; progress per stripe. CPU workers in this process."""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import sphgpu.distributed as sd  # noqa: E402
from sphgpu.distributed import tpacf as dt  # noqa: E402
from sphgpu.testing import TOL  # noqa: E402
from sphgpu.tpacf import AngularBins, JackknifeRegions, pair_counts  # noqa: E402
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms  # noqa: E402

# a DES-like footprint (RA 0-100, Dec -60-0: about 5000 deg^2 at these declinations) and
# DES-like bins, 2.5' to 250'
FOOT = (0.0, 100.0, -60.0, 0.0)
BINS = AngularBins.log(2.5 / 60, 250 / 60, 10, unit="deg")


@pytest.fixture(scope="module")
def survey():
    """20k data points (clustered inside the footprint), 24k randoms, 128 k-means regions made
    from the randoms and used for both."""
    ra_r, dec_r = uniform_randoms(24000, FOOT, seed=11)
    ra_d, dec_d = clustered_catalog(20000, FOOT, seed=12)
    regions = JackknifeRegions.kmeans(ra_r, dec_r, 128, seed=0)
    return dict(ra=ra_d, dec=dec_d, lab=regions.labels(ra_d, dec_d), rra=ra_r, rdec=dec_r,
                rlab=regions.labels(ra_r, dec_r))


def _same(a, b):
    """Integer fields equal, float sums to rounding."""
    assert (a.n1, a.n2, a.auto, a.n_regions) == (b.n1, b.n2, b.auto, b.n_regions)
    for name in ("counts", "patch_counts", "region_counts"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert np.asarray(x).dtype.kind == "i", name
            np.testing.assert_array_equal(x, y, err_msg=name)
    for name in ("total", "patch_total", "patch_self_total", "weights", "patch_weights",
                 "patch_weighted_total"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=TOL["pair_sums_rtol"], err_msg=name)


@pytest.mark.parametrize("nchunks", [2, 7])
def test_auto_counts_with_128_regions_equal_the_serial_ones(client, survey, nchunks):
    s = survey
    want = pair_counts(s["ra"], s["dec"], bins=BINS, labels1=s["lab"], backend="cpu")
    got = sd.pair_counts(s["ra"], s["dec"], bins=BINS, labels1=s["lab"], nchunks=nchunks,
                         client=client, backend="cpu")
    _same(got, want)
    assert got.patch_counts.shape == (128, 128, BINS.nbins)
    # the regions are compact: pairs of many region pairs, but far from all of them
    met = np.count_nonzero(got.patch_counts.any(axis=2))
    assert 128 < met < 128 * 128 // 4
    assert got.counts.sum() > 10**6


def test_weighted_auto_and_cross_counts_with_many_regions(client, survey):
    s = survey
    w = np.random.default_rng(13).uniform(0.5, 2.0, s["ra"].size)
    w[::97] = 0.0                      # points of weight 0 are left out, per region too
    kw = dict(bins=BINS, labels1=s["lab"], weights1=w)
    _same(sd.pair_counts(s["ra"], s["dec"], nchunks=5, client=client, backend="cpu", **kw),
          pair_counts(s["ra"], s["dec"], backend="cpu", **kw))
    # DR, with 200 regions declared (the last 72 hold no point): shapes follow n_regions
    kw = dict(bins=BINS, labels1=s["lab"], labels2=s["rlab"], n_regions=200)
    want = pair_counts(s["ra"], s["dec"], s["rra"], s["rdec"], backend="cpu", **kw)
    got = sd.pair_counts(s["ra"], s["dec"], s["rra"], s["rdec"], nchunks=6, client=client,
                         backend="cpu", **kw)
    _same(got, want)
    assert got.patch_counts.shape == (200, 200, BINS.nbins)
    assert not got.patch_counts[128:].any() and not got.patch_counts[:, 128:].any()


def test_the_serial_fast_path_with_150_regions_equals_brute_force():
    """The grid's keys and work items carry the label: with 150 regions (labels mixed at
    random, so every band holds every label) the cpu counts equal the reference ones."""
    ra, dec = uniform_randoms(1500, (0, 40, -30, 10), seed=14)
    rng = np.random.default_rng(15)
    lab = rng.integers(0, 150, ra.size)
    ra2, dec2 = uniform_randoms(1200, (0, 40, -30, 10), seed=16)
    lab2 = rng.integers(0, 150, ra2.size)
    w = rng.uniform(0.5, 1.5, ra.size)
    bins = AngularBins.log(0.1, 8, 6, unit="deg")
    for args, kw in (((ra, dec), dict(labels1=lab, weights1=w)),
                     ((ra, dec, ra2, dec2), dict(labels1=lab, labels2=lab2))):
        ref = pair_counts(*args, bins=bins, backend="reference", n_regions=150, **kw)
        for precision in ("float64", "float32"):
            fast = pair_counts(*args, bins=bins, backend="cpu", n_regions=150,
                               precision=precision, **kw)
            _same(fast, ref)
        assert ref.counts.sum() > 0 and ref.patch_counts.shape == (150, 150, 6)


def test_a_stripe_sends_only_the_region_pairs_it_met(client, survey, monkeypatch):
    s = survey
    sent = []
    real = dt._raw_fields

    def spy(pc):
        out = real(pc)
        sent.append(out)
        return out

    monkeypatch.setattr(dt, "_raw_fields", spy)      # in-process workers run this module
    got = sd.pair_counts(s["ra"], s["dec"], bins=BINS, labels1=s["lab"], nchunks=6,
                         client=client, backend="cpu")
    assert len(sent) == 6
    met = 0
    for out in sent:
        shape, a, b, v = out["patch_counts"]
        assert shape == (128, 128, BINS.nbins) and v.shape == (a.size, BINS.nbins)
        assert a.size < 128 * 128 // 8           # far below the dense R x R
        met += a.size
    assert met >= np.count_nonzero(got.patch_counts.any(axis=2))
    # the round trip of the packed fields is exact
    dense = dt._add_raw(sent)["patch_counts"]
    assert dense.dtype == np.int64 and dense.sum() == got.counts.sum()


def test_progress_callable_reports_every_stripe_once(client, survey):
    s = survey
    said = []
    sd.pair_counts(s["ra"][:4000], s["dec"][:4000], bins=BINS, labels1=s["lab"][:4000],
                   nchunks=5, client=client, backend="cpu", progress=said.append)
    # callbacks run on a thread of the client: they may land just after the result
    import time

    for _ in range(100):
        if len(said) == 5:
            break
        time.sleep(0.05)
    assert sorted(said) == [f"pair counts, stripes: {k} of 5 done" for k in range(1, 6)]
    with pytest.raises(TypeError, match="progress"):
        sd.pair_counts(s["ra"][:100], s["dec"][:100], bins=BINS, client=client,
                       progress="yes")
