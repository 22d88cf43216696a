import numpy as np
import pytest

from sphgpu import AlmLayout


@pytest.mark.parametrize("lmax, mmax", [(0, 0), (1, 1), (7, 3), (31, 31), (33, 10)])
def test_index_matches_healpy(lmax, mmax):
    hp = pytest.importorskip("healpy")
    layout = AlmLayout(lmax, mmax)
    assert layout.size == hp.Alm.getsize(lmax, mmax)
    l, m = layout.lm()
    hl, hm = hp.Alm.getlm(lmax, np.arange(layout.size)) if mmax == lmax else (None, None)
    np.testing.assert_array_equal(layout.index(l, m), np.arange(layout.size))
    np.testing.assert_array_equal(layout.index(l, m), hp.Alm.getidx(lmax, l, m))
    if hl is not None:
        np.testing.assert_array_equal(l, hl)
        np.testing.assert_array_equal(m, hm)
    np.testing.assert_array_equal(layout.mstart()[m] + l, np.arange(layout.size))


def test_from_size_infers_lmax_like_healpy():
    assert AlmLayout.from_size(AlmLayout(12).size) == AlmLayout(12)
    assert AlmLayout.from_size(AlmLayout(12, 5).size, mmax=5) == AlmLayout(12, 5)
    assert AlmLayout.from_size(AlmLayout(12, 5).size, 12, 5) == AlmLayout(12, 5)
    with pytest.raises(ValueError, match="alm has 7 coefficients"):
        AlmLayout.from_size(7)
    with pytest.raises(ValueError, match="needs 91"):
        AlmLayout.from_size(90, 12)


def test_bad_layouts():
    with pytest.raises(ValueError, match="mmax"):
        AlmLayout(4, 5)
    with pytest.raises(ValueError, match="lmax"):
        AlmLayout(-1)
    with pytest.raises(TypeError, match="lmax"):
        AlmLayout(3.5)
    with pytest.raises(TypeError, match="mmax"):
        AlmLayout(3, True)
