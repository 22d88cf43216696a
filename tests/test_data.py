"""Tests for the shipped Planck 2018 CMB power spectrum (sphgpu.data)."""

import numpy as np
import pytest

from sphgpu.data import planck2018_cl

TABLE_LMAX = 8192
NAMES = ("TT", "EE", "BB", "TE")


def d_ell(cl):
    ell = np.arange(cl.shape[-1], dtype=np.float64)
    return ell * (ell + 1) * cl / (2 * np.pi)


@pytest.mark.parametrize("name", NAMES)
def test_full_table_shape_and_dtype(name):
    cl = planck2018_cl(spectra=name)
    assert cl.shape == (TABLE_LMAX + 1,)
    assert cl.dtype == np.float64
    assert np.all(np.isfinite(cl))


def test_default_is_tt():
    np.testing.assert_array_equal(planck2018_cl(), planck2018_cl(spectra="TT"))


@pytest.mark.parametrize("lmax", [0, 1, 2, 100, 3000, TABLE_LMAX, np.int64(512)])
def test_lmax_slicing(lmax):
    full = planck2018_cl()
    cl = planck2018_cl(lmax)
    assert cl.shape == (int(lmax) + 1,)
    assert cl.dtype == np.float64
    np.testing.assert_array_equal(cl, full[: int(lmax) + 1])


@pytest.mark.parametrize("name", NAMES)
def test_monopole_and_dipole_are_zero(name):
    cl = planck2018_cl(spectra=name)
    assert cl[0] == 0.0
    assert cl[1] == 0.0


@pytest.mark.parametrize("name", ["TT", "EE", "BB"])
def test_auto_spectra_positive_above_dipole(name):
    assert np.all(planck2018_cl(spectra=name)[2:] > 0)


def test_first_acoustic_peak():
    dl = d_ell(planck2018_cl(600))
    ell_peak = int(np.argmax(dl[100:400])) + 100
    assert 200 <= ell_peak <= 240
    assert 5000.0 <= dl[ell_peak] <= 6500.0


def test_tt_units_are_raw_cl_in_muk2():
    # Raw C_ell in muK^2: C_2^TT is of order 1e3 muK^2, and D_ell at the
    # first peak is of order 5e3 muK^2 (checked above); D_ell-stored or
    # K^2-stored data would fail this by many orders of magnitude.
    cl = planck2018_cl(2)
    assert 100.0 < cl[2] < 1e4


def test_multiple_spectra_shape_and_order():
    cl = planck2018_cl(1000, spectra=("TE", "TT", "EE"))
    assert cl.shape == (3, 1001)
    assert cl.dtype == np.float64
    np.testing.assert_array_equal(cl[0], planck2018_cl(1000, spectra="TE"))
    np.testing.assert_array_equal(cl[1], planck2018_cl(1000, spectra="TT"))
    np.testing.assert_array_equal(cl[2], planck2018_cl(1000, spectra="EE"))


def test_all_spectra_full_table():
    cl = planck2018_cl(spectra=list(NAMES))
    assert cl.shape == (4, TABLE_LMAX + 1)


def test_single_name_in_sequence_keeps_2d_shape():
    assert planck2018_cl(10, spectra=["BB"]).shape == (1, 11)


def test_returned_array_is_a_copy():
    cl = planck2018_cl(10)
    cl[:] = -1.0
    assert planck2018_cl(10)[2] > 0


@pytest.mark.parametrize("lmax", [-1, -100])
def test_negative_lmax(lmax):
    with pytest.raises(ValueError, match="lmax"):
        planck2018_cl(lmax)


def test_lmax_above_table():
    with pytest.raises(ValueError, match="lmax"):
        planck2018_cl(TABLE_LMAX + 1)


@pytest.mark.parametrize("lmax", [5.5, 100.0, np.float64(3.0)])
def test_non_integer_lmax_value(lmax):
    with pytest.raises(ValueError, match="lmax"):
        planck2018_cl(lmax)


@pytest.mark.parametrize("lmax", [True, False, np.bool_(True), "100", [100], 1 + 2j])
def test_non_integer_lmax_type(lmax):
    with pytest.raises(TypeError, match="lmax"):
        planck2018_cl(lmax)


@pytest.mark.parametrize("spectra", ["XX", "T", "", ("TT", "PP"), ["EE", 3]])
def test_unknown_spectrum_name(spectra):
    with pytest.raises(ValueError, match="spectra"):
        planck2018_cl(spectra=spectra)


def test_empty_spectra_sequence():
    with pytest.raises(ValueError, match="spectra"):
        planck2018_cl(spectra=[])


def test_spectra_wrong_type():
    with pytest.raises(TypeError, match="spectra"):
        planck2018_cl(spectra=3)


def test_spectra_is_keyword_only():
    with pytest.raises(TypeError):
        planck2018_cl(100, "TT")
