"""sphgpu's pair counts against TreeCorr's exact mode (bin_slop=0, great-circle metric "Arc").

TreeCorr decides bins with its own arithmetic (logarithms of angles), so a pair within rounding
of an edge may legitimately land on the other side there. These catalogs are checked to have no
pair within 1e-9 (relative) of any edge; away from edges the counts must be equal integers.
(TreeCorr's default "Euclidean" metric bins the chord length against angular edges, which
differs at large separations; "Arc" is the same quantity as ours.)
"""

import numpy as np
import pytest

from sphgpu.tpacf import AngularBins, pair_counts
from sphgpu.tpacf.catalog import unit_vectors
from sphgpu.tpacf.reference import pair_d2

from .cases import awkward, clustered, sky

treecorr = pytest.importorskip("treecorr")


def _away_from_edges(bins, ra1, dec1, ra2, dec2, rel=1e-9):
    """Assert that no pair lies within ``rel`` of an edge (in angle)."""
    d2 = pair_d2(unit_vectors(ra1, dec1), unit_vectors(ra2, dec2))
    theta = 2 * np.arcsin(np.minimum(np.sqrt(d2) / 2, 1.0))
    for e in bins.edges_rad[bins.edges_rad > 0]:
        assert np.min(np.abs(theta - e)) > rel * e


def _treecorr(bins, ra1, dec1, ra2=None, dec2=None):
    nn = treecorr.NNCorrelation(min_sep=bins.edges[0], max_sep=bins.edges[-1],
                                nbins=bins.nbins, sep_units=bins.unit, bin_slop=0,
                                metric="Arc", bin_type="Log")
    c1 = treecorr.Catalog(ra=ra1, dec=dec1, ra_units="deg", dec_units="deg")
    if ra2 is None:
        nn.process(c1, num_threads=1)
    else:
        nn.process(c1, treecorr.Catalog(ra=ra2, dec=dec2, ra_units="deg", dec_units="deg"),
                   num_threads=1)
    return np.rint(nn.npairs).astype(np.int64)


@pytest.mark.parametrize("kind", ["random", "clustered", "awkward"])
def test_counts_equal_treecorr(kind, rng):
    bins = AngularBins.log(0.02, 20, 15)
    make = {"random": lambda n: sky(rng, n, dec=(-40, 40), ra=(0, 60)),
            "clustered": lambda n: clustered(rng, n),
            "awkward": lambda n: awkward(rng)}[kind]
    ra, dec = make(900)
    ra2, dec2 = make(700)
    if kind == "awkward":      # exact duplicates sit at distance 0, outside the log bins
        ra2, dec2 = sky(rng, 300, dec=(70, 90))
    _away_from_edges(bins, ra, dec, ra, dec)
    _away_from_edges(bins, ra, dec, ra2, dec2)
    auto = pair_counts(ra, dec, bins=bins, backend="cpu").counts
    np.testing.assert_array_equal(auto, _treecorr(bins, ra, dec))
    cross = pair_counts(ra, dec, ra2, dec2, bins=bins, backend="cpu", precision="float32")
    np.testing.assert_array_equal(cross.counts, _treecorr(bins, ra, dec, ra2, dec2))
    assert auto.sum() > 0 and cross.counts.sum() > 0


def test_arcsecond_bins_equal_treecorr(rng):
    bins = AngularBins.log(1, 200, 6, unit="arcsec")
    ra, dec = sky(rng, 1500, dec=(-0.05, 0.05), ra=(10, 10.1))
    _away_from_edges(bins, ra, dec, ra, dec)
    got = pair_counts(ra, dec, bins=bins, backend="cpu", precision="float32").counts
    np.testing.assert_array_equal(got, _treecorr(bins, ra, dec))
    assert got[0] > 0
