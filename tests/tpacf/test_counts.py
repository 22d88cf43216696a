"""The grid-pruned CPU backend against the brute-force float64 reference: equal integers.

Random and clustered catalogs, the poles, RA 0/360, duplicates, antipodes, bins from 1 arcsec
to 180 degrees, auto and cross counts, weights and jackknife labels, both arithmetic modes.
"""

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, pair_counts
from sphgpu.tpacf import grid

from .cases import awkward, clustered, edge_pairs, sky

BINS = {
    "log-deg": AngularBins.log(0.01, 10, 20),
    "log-arcsec": AngularBins.log(1, 300, 8, unit="arcsec"),
    "linear-180": AngularBins.linear(0, 180, 9),
    "wide": AngularBins.from_edges([0.5, 5, 20, 70, 100]),
}


def _catalog(kind, rng, n):
    if kind == "random":
        return sky(rng, n)
    if kind == "clustered":
        return clustered(rng, n)
    if kind == "awkward":
        return awkward(rng)
    if kind == "polar":
        return sky(rng, n, dec=(75.0, 90.0))
    if kind == "tiny":                       # a 10 arcmin patch: separations of arcseconds
        return sky(rng, n, dec=(-0.08, 0.08), ra=(359.92, 360.08))
    raise ValueError(kind)


def _check(c, ref):
    np.testing.assert_array_equal(c.counts, ref.counts)
    assert c.counts.dtype == np.int64
    if ref.weights is not None:
        np.testing.assert_allclose(c.weights, ref.weights, rtol=TOL["pair_sums_rtol"],
                                   atol=TOL["pair_sums_atol"])
    if ref.region_counts is not None:
        np.testing.assert_array_equal(c.region_counts, ref.region_counts)
    if ref.region_weights is not None:
        np.testing.assert_allclose(c.region_weights, ref.region_weights, rtol=TOL["pair_sums_rtol"],
                                   atol=TOL["pair_sums_atol"])


@pytest.mark.parametrize("kind", ["random", "clustered", "awkward", "polar", "tiny"])
@pytest.mark.parametrize("bins", list(BINS), ids=list(BINS))
def test_auto_and_cross_counts_equal_the_reference(kind, bins, rng):
    b = BINS[bins]
    ra, dec = _catalog(kind, rng, 700)
    ra2, dec2 = _catalog(kind, rng, 500)
    ref_auto = pair_counts(ra, dec, bins=b, backend="reference")
    ref_cross = pair_counts(ra, dec, ra2, dec2, bins=b, backend="reference")
    for precision in ("float64", "float32"):
        _check(pair_counts(ra, dec, bins=b, backend="cpu", precision=precision), ref_auto)
        _check(pair_counts(ra, dec, ra2, dec2, bins=b, backend="cpu", precision=precision),
               ref_cross)
    if kind in ("random", "clustered"):
        assert ref_auto.counts.sum() > 100 or bins == "log-arcsec"


def test_weights_and_labels(rng):
    b = BINS["log-deg"]
    ra, dec = clustered(rng, 600)
    ra2, dec2 = sky(rng, 400, dec=(-25, 25), ra=(5, 55))
    w1, w2 = rng.uniform(0.2, 3, ra.size), rng.uniform(0.2, 3, ra2.size)
    l1, l2 = rng.integers(0, 5, ra.size), rng.integers(0, 5, ra2.size)
    kw = dict(weights1=w1, weights2=w2, labels1=l1, labels2=l2)
    ref = pair_counts(ra, dec, ra2, dec2, bins=b, backend="reference", **kw)
    for precision in ("float64", "float32"):
        _check(pair_counts(ra, dec, ra2, dec2, bins=b, backend="cpu", precision=precision,
                           **kw), ref)
    ref = pair_counts(ra, dec, bins=b, backend="reference", weights1=w1, labels1=l1)
    _check(pair_counts(ra, dec, bins=b, backend="cpu", weights1=w1, labels1=l1), ref)
    # one weighted catalog: the other counts with weight 1
    ref = pair_counts(ra, dec, ra2, dec2, bins=b, backend="reference", weights1=w1)
    got = pair_counts(ra, dec, ra2, dec2, bins=b, backend="cpu", weights1=w1)
    _check(got, ref)
    assert got.weighted_total == pytest.approx(w1.sum() * ra2.size)


