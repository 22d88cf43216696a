"""Work partitions: every item covered exactly once, costs balanced, bad input refused."""

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest

from sphgpu import AlmLayout, RingGeometry
from sphgpu.distributed import partition as P


def _chunk_costs(costs, bounds):
    return np.array([costs[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])])


@pytest.mark.parametrize("n, k", [(1, 1), (1, 4), (5, 5), (7, 3), (33, 4), (1000, 16), (31, 64)])
def test_balanced_cuts_cover_and_balance(n, k, rng):
    costs = rng.uniform(0, 10, n)
    b = P.balanced_cuts(costs, k)
    assert b[0] == 0 and b[-1] == n and len(b) == min(n, k) + 1
    assert np.all(np.diff(b) >= 1)                       # contiguous, non-empty, in order
    if n >= 4 * k:                                       # room to balance: the stated bound
        assert _chunk_costs(costs, b).max() <= costs.sum() / k + costs.max()


def test_balanced_cuts_zero_and_skewed_costs():
    b = P.balanced_cuts(np.zeros(10), 3)
    assert list(np.diff(b)) in ([3, 3, 4], [3, 4, 3], [4, 3, 3])
    b = P.balanced_cuts([100, 1, 1, 1, 1], 2)            # one heavy item stands alone
    assert list(b) == [0, 1, 5]


@pytest.mark.parametrize("bad, exc", [([], ValueError), ([[1.0]], ValueError),
                                      ([1.0, -1.0], ValueError), ([np.nan], ValueError)])
def test_balanced_cuts_refuses_bad_costs(bad, exc):
    with pytest.raises(exc, match="costs"):
        P.balanced_cuts(bad, 2)
    with pytest.raises(ValueError, match="nchunks"):
        P.balanced_cuts([1.0], 0)
    with pytest.raises(TypeError, match="nchunks"):
        P.balanced_cuts([1.0], 2.0)


@pytest.mark.parametrize("lmax, mmax, k", [(0, 0, 3), (10, 10, 3), (47, 20, 4), (1023, 1023, 7)])
def test_m_chunks_cover_m_and_balance_the_legendre_cost(lmax, mmax, k):
    chunks = P.m_chunks(lmax, mmax, k, nrings=5)
    assert [m for r in chunks for m in r] == list(range(mmax + 1))
    cost = P.m_costs(lmax, mmax, 5)
    assert np.array_equal(cost, 5.0 * (lmax - np.arange(mmax + 1) + 1))
    loads = [cost[r.start:r.stop].sum() for r in chunks]
    assert max(loads) <= cost.sum() / len(chunks) + cost.max()
    if lmax == 1023:       # low m cost more: the first chunk holds fewer orders than the last
        assert len(chunks[0]) < len(chunks[-1])


@pytest.mark.parametrize("lmax, mmax", [(0, 0), (9, 9), (20, 7)])
def test_alm_slice_is_the_block_of_those_orders(lmax, mmax):
    layout = AlmLayout(lmax, mmax)
    l, m = layout.lm()
    for r in P.m_chunks(lmax, mmax, 3):
        sl = P.alm_slice(lmax, r)
        assert np.array_equal(np.flatnonzero((m >= r.start) & (m < r.stop)),
                              np.arange(sl.start, sl.stop))
    with pytest.raises(ValueError, match="mrange"):
        P.alm_slice(lmax, range(0, lmax + 2))
    with pytest.raises(TypeError, match="mrange"):
        P.alm_slice(lmax, range(0, 4, 2))


@pytest.mark.parametrize("nside, k", [(1, 2), (3, 4), (8, 3), (16, 5)])
def test_ring_chunks_plain_and_with_mirror_pairs(nside, k):
    g = RingGeometry.healpix(nside)
    plain = P.ring_chunks(g.nphi, k)
    assert np.array_equal(np.concatenate(plain), np.arange(g.nrings))
    pix = [g.nphi[c].sum() for c in plain]
    assert max(pix) <= g.npix / len(plain) + g.nphi.max()
    north, south = g.ring_pairs()
    paired = P.ring_chunks(g.nphi, k, pairs=(north, south))
    assert np.array_equal(np.sort(np.concatenate(paired)), np.arange(g.nrings))
    chunk_of = np.empty(g.nrings, int)
    for i, c in enumerate(paired):
        chunk_of[c] = i
        assert np.all(np.diff(c) > 0)
    both = south >= 0
    assert np.array_equal(chunk_of[north[both]], chunk_of[south[both]])   # mirrors together


def test_ring_chunks_refuses_bad_pairs_and_costs():
    with pytest.raises(ValueError, match="pairs"):
        P.ring_chunks([4, 4, 4], 2, pairs=([0, 1], [2, 2]))
    with pytest.raises(ValueError, match="cost"):
        P.ring_chunks([4, 4, 4], 2, cost=[1.0, 2.0])
    with pytest.raises(ValueError, match="nphi"):
        P.ring_chunks([], 2)


