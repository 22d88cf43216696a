"""The CPU backend's float32 path reads its decisions from ``exact.float32_lookup``'s table.

Float32 and float64 counts (and the brute-force reference) must stay equal, and ``refined``
must be the number of pairs that the binary search on the thresholds sends to float64: a
NumPy emulation of the search over every pair gives that number here.
"""

import numba
import numpy as np
import pytest

from sphgpu.tpacf import AngularBins, Catalog, exact, grid, pair_counts
from sphgpu.tpacf import _cpu

from .cases import clustered, edge_pairs, sky
from .test_counts import _check

BINS = {
    "log-deg": AngularBins.log(0.01, 10, 20, unit="deg"),
    "log-arcsec": AngularBins.log(0.5, 300, 9, unit="arcsec"),
    "linear-180": AngularBins.linear(0, 180, 9),
    # the first edge's squared chord is below TINY_EDGE: a threshold at -inf, so the table's
    # first cells say "recompute" rather than "search"
    "tiny-first": AngularBins.from_edges([3e-7, 1e-4, 0.01, 1.0, 5.0], unit="deg"),
}


def _points(bins, rng, n):
    """Clustered points, a 10 arcmin patch, uniform points, exact duplicates and pairs on the
    bin edges; the second catalog: the edge pairs' partners and copies of five points."""
    ra_c, dec_c = clustered(rng, n)
    ra_t, dec_t = sky(rng, n // 3, dec=(-0.08, 0.08), ra=(359.92, 360.08))
    ra_s, dec_s = sky(rng, n // 3)
    ra1, dec1, ra2, dec2, _ = edge_pairs(bins, rng, span=6)
    ra = np.concatenate([ra_c, ra_t, ra_s, ra_c[:5], ra1])
    dec = np.concatenate([dec_c, dec_t, dec_s, dec_c[:5], dec1])
    return ra, dec, np.concatenate([ra2, ra_c[:5]]), np.concatenate([dec2, dec_c[:5]])


def _search_decisions(cat1, cat2, bins):
    """(refined, from table, from search): pairs the binary search sends to float64, of them
    those whose table cell already says so, and the pairs whose cell says "search" -- over every
    pair (i < j for an auto count) of the float32 vectors the CPU backend uses."""
    plan = grid.build_plan(cat1, cat2, bins)
    f1 = plan.s1.xyz32
    f2 = f1 if cat2 is None else plan.s2.xyz32
    T, gap = exact.float32_thresholds(bins.chord2_edges)
    smax = exact.float32_cutoff(T, gap)
    table, b0, shift = exact.float32_lookup(T, gap)
    refined = from_table = searched = 0
    for i in range(f1.shape[1]):
        d = f1[:, i:i + 1] - (f2[:, i + 1:] if cat2 is None else f2)
        s = (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2]          # float32, as the CPU rounds it
        assert s.dtype == np.float32
        s = s[s <= smax]
        odd = np.searchsorted(T, s, side="left") % 2 == 1
        cell = s.view(np.int32).astype(np.int64) >> shift
        v = table[np.clip(cell, b0, b0 + table.size - 1) - b0]
        refined += int(np.count_nonzero(odd))
        from_table += int(np.count_nonzero(odd & (v == exact.LOOKUP_REFINE)))
        searched += int(np.count_nonzero(v == exact.LOOKUP_SEARCH))
    return refined, from_table, searched



def test_f32_bits_is_the_bit_pattern():
    @numba.njit
    def bits(a):
        out = np.empty(a.size, np.int32)
        for i in range(a.size):
            out[i] = _cpu._f32_bits(a[i])
        return out

    a = np.array([0.0, np.inf, 1e-45, 1e-38, 1.0, 4.0, 3.4e38, np.nextafter(4.0, 0.0)],
                 dtype=np.float32)
    a = np.concatenate([a, np.random.default_rng(3).uniform(0, 4, 1000).astype(np.float32)])
    np.testing.assert_array_equal(bits(a), a.view(np.int32))


@pytest.mark.parametrize("name", list(BINS))
def test_float32_counts_and_refined_match_the_search(name, rng):
    bins = BINS[name]
    ra, dec, ra2, dec2 = _points(bins, rng, 900)
    w1, w2 = rng.uniform(0.2, 3, ra.size), rng.uniform(0.2, 3, ra2.size)
    l1, l2 = rng.integers(0, 4, ra.size), rng.integers(0, 4, ra2.size)
    for second in (False, True):             # auto, then cross with the edges' partners
        args = (ra, dec, ra2, dec2) if second else (ra, dec)
        kw = dict(weights1=w1, labels1=l1)
        if second:
            kw.update(weights2=w2, labels2=l2)
        f32 = pair_counts(*args, bins=bins, backend="cpu", precision="float32", **kw)
        f64 = pair_counts(*args, bins=bins, backend="cpu", precision="float64", **kw)
        ref = pair_counts(*args, bins=bins, backend="reference", **kw)
        _check(f32, f64)
        _check(f32, ref)
        assert f32.counts.sum() > 0

        cat1, cat2 = Catalog(ra, dec), (Catalog(ra2, dec2) if second else None)
        plain = pair_counts(cat1, cat2, bins=bins, backend="cpu", precision="float32")
        np.testing.assert_array_equal(plain.counts, f32.counts)
        refined, from_table, searched = _search_decisions(cat1, cat2, bins)
        assert plain.refined == refined
        assert f32.refined == refined        # weights and labels change no decision
        assert refined > 0 and searched > 0  # both paths of the table read were taken
        if name in ("linear-180", "tiny-first"):   # an edge at or near 0: duplicates
            assert from_table > 0
