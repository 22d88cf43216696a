"""The precision test: float32 squared chords with float64 refinement give the float64 counts.

Pairs are placed on bin edges (float64 distance exactly at an edge, or one ulp either side),
down to 1 arcsecond. Plain float32 misbins some of them (so the test can fail); the refined
float32 path of the CPU backend -- the same decisions as the CUDA kernel -- never does, and the
error bound behind the refinement holds on them with room to spare.
"""

import numpy as np
import pytest

from sphgpu.tpacf import AngularBins, pair_counts
from sphgpu.tpacf import exact
from sphgpu.tpacf.catalog import unit_vectors
from sphgpu.tpacf.reference import pair_d2

from .cases import clustered, edge_pairs, sky

BINS = [AngularBins.log(0.01, 10, 20), AngularBins.log(1, 120, 7, unit="arcsec"),
        AngularBins.linear(0, 180, 9)]


def _float64_d2(ra1, dec1, ra2, dec2):
    """The defining float64 squared chord of pairs (i, i)."""
    d = unit_vectors(ra1, dec1) - unit_vectors(ra2, dec2)
    return (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2]


def _float32_d2(ra1, dec1, ra2, dec2, fma=False):
    """The float32 squared chord of pairs (i, i), rounded after every operation; with ``fma``
    the way a fused multiply-add evaluates it (products exact in float64, one rounding)."""
    a = unit_vectors(ra1, dec1).astype(np.float32)
    b = unit_vectors(ra2, dec2).astype(np.float32)
    d = a - b                                          # float32 differences
    if not fma:
        return (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2]
    d = d.astype(np.float64)
    s = np.float32(d[0] * d[0])
    s = np.float32(d[1] * d[1] + s)
    return np.float32(d[2] * d[2] + s)


@pytest.mark.parametrize("bins", BINS, ids=["log-deg", "log-arcsec", "linear-180"])
def test_refined_float32_equals_float64_on_edge_pairs(bins, rng):
    ra1, dec1, ra2, dec2, stats = edge_pairs(bins, rng)
    assert min(stats.values()) >= bins.nbins // 3, stats     # the search found edge pairs
    ref = pair_counts(ra1, dec1, ra2, dec2, bins=bins, backend="reference")
    fast = pair_counts(ra1, dec1, ra2, dec2, bins=bins, backend="cpu", precision="float32")
    np.testing.assert_array_equal(fast.counts, ref.counts)
    assert fast.refined >= ra1.size                   # every edge pair took the float64 path
    both_ra, both_dec = np.concatenate([ra1, ra2]), np.concatenate([dec1, dec2])
    ref = pair_counts(both_ra, both_dec, bins=bins, backend="reference")
    fast = pair_counts(both_ra, both_dec, bins=bins, backend="cpu", precision="float32")
    np.testing.assert_array_equal(fast.counts, ref.counts)


def test_plain_float32_misbins_edge_pairs(rng):
    """Without the refinement float32 puts edge pairs in the wrong bin: the test above can fail."""
    bins = BINS[1]
    ra1, dec1, ra2, dec2, _ = edge_pairs(bins, rng)
    d2 = _float64_d2(ra1, dec1, ra2, dec2)
    assert np.array_equal(d2, pair_d2(unit_vectors(ra1, dec1), unit_vectors(ra2, dec2)).diagonal())
    want = np.searchsorted(bins.chord2_edges, d2, side="right")
    s = _float32_d2(ra1, dec1, ra2, dec2)
    got = np.searchsorted(bins.chord2_edges.astype(np.float32), s, side="right")
    assert np.count_nonzero(got != want) > 0
    # and acos of a float32 dot product (the slides' single precision) is far worse
    a = unit_vectors(ra1, dec1).astype(np.float32)
    b = unit_vectors(ra2, dec2).astype(np.float32)
    theta = np.arccos(np.clip(np.sum(a * b, axis=0), -1, 1))
    got = np.searchsorted(bins.edges_rad, theta.astype(np.float64), side="right")
    assert np.count_nonzero(got != want) > ra1.size // 3


