"""Wigner-3j symbols of the shared recursion against ducc0's and against Racah's exact sum."""

import numpy as np
import pytest

from sphgpu.master import reference, wigner3j

from .cases import TOL

ducc0 = pytest.importorskip("ducc0")


@pytest.mark.parametrize("l, lp", [(0, 0), (2, 2), (5, 3), (1, 7), (10, 40), (100, 101),
                                   (500, 500), (2000, 1999), (2000, 3), (1500, 1200)])
@pytest.mark.parametrize("spin", [0, 2])
def test_recursion_matches_ducc0(l, lp, spin):
    lmin, got = wigner3j(l, lp, spin)
    assert lmin == abs(l - lp) and got.shape == (2 * min(l, lp) + 1,)
    want = np.zeros_like(got)
    if min(l, lp) >= spin:
        l0, d = ducc0.misc.wigner3j_int(l, lp, spin, -spin)
        want[l0 - lmin:l0 - lmin + d.size] = d
    scale = max(np.abs(want).max(), 1e-300)
    assert np.abs(got - want).max() / scale <= TOL["wigner_vs_ducc0"]


@pytest.mark.parametrize("l, lp", [(0, 3), (2, 2), (4, 7), (9, 9), (13, 6)])
def test_recursion_matches_racah(l, lp):
    for spin in (0, 2):
        lmin, got = wigner3j(l, lp, spin)
        want = [reference.wigner3j(l, lp, L, spin, -spin, 0) for L in range(lmin, l + lp + 1)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


def test_racah_reference_knows_a_closed_form():
    # (l l 0; m -m 0) = (-1)^(l-m) / sqrt(2l+1): the reference itself can fail
    for l, m in [(3, 0), (4, 2), (7, -2)]:
        assert reference.wigner3j(l, l, 0, m, -m, 0) == pytest.approx(
            (-1) ** (l - m) / np.sqrt(2 * l + 1), rel=1e-15)
    assert reference.wigner3j(1, 1, 3, 0, 0, 0) == 0.0          # triangle violated
    assert reference.wigner3j(1, 1, 1, 0, 0, 0) == 0.0          # odd sum, all m zero
