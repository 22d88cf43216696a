"""apodize_mask against NaMaster's written definitions evaluated with brute-force distances."""

import math

import numpy as np
import pytest

from sphgpu.master import apodize_mask
from sphgpu.master.apodize import distance_to_masked

from .cases import cut_mask

ducc0 = pytest.importorskip("ducc0")


def _brute_distance(mask):
    nside = int(round(math.sqrt(mask.size / 12)))
    v = ducc0.healpix.Healpix_Base(nside, "RING").pix2vec(np.arange(mask.size))
    hidden = v[mask <= 0]
    # from the chord, not arccos of a dot product (which is off by 1e-8 near 0)
    chord = np.sqrt(((v[:, None, :] - hidden[None, :, :]) ** 2).sum(-1)).min(axis=1)
    return 2 * np.arcsin(np.minimum(chord / 2, 1))


@pytest.mark.parametrize("nside, band", [(8, 0.3), (5, 0.5)])
def test_distances_match_brute_force(nside, band):
    mask = cut_mask(nside, band)
    got = distance_to_masked(mask, math.pi)
    np.testing.assert_allclose(got, _brute_distance(mask), atol=1e-12)
    near = distance_to_masked(mask, 0.2)
    far = _brute_distance(mask) > 0.2 + 1e-9
    assert np.all(np.isinf(near[far])) and np.all(np.isfinite(near[~far]))


@pytest.mark.parametrize("apotype", ["C1", "C2"])
def test_c1_c2_follow_the_definition(apotype):
    nside, aposize = 8, 20.0
    mask = cut_mask(nside, 0.3)
    got = apodize_mask(mask, aposize, apotype=apotype)
    ts = math.radians(aposize)
    x = np.sqrt((1 - np.cos(_brute_distance(mask))) / (1 - math.cos(ts)))
    if apotype == "C1":
        f = np.where(x < 1, x - np.sin(2 * math.pi * x) / (2 * math.pi), 1.0)
    else:
        f = np.where(x < 1, 0.5 * (1 - np.cos(math.pi * x)), 1.0)
    np.testing.assert_allclose(got, mask * f, atol=1e-12)
    assert np.all(got[mask == 0] == 0) and got.max() == 1.0
    assert 0 < np.count_nonzero((got > 0) & (got < 1))      # a taper exists


def test_smooth_keeps_masked_pixels_zero_and_far_pixels_one():
    nside, aposize = 16, 4.0
    mask = cut_mask(nside, 0.5)
    got = apodize_mask(mask, aposize, apotype="Smooth")
    assert np.all(got[mask == 0] == 0)
    d = _brute_distance(mask)
    ts = math.radians(aposize)
    # beyond the 2.5 theta_* margin plus 4 sigma the Gaussian leaves the mask at 1, to the
    # ringing of a step smoothed at lmax 3 nside - 1 = 47 (7.3e-3 measured at the poles)
    assert np.all(np.abs(got[d > 6.5 * ts] - 1) < 1e-2)
    # within the margin it is below one half: the grown mask is 0 there before smoothing
    assert np.all(got[(d > 0) & (d < 1.5 * ts)] < 0.5)


def test_weighted_masks_are_tapered_and_nothing_masked_is_unchanged(rng):
    nside = 4
    w = rng.uniform(0.5, 1, 12 * nside ** 2)
    np.testing.assert_array_equal(apodize_mask(w, 5.0), w)
    w[:10] = 0
    assert np.all(apodize_mask(w, 30.0, apotype="C2") <= w)


def test_bad_input_is_named():
    m = cut_mask(4, 0.3)
    with pytest.raises(ValueError, match="aposize_deg must be a positive"):
        apodize_mask(m, 0.0)
    with pytest.raises(ValueError, match="aposize_deg must be a positive"):
        apodize_mask(m, float("nan"))
    with pytest.raises(ValueError, match="apotype must be one of"):
        apodize_mask(m, 5.0, apotype="c1")
    with pytest.raises(ValueError, match="mask must be a HEALPix map"):
        apodize_mask(np.ones(100), 5.0)
    with pytest.raises(ValueError, match="mask must be non-negative"):
        apodize_mask(-m, 5.0)


def test_smooth_apodization_of_a_real_mask_is_never_negative():
    """The smoothing rings below 0 beside WMAP's point-source holes; the mask stays >= 0 and
    is accepted by coupling_matrix."""
    from sphgpu.io import wmap_mask
    from sphgpu.master import coupling_matrix
    from sphgpu.pixelfunc import ud_grade

    mask = (ud_grade(wmap_mask(), 16) >= 0.5).astype(np.float64)
    got = apodize_mask(mask, 5.0, apotype="Smooth", backend="cpu")
    assert got.min() >= 0.0 and got.max() > 0.5
    coupling_matrix(got, 20, spins=(0, 0))
