"""Bad input to the public sims functions: clear errors naming the argument, nothing silent."""

import numpy as np
import pytest

from sphgpu.sims import MonteCarlo, latitude_cut_mask

CL = 1.0 / (np.arange(6) + 1.0)


def test_cls_as_a_list_works_like_an_array():
    # was IndexError: tuple index out of range, from deep inside the spectra table
    a = MonteCarlo(list(CL), 2, seed=3).run(1, progress=False).spectra
    b = MonteCarlo(CL, 2, seed=3).run(1, progress=False).spectra
    assert np.array_equal(a, b)


def test_empty_cls_is_refused():
    # was accepted: every simulation silently a sky of zeros
    with pytest.raises(ValueError, match="cls is empty"):
        MonteCarlo(np.array([]), 2)


def test_infinite_apodization_is_refused():
    # was accepted: a mask of zeros everywhere
    with pytest.raises(ValueError, match="apodization_deg must be finite"):
        latitude_cut_mask(2, 10, apodization_deg=np.inf)


def test_cross_spectrum_larger_than_the_autos_is_refused():
    # TE**2 > TT*EE was accepted: the draw clipped the covariance, the skies lacked that TE
    with pytest.raises(ValueError, match="cls: the spectra at l=0 are not a valid covariance"):
        MonteCarlo([CL, CL, CL, 5 * CL], 2, pol=True)
    MonteCarlo([CL, CL, 0 * CL, CL], 2, pol=True)    # TE**2 == TT*EE, BB = 0: allowed