@pytest.mark.parametrize("n1, n2, k", [(1, None, 3), (2, None, 1), (13, None, 4), (10, 7, 3),
                                       (5, 1, 2)])
def test_chunk_pairs_cover_every_pair_once(n1, n2, k):
    tasks = P.chunk_pairs(n1, n2, k)
    seen = {}
    for t in tasks:
        for i in range(t.first.start, t.first.stop):
            for j in range(t.second.start, t.second.stop):
                if t.same and j <= i:
                    continue                 # diagonal block: each unordered pair once
                pair = (min(i, j), max(i, j)) if n2 is None else (i, j)
                seen[pair] = seen.get(pair, 0) + 1
    if n2 is None:
        want = set(itertools.combinations(range(n1), 2))
    else:
        want = set(itertools.product(range(n1), range(n2)))
    assert set(seen) == want and all(v == 1 for v in seen.values())
    assert sum(t.npairs for t in tasks) == len(want)
    if n2 is None:
        nk = min(k, n1)
        assert len(tasks) == nk * (nk + 1) // 2


def test_catalog_chunks_sizes_differ_by_at_most_one():
    sizes = [s.stop - s.start for s in P.catalog_chunks(103, 10)]
    assert sum(sizes) == 103 and max(sizes) - min(sizes) <= 1
    with pytest.raises(ValueError, match="n must be"):
        P.catalog_chunks(0, 2)


@pytest.mark.parametrize("nside, k, overlap", [(1, 2, 0.0), (8, 3, 0.2), (16, 4, 0.05),
                                               (16, 40, 1.0)])
def test_latitude_bands_own_every_ring_once_and_halos_hold_the_reach(nside, k, overlap):
    g = RingGeometry.healpix(nside)
    bands = P.latitude_bands(g.theta, k, overlap, cost=g.nphi)
    own = np.concatenate([np.arange(b.own.start, b.own.stop) for b in bands])
    assert np.array_equal(own, np.arange(g.nrings))
    for b in bands:
        inside = np.arange(b.halo.start, b.halo.stop)
        t = g.theta
        want = np.flatnonzero((t >= b.theta_min - overlap) & (t <= b.theta_max + overlap))
        assert np.array_equal(inside, want)
        assert b.halo.start <= b.own.start and b.halo.stop >= b.own.stop
        assert b.theta_min == t[b.own.start] and b.theta_max == t[b.own.stop - 1]


def test_latitude_band_halo_holds_every_point_within_the_overlap(rng):
    """Points sorted by colatitude: any point within angular distance `overlap` of an owned
    point lies in that band's halo (colatitudes differ by at most the distance)."""
    n, overlap = 300, 0.3
    z = rng.uniform(-1, 1, n)
    phi = rng.uniform(0, 2 * math.pi, n)
    order = np.argsort(np.arccos(z))
    theta = np.arccos(z)[order]
    phi = phi[order]
    xyz = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], 1)
    dist = np.arccos(np.clip(xyz @ xyz.T, -1, 1))
    for b in P.latitude_bands(theta, 5, overlap):
        near = np.flatnonzero((dist[b.own] <= overlap).any(axis=0))
        assert near.min() >= b.halo.start and near.max() < b.halo.stop


def test_latitude_bands_refuse_bad_input():
    with pytest.raises(ValueError, match="sorted"):
        P.latitude_bands([0.5, 0.1], 2, 0.1)
    with pytest.raises(ValueError, match="overlap"):
        P.latitude_bands([0.1, 0.5], 2, -0.1)
    with pytest.raises(TypeError, match="overlap"):
        P.latitude_bands([0.1, 0.5], 2, "0.1")
    with pytest.raises(ValueError, match="theta"):
        P.latitude_bands([0.1, 4.0], 2, 0.1)


def test_importing_sphgpu_or_the_partitions_does_not_import_dask():
    code = ("import sys, sphgpu, sphgpu.distributed.partition; "
            "bad = [m for m in ('dask', 'distributed') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_transform_ring_costs_charge_each_pair_one_recurrence():
    g = RingGeometry.healpix(4)
    north, south = g.ring_pairs()
    cost = P.transform_ring_costs(g.nphi, (north, south), 100)
    fft = 5.0 * g.nphi * np.log2(np.maximum(g.nphi, 2))
    assert np.allclose(cost - fft, np.isin(np.arange(g.nrings), north) * 800.0)


def test_shares_set_the_relative_size_of_chunks_and_bands():
    b = P.balanced_cuts(np.ones(100), 3, shares=[1, 2, 1])
    assert list(b) == [0, 25, 75, 100]
    theta = np.linspace(0.0, np.pi, 41)
    bands = P.latitude_bands(theta, 2, 0.1, shares=[1, 3])
    assert [(x.own.start, x.own.stop) for x in bands] == [(0, 10), (10, 41)]
    for bad in ([1, 2], [1, 0, 1], [1, np.nan, 1]):
        with pytest.raises(ValueError, match="shares"):
            P.balanced_cuts(np.ones(10), 3, shares=bad)