@pytest.mark.parametrize("fma", [False, True])
def test_error_bound_holds(fma, rng):
    """|float32 - float64| <= err32 / 2 on edge pairs and on random pairs at every scale."""
    ra1, dec1, ra2, dec2, _ = edge_pairs(BINS[0], rng)
    r_ra, r_dec = sky(rng, 4000)
    c_ra, c_dec = clustered(rng, 4000)
    ra1 = np.concatenate([ra1, r_ra, c_ra[:2000]])
    dec1 = np.concatenate([dec1, r_dec, c_dec[:2000]])
    ra2 = np.concatenate([ra2, r_ra[::-1], c_ra[2000:]])
    dec2 = np.concatenate([dec2, r_dec[::-1], c_dec[2000:]])
    d64 = _float64_d2(ra1, dec1, ra2, dec2)
    s = _float32_d2(ra1, dec1, ra2, dec2, fma=fma).astype(np.float64)
    err = np.abs(s - d64)
    assert np.all(err <= 0.5 * exact.err32(d64)), np.max(err / exact.err32(d64))
    assert np.max(err / exact.err32(d64)) > 1e-3      # the bound is not absurdly loose


def test_threshold_table():
    bins = AngularBins.log(0.1, 120, 12, unit="arcsec")
    T, gap = exact.float32_thresholds(bins.chord2_edges)
    P = T.size
    assert P & (P - 1) == 0 and T[-1] == np.inf
    finite = T[T < np.inf]
    assert np.all(np.diff(finite) >= 0)
    # every edge lies strictly inside an interval [T[2m], T[2m+1]]
    for E in bins.chord2_edges:
        c = np.searchsorted(T, np.float32(E), side="left")
        assert c % 2 == 1
    # gaps carry the bins in order, -1 outside
    L = finite.size
    g = gap[: L // 2 + 1]
    assert g[0] == -1 and g[-1] == -1
    inner = g[1:-1]
    assert np.all(np.diff(inner[inner >= 0]) > 0)
    assert exact.float32_cutoff(T, gap) == finite[-1]
    # the edge at 0.1 arcsec is below TINY_EDGE: its interval reaches down to -inf
    assert T[0] == -np.inf
    # open-ended last bin: no cutoff
    T2, gap2 = exact.float32_thresholds(AngularBins.linear(0, 180, 3).chord2_edges)
    assert exact.float32_cutoff(T2, gap2) == np.inf


def test_refinement_is_rare_at_benchmark_scales(rng):
    """On an ordinary clustered catalog only a few pairs per million need float64."""
    ra, dec = clustered(rng, 3000)
    bins = BINS[0]
    fast = pair_counts(ra, dec, bins=bins, backend="cpu", precision="float32")
    ref = pair_counts(ra, dec, bins=bins, backend="cpu", precision="float64")
    np.testing.assert_array_equal(fast.counts, ref.counts)
    assert fast.refined <= 1e-4 * fast.pairs_compared + 10


@pytest.mark.parametrize("bins", [AngularBins.log(0.01, 10, 20, unit="deg"),
                                  AngularBins.log(0.1, 120, 12, unit="arcsec"),
                                  AngularBins.linear(0, 180, 3),
                                  AngularBins.linear(0, 10, 7, unit="deg")])
def test_lookup_table_gives_the_binary_search_decisions(bins, rng):
    """Every float32 s >= 0 read from the lookup table (falling back to the search where it
    says so) gets the decision of the search itself: a bin, -1 or "recompute"."""
    T, gap = exact.float32_thresholds(bins.chord2_edges)
    table, b0, shift = exact.float32_lookup(T, gap)
    fin = T[np.isfinite(T) & (T >= 0)]
    s = np.concatenate([rng.uniform(0, 4, 20000), np.exp(rng.uniform(-60, 1.4, 20000)), fin,
                        np.nextafter(fin, np.float32(np.inf)),
                        np.nextafter(fin, np.float32(-np.inf)), [0.0, 4.0, np.inf]])
    s = s.astype(np.float32)
    s = s[s >= 0]
    c = np.searchsorted(T, s, side="left")
    want = np.where(c % 2 == 1, exact.LOOKUP_REFINE, gap[c // 2])
    cell = s.view(np.int32).astype(np.int64) >> shift
    got = table[np.clip(cell, b0, b0 + table.size - 1) - b0].astype(np.int64)
    searched = got == exact.LOOKUP_SEARCH
    got = np.where(searched, want, got)
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(table == exact.LOOKUP_SEARCH) <= 2 * fin.size + 2
    inside = (s > fin[0]) & (s < fin[-1])          # the table's span decides almost all
    assert np.mean(searched[inside]) < 0.05
