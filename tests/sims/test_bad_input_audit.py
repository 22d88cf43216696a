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
