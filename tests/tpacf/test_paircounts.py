"""PairCounts: adds, pickles, refuses mismatched bins; jackknife leave-one-out equals recounting."""

import pickle

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, PairCounts, pair_counts

from .cases import clustered, sky

BINS = AngularBins.log(0.02, 8, 10)


def test_counts_of_parts_add_up_to_the_whole(rng):
    """DD(A u B) = DD(A) + DD(B) + D_A D_B, with the normalisation adding up too."""
    ra, dec = clustered(rng, 800)
    a, b = slice(0, 300), slice(300, None)
    whole = pair_counts(ra, dec, bins=BINS, backend="cpu")
    parts = [pair_counts(ra[a], dec[a], bins=BINS, backend="cpu"),
             pair_counts(ra[b], dec[b], bins=BINS, backend="cpu"),
             pair_counts(ra[a], dec[a], ra[b], dec[b], bins=BINS, backend="cpu")]
    total = parts[0] + parts[1] + parts[2]
    np.testing.assert_array_equal(total.counts, whole.counts)
    assert total.total == whole.total == 800 * 799 / 2
    np.testing.assert_array_equal(sum(parts).counts, whole.counts)       # builtin sum works
    np.testing.assert_allclose(total.normalized(), whole.normalized(),
                               rtol=TOL["normalized_counts_rtol"])


def test_pickle_round_trip_keeps_everything(rng):
    ra, dec = sky(rng, 300, dec=(0, 30), ra=(0, 30))
    c = pair_counts(ra, dec, bins=BINS, weights1=rng.uniform(1, 2, 300),
                    labels1=rng.integers(0, 4, 300), backend="cpu")
    back = pickle.loads(pickle.dumps(c))
    for name in ("counts", "weights", "region_counts", "region_weights", "region_total",
                 "region_weighted_total"):
        np.testing.assert_array_equal(getattr(back, name), getattr(c, name))
    assert back.bins == c.bins and back.total == c.total and back.n1 == c.n1
    assert "weighted" in repr(back) and "4 regions" in repr(back)
    back2 = back + c
    np.testing.assert_array_equal(back2.counts, 2 * c.counts)


def test_adding_mismatched_counts_raises(rng):
    ra, dec = sky(rng, 100, dec=(0, 20), ra=(0, 20))
    c = pair_counts(ra, dec, bins=BINS, backend="cpu")
    other_bins = pair_counts(ra, dec, bins=AngularBins.log(0.02, 8, 11), backend="cpu")
    with pytest.raises(ValueError, match="different bins"):
        c + other_bins
    weighted = pair_counts(ra, dec, bins=BINS, weights1=np.ones(100), backend="cpu")
    with pytest.raises(ValueError, match="weighted and unweighted"):
        c + weighted
    labelled = pair_counts(ra, dec, bins=BINS, labels1=np.zeros(100, int), backend="cpu")
    with pytest.raises(ValueError, match="jackknife regions"):
        c + labelled
    with pytest.raises(TypeError):
        c + 1.5
    with pytest.raises(ValueError, match="no jackknife regions"):
        c.leave_one_out()
    with pytest.raises(ValueError, match="no weights"):
        c.normalized(weighted=True)
    with pytest.raises(TypeError, match="AngularBins"):
        PairCounts("bins", np.zeros(3), n1=1, n2=1, auto=True, total=0)


@pytest.mark.parametrize("cross", [False, True])
def test_leave_one_out_equals_recounting_without_the_region(cross, rng):
    ra, dec = clustered(rng, 500)
    lab = rng.integers(0, 4, ra.size)
    w = rng.uniform(0.5, 2, ra.size)
    ra2, dec2 = sky(rng, 300, dec=(-25, 25), ra=(5, 55))
    lab2, w2 = rng.integers(0, 4, ra2.size), rng.uniform(0.5, 2, ra2.size)
    cat = Catalog(ra, dec, weights=w, labels=lab)
    cat2 = Catalog(ra2, dec2, weights=w2, labels=lab2) if cross else None
    full = pair_counts(cat, cat2, bins=BINS, backend="cpu")
    loo = full.leave_one_out()
    loo_n = full.leave_one_out_normalized(weighted=False)
    loo_w = full.leave_one_out_normalized(weighted=True)
    for k in range(4):
        keep = lab != k
        sub = Catalog(ra[keep], dec[keep], weights=w[keep])
        sub2 = None
        if cross:
            keep2 = lab2 != k
            sub2 = Catalog(ra2[keep2], dec2[keep2], weights=w2[keep2])
        again = pair_counts(sub, sub2, bins=BINS, backend="cpu")
        np.testing.assert_array_equal(loo[k], again.counts)
        np.testing.assert_allclose(loo_n[k], again.counts / again.total,
                                   rtol=TOL["leave_one_out_normalized_rtol"])
        # weighted sums of the remaining pairs are differences of float sums: a bin whose pairs
        # all touch region k keeps a rounding residue (~1e-20) instead of 0
        np.testing.assert_allclose(loo_w[k], again.weights / again.weighted_total,
                                   rtol=TOL["leave_one_out_weights_rtol"],
                                   atol=TOL["leave_one_out_weights_atol"])
    # region k counts every pair touching k once: summed over regions, cross-region pairs twice
    assert np.all(full.region_counts.sum(axis=0) >= full.counts)


def test_n_regions_pads_regions_without_points(rng):
    ra, dec = sky(rng, 200, dec=(0, 20), ra=(0, 20))
    lab = rng.integers(0, 3, 200)
    a = pair_counts(ra[:100], dec[:100], bins=BINS, labels1=np.zeros(100, int), n_regions=3,
                    backend="cpu")
    b = pair_counts(ra[100:], dec[100:], bins=BINS, labels1=lab[100:], n_regions=3,
                    backend="cpu")
    assert (a + b).n_regions == 3
    np.testing.assert_array_equal(a.region_counts[1:], 0)
    with pytest.raises(ValueError, match="labels go up to"):
        pair_counts(ra, dec, bins=BINS, labels1=lab, n_regions=2, backend="cpu")
