"""AngularBins: spacing, units, chord**2 edges, equality and pickling."""

import math
import pickle

import numpy as np
import pytest

from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins
from sphgpu.tpacf.bins import chord2


def test_log_bins_in_each_unit_are_the_same_bins():
    deg = AngularBins.log(0.01, 10, 20, unit="deg")
    arcmin = AngularBins.log(0.6, 600, 20, unit="arcmin")
    rad = AngularBins.log(math.radians(0.01), math.radians(10), 20, unit="rad")
    assert deg.nbins == 20 and deg.edges.size == 21
    assert deg.edges[0] == 0.01 and deg.edges[-1] == 10
    np.testing.assert_allclose(np.diff(np.log(deg.edges)), math.log(1000) / 20,
                               rtol=TOL["log_bin_spacing_rtol"])
    np.testing.assert_allclose(arcmin.edges_rad, deg.edges_rad, rtol=TOL["bin_units_rtol"])
    np.testing.assert_allclose(rad.edges_rad, deg.edges_rad, rtol=TOL["bin_units_rtol"])
    np.testing.assert_allclose(deg.centers, np.sqrt(deg.edges[1:] * deg.edges[:-1]))
    np.testing.assert_allclose(deg.to("arcmin"), 60 * deg.edges, rtol=TOL["bin_units_rtol"])


def test_linear_and_explicit_edges():
    lin = AngularBins.linear(0, 3, 6, unit="deg")
    np.testing.assert_array_equal(lin.edges, np.linspace(0, 3, 7))
    np.testing.assert_allclose(lin.centers, np.arange(0.25, 3, 0.5))
    e = AngularBins.from_edges([1, 2, 5, 30], unit="arcsec")
    assert e.nbins == 3 and e.unit == "arcsec"
    np.testing.assert_allclose(e.edges_rad, np.deg2rad(np.array([1, 2, 5, 30]) / 3600))


def test_chord2_edges_are_the_squared_chords():
    b = AngularBins.log(1, 100, 5, unit="arcsec")
    np.testing.assert_array_equal(b.chord2_edges, (2 * np.sin(b.edges_rad / 2)) ** 2)
    assert np.all(np.diff(b.chord2_edges) > 0)
    # the chord keeps relative precision where 1 - cos does not
    t = np.deg2rad(1 / 3600)
    assert abs(chord2(t) / t**2 - 1) < TOL["chord_small_angle_rtol"]


def test_up_to_180_degrees_counts_antipodes():
    b = AngularBins.linear(0, 180, 4)
    assert b.chord2_edges[-1] == np.inf
    assert b.chord2_edges[0] == 0.0


def test_equality_pickling_and_repr():
    a = AngularBins.log(0.01, 10, 20)
    b = pickle.loads(pickle.dumps(a))
    assert a == b and a.same_as(b) and hash(a) == hash(b)
    assert a != AngularBins.log(0.01, 10, 21)
    assert AngularBins.linear(0, 60, 3, unit="arcmin") == AngularBins.linear(0, 1, 3)
    assert "20" in repr(a)
    with pytest.raises(ValueError):
        a.edges[0] = 5.0                          # read-only


@pytest.mark.parametrize("make, exc, match", [
    (lambda: AngularBins.from_edges([1, 3, 2]), ValueError, "strictly increasing"),
    (lambda: AngularBins.from_edges([1, 1, 2]), ValueError, "strictly increasing"),
    (lambda: AngularBins.from_edges([-1, 1, 2]), ValueError, ">= 0"),
    (lambda: AngularBins.from_edges([1, 190]), ValueError, "180"),
    (lambda: AngularBins.from_edges([1, 4], unit="rad"), ValueError, "180"),
    (lambda: AngularBins.from_edges([1, np.nan]), ValueError, "NaN"),
    (lambda: AngularBins.from_edges([1]), ValueError, "at least 2"),
    (lambda: AngularBins.from_edges([[1, 2], [3, 4]]), ValueError, "1-D"),
    (lambda: AngularBins.from_edges(["a", "b"]), TypeError, "real numbers"),
    (lambda: AngularBins.from_edges("1,2"), TypeError, "edges"),
    (lambda: AngularBins.from_edges([1, 2], unit="parsec"), ValueError, "unit"),
    (lambda: AngularBins.log(0, 10, 5), ValueError, "theta_min must be > 0"),
    (lambda: AngularBins.log(10, 1, 5), ValueError, "theta_max must be > theta_min"),
    (lambda: AngularBins.log(1, 200, 5), ValueError, "180"),
    (lambda: AngularBins.linear(-1, 10, 5), ValueError, "theta_min must be >= 0"),
    (lambda: AngularBins.linear(0, 10, 0), ValueError, "nbins must be >= 1"),
    (lambda: AngularBins.linear(0, 10, 2.0), TypeError, "nbins must be an integer"),
    (lambda: AngularBins.linear(0, float("inf"), 2), ValueError, "finite"),
    (lambda: AngularBins.linear("0", 1, 2), TypeError, "theta_min"),
])
def test_bad_bins_raise(make, exc, match):
    with pytest.raises(exc, match=match):
        make()
