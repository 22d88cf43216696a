"""Pair counts split over declination stripes: every pair in exactly one task, stripes of about
equal pairs, one scatter per call (none for the same Catalogs again), counts equal to the
serial ones as integers (CPU workers in this process; a killed process worker for faults)."""

import os

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import sphgpu.distributed as sd  # noqa: E402
from sphgpu.distributed import partition  # noqa: E402
from sphgpu.distributed import tpacf as dt  # noqa: E402
from sphgpu.testing import TOL  # noqa: E402
from sphgpu.tpacf import AngularBins, Catalog, pair_counts  # noqa: E402
from sphgpu.tpacf.mocks import clustered_catalog, uniform_randoms  # noqa: E402

from .test_faults import _killer  # noqa: E402

BINS = AngularBins.log(0.5, 12, 6, unit="deg")
FULL = (0.0, 360.0, -90.0, 90.0)


def _same(a, b):
    np.testing.assert_array_equal(a.counts, b.counts)
    assert (a.n1, a.n2, a.auto) == (b.n1, b.n2, b.auto)
    for name in ("total", "self_total", "weights", "weighted_total", "patch_counts",
                 "patch_total", "patch_self_total", "patch_weights", "region_counts",
                 "mean_theta", "mean_log_theta"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            if np.asarray(x).dtype.kind in "iu":
                np.testing.assert_array_equal(x, y, err_msg=name)
            else:
                np.testing.assert_allclose(x, y, rtol=TOL["pair_sums_rtol"], err_msg=name)


def _edge_points(edges):
    """Points exactly on stripe edges, at the poles, and duplicates of them."""
    dec = np.concatenate([edges, edges, [-90.0, 90.0, 90.0]])
    ra = np.concatenate([np.linspace(0, 359, edges.size), np.linspace(0, 359, edges.size),
                         [10.0, 0.0, 200.0]])
    return ra, dec


def test_every_pair_within_theta_max_is_in_exactly_one_task():
    ra, dec = uniform_randoms(400, FULL, seed=1)
    theta = np.radians(25.0)
    edges = partition.declination_stripes(dec, 6, theta, ra1=ra)
    ra_e, dec_e = _edge_points(edges[1:-1])
    ra, dec = np.concatenate([ra, ra_e]), np.concatenate([dec, dec_e])
    assert edges[0] == -90 and edges[-1] == 90 and np.all(np.diff(edges) > 0)
    pad = 25.0 * (1 + dt.HALO_PAD_REL) + dt.HALO_PAD_DEG
    xyz = Catalog(ra, dec).xyz
    close = (xyz.T @ xyz) >= np.cos(theta)          # pairs within theta_max (and i == i)
    seen = np.zeros_like(close, dtype=np.int64)
    owners = np.zeros(ra.size, np.int64)
    for idx, own in partition.stripe_members(dec, edges, pad, auto=True):
        mine, halo = idx[:own], idx[own:]
        owners[mine] += 1
        seen[np.ix_(mine, mine)] += 1
        seen[np.ix_(mine, halo)] += 1
        seen[np.ix_(halo, mine)] += 1
    assert np.all(owners == 1)
    np.fill_diagonal(close, False)
    assert np.all(seen[close] == 1)
    # cross: every point of catalog 2 within theta_max of a stripe point is in its task
    ra2, dec2 = uniform_randoms(300, FULL, seed=2)
    reach = partition.stripe_members(dec2, edges, pad, auto=False)
    own = partition.stripe_members(dec, edges, 0.0, auto=True)
    xyz2 = Catalog(ra2, dec2).xyz
    for (a, n), (b, _) in zip(own, reach):
        near = np.flatnonzero(((xyz[:, a[:n]].T @ xyz2) >= np.cos(theta)).any(axis=0))
        assert set(near) <= set(b)


def test_stripes_hold_about_equal_pairs():
    """Full-sky randoms: equal-area stripes are not equal-pair stripes near the poles only
    through sampling; the model's stripes differ by a few per cent (the tasks' balance)."""
    ra, dec = uniform_randoms(30000, FULL, seed=3)
    bins = AngularBins.log(0.5, 5, 4, unit="deg")
    edges = partition.declination_stripes(dec, 4, bins.theta_max_rad, ra1=ra)
    pad = 5.0 * (1 + dt.HALO_PAD_REL) + dt.HALO_PAD_DEG
    cat = Catalog(ra, dec)
    pairs = []
    for idx, own in partition.stripe_members(dec, edges, pad, auto=True):
        c = dt._piece(cat, idx)
        n = pair_counts(c.part(0, own), bins=bins, backend="cpu").counts.sum()
        if own < idx.size:
            n += pair_counts(c.part(0, own), c.part(own, idx.size), bins=bins,
                             backend="cpu").counts.sum()
        pairs.append(n)
    pairs = np.array(pairs, float)
    assert pairs.max() / pairs.mean() < 1.1, pairs
    # a survey footprint: the model sees where the points are
    ra, dec = uniform_randoms(20000, (0.0, 60.0, -10.0, 50.0), seed=4)
    edges = partition.declination_stripes(dec, 3, bins.theta_max_rad, ra1=ra)
    assert edges[1] > -10 and edges[2] < 50


@pytest.mark.parametrize("nchunks", [1, 2, 5])
def test_counts_equal_the_serial_counts_at_any_stripes(client, nchunks):
    ra, dec = clustered_catalog(600, seed=5)
    rra, rdec = uniform_randoms(700, FULL, seed=6)
    # points on the poles and duplicates, in both catalogs
    ra, dec = np.append(ra, [0.0, 0.0, 33.0, 33.0]), np.append(dec, [90.0, -90.0, 1.0, 1.0])
    lab = (np.arange(ra.size) % 4).astype(np.int64)
    rlab = (np.arange(rra.size) % 4).astype(np.int64)
    w = np.linspace(0.5, 1.5, ra.size)
    for kw in ({}, {"labels1": lab}, {"weights1": w, "mean_theta": True},
               {"labels1": lab, "weights1": w}):
        _same(sd.pair_counts(ra, dec, bins=BINS, nchunks=nchunks, client=client, **kw),
              pair_counts(ra, dec, bins=BINS, backend="cpu", **kw))
    for kw in ({"labels1": lab, "labels2": rlab}, {"weights2": np.ones(rra.size) * 2}):
        _same(sd.pair_counts(ra, dec, rra, rdec, bins=BINS, nchunks=nchunks, client=client,
                             **kw),
              pair_counts(ra, dec, rra, rdec, bins=BINS, backend="cpu", **kw))


def test_all_pairs_bins_and_catalogs_that_do_not_meet(client):
    ra, dec = uniform_randoms(300, FULL, seed=7)
    wide = AngularBins.log(1, 150, 5, unit="deg")       # theta_max past every stripe
    _same(sd.pair_counts(ra, dec, bins=wide, nchunks=4, client=client),
          pair_counts(ra, dec, bins=wide, backend="cpu"))
    ra1, dec1 = uniform_randoms(100, (0, 360, 40, 60), seed=8)
    ra2, dec2 = uniform_randoms(100, (0, 360, -60, -40), seed=9)
    got = sd.pair_counts(ra1, dec1, ra2, dec2, bins=BINS, nchunks=3, client=client)
    _same(got, pair_counts(ra1, dec1, ra2, dec2, bins=BINS, backend="cpu"))
    assert got.counts.sum() == 0
    with pytest.raises(ValueError, match="nchunks"):
        sd.pair_counts(ra, dec, bins=BINS, nchunks=0, client=client)
    with pytest.raises(ValueError, match="labels"):
        sd.pair_counts(ra1, dec1, ra2, dec2, bins=BINS, labels1=np.zeros(100, int),
                       client=client)


def test_one_scatter_a_call_and_none_for_the_same_catalogs(client, monkeypatch):
    sent = []
    real = dt._cluster.scatter

    def spy(c, data, resources=None):
        sent.append(len(data))
        return real(c, data, resources)

    monkeypatch.setattr(dt._cluster, "scatter", spy)
    a = Catalog(*uniform_randoms(800, FULL, seed=10))
    b = Catalog(*uniform_randoms(500, FULL, seed=11))
    want = pair_counts(a, bins=BINS, backend="cpu")
    _same(sd.pair_counts(a, bins=BINS, nchunks=3, client=client), want)
    assert sent == [3]                      # one scatter, one piece per stripe
    _same(sd.pair_counts(a, bins=BINS, nchunks=3, client=client), want)
    assert sent == [3]                      # found on the workers, prepared
    _same(sd.pair_counts(a, b, bins=BINS, nchunks=2, client=client),
          pair_counts(a, b, bins=BINS, backend="cpu"))
    assert sent == [3, 4]                   # cross: each stripe and its reach in catalog 2
    ra, dec = a.ra, a.dec                   # arrays make new Catalogs: sent at every call
    sd.pair_counts(ra, dec, bins=BINS, nchunks=2, client=client)
    sd.pair_counts(ra, dec, bins=BINS, nchunks=2, client=client)
    assert sent == [3, 4, 2, 2]


def test_a_worker_killed_in_a_count_costs_time_only(fresh_process_client, tmp_path):
    client = fresh_process_client
    ra, dec = uniform_randoms(3000, FULL, seed=12)
    want = pair_counts(ra, dec, bins=BINS, backend="cpu")
    flag = str(tmp_path / "killed")
    client.register_plugin(_killer(flag, 1, once=True, prefix="sphgpu-paircount"),
                           name="killer")
    got = sd.pair_counts(ra, dec, bins=BINS, nchunks=4, client=client)
    assert os.path.exists(flag)
    _same(got, want)


@pytest.mark.parametrize("k", [1, 2, 3, 7])
@pytest.mark.parametrize("auto", [True, False])
@pytest.mark.parametrize("pad", [0.0, 0.7, 25.0, 200.0])
def test_compiled_stripe_members_equal_the_reference(k, auto, pad):
    """The two-pass kernel the split count uses gives the reference's indices in its order,
    points on the edges and at the poles included; a changed order or a lost point fails."""
    from sphgpu.distributed import _stripe_kernel

    ra, dec = uniform_randoms(2001, FULL, seed=k)
    edges = partition.declination_stripes(dec, k, np.radians(2.0), ra1=ra)
    dec = np.concatenate([dec, edges, edges[1:-1] + pad, edges[1:-1] - pad, [-90.0, 90.0]])
    dec = np.clip(dec, -90.0, 90.0)
    want = partition.stripe_members(dec, edges, pad, auto=auto)
    got = _stripe_kernel.stripe_members(dec, edges, pad, auto=auto)
    assert len(got) == len(want) == k
    for (gi, gn), (wi, wn) in zip(got, want):
        assert gn == wn
        assert gi.dtype == np.int64
        np.testing.assert_array_equal(gi, wi)


def test_compiled_stripe_members_with_few_blocks(monkeypatch):
    """Many stripes cap the blocks (their counts' memory); one block or several, the same."""
    from sphgpu.distributed import _stripe_kernel

    ra, dec = uniform_randoms(50_000, FULL, seed=9)
    edges = partition.declination_stripes(dec, 40, np.radians(1.0), ra1=ra)
    want = partition.stripe_members(dec, edges, 1.5, auto=True)
    for cap in (8 * 40 * 40, 3 * 8 * 40 * 40, 1 << 26):      # 1 block, 3 blocks, the default
        monkeypatch.setattr(_stripe_kernel, "MIN_BLOCK", 1000)
        monkeypatch.setattr(_stripe_kernel, "COUNT_BYTES", cap)
        got = _stripe_kernel.stripe_members(dec, edges, 1.5, auto=True)
        assert len(got) == len(want) == edges.size - 1 >= 30
        for (gi, gn), (wi, wn) in zip(got, want):
            assert gn == wn
            np.testing.assert_array_equal(gi, wi)