def test_edge_pairs_every_backend(rng):
    b = BINS["log-arcsec"]
    ra1, dec1, ra2, dec2, stats = edge_pairs(b, rng)
    assert stats[0] >= 3
    ref = pair_counts(ra1, dec1, ra2, dec2, bins=b, backend="reference")
    for p in ("float64", "float32"):
        _check(pair_counts(ra1, dec1, ra2, dec2, bins=b, backend="cpu", precision=p), ref)


def test_duplicates_and_self_pairs(rng):
    """Auto counts: each unique pair once, no self-pairs; duplicates are pairs at distance 0."""
    ra = np.array([10.0, 10.0, 10.0, 10.5])
    dec = np.array([-5.0, -5.0, -5.0, -5.0])
    lin = AngularBins.linear(0, 1, 2)
    c = pair_counts(ra, dec, bins=lin, backend="cpu")
    np.testing.assert_array_equal(c.counts, [3 + 3, 0])         # 3 duplicate pairs + 3 at 0.5
    assert c.total == 6
    log = AngularBins.log(0.1, 1, 2)
    np.testing.assert_array_equal(pair_counts(ra, dec, bins=log, backend="cpu").counts.sum(), 3)
    # a cross count of a catalog with itself counts both orders and the self-pairs
    cross = pair_counts(ra, dec, ra, dec, bins=lin, backend="cpu")
    np.testing.assert_array_equal(cross.counts, 2 * c.counts + [4, 0])


def test_pruning_compares_far_fewer_pairs_and_misses_none(rng):
    ra, dec = sky(rng, 3000, dec=(-60, 60))
    b = AngularBins.log(0.05, 2, 8)
    c = pair_counts(ra, dec, bins=b, backend="cpu")
    ref = pair_counts(ra, dec, bins=b, backend="reference")
    np.testing.assert_array_equal(c.counts, ref.counts)
    assert c.pairs_compared < 0.02 * ref.pairs_compared
    assert c.pairs_compared >= c.counts.sum()


@pytest.mark.parametrize("theta_max", [0.5, 30.0, 89.0])
def test_every_item_is_within_reach(theta_max, rng):
    """The plan's items cover every pair inside theta_max, and each auto pair once."""
    ra, dec = np.concatenate([sky(rng, 400), awkward(rng)], axis=1)
    cat = Catalog(ra, dec)
    b = AngularBins.from_edges([0, theta_max])
    plan = grid.build_plan(cat, None, b, i_tile=7, j_max=13, groups=5)
    n = cat.size
    seen = np.zeros((n, n), np.int64)
    for i0, i1, j0, j1, _, _ in plan.items:
        for i in range(i0, i1):
            lo = max(j0, i + 1)
            seen[i, lo:j1] += 1
    assert seen.max() <= 1
    x = plan.s1.xyz
    d2 = ((x[0][:, None] - x[0]) ** 2 + (x[1][:, None] - x[1]) ** 2) + (x[2][:, None] - x[2]) ** 2
    inside = np.triu(d2 < b.chord2_edges[-1], 1)
    assert np.all(seen[inside] == 1)
    assert plan.pairs_compared == seen.sum()
    assert plan.group_start[0] == 0 and plan.group_start[-1] == plan.items.shape[0]


def test_sorted_catalog_is_cached_and_bands_tile_the_sky(rng):
    cat = Catalog(*sky(rng, 200))
    h = grid.band_height(np.deg2rad(10))
    assert abs(np.pi / h - round(np.pi / h)) < TOL["band_height_divides_pi_atol"]
    assert grid.sorted_catalog(cat, h, 0) is grid.sorted_catalog(cat, h, 0)
    assert grid.band_height(np.deg2rad(grid.ALL_PAIRS_FROM_DEG)) == np.pi
