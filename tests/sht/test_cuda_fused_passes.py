"""The CUDA backend's one-kernel spin coefficient passes and alm2cl sums against the NumPy
passes of :mod:`sphgpu.sht.spin` and healpy's alm2cl formula (through Numba's simulator in CI,
at small band limits; the same kernels run on the GPU machine)."""

import numpy as np
import pytest

from sphgpu import AlmLayout
from sphgpu.backends import cuda_available
from sphgpu.sht import spin as spin_mod
from sphgpu.sht.spectra import alm2cl
from sphgpu.testing import random_alm

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")


def _cuda():
    from sphgpu.sht import _cuda

    return _cuda


def _run(fn, data, spin, layout):
    """fn(data on the device, spin, layout, the device's array module) back on the host."""
    c = _cuda()
    return np.asarray(c.to_host(fn(c.to_device(data), spin, layout, c._xp())))


def _sets(rng, k, r, layout):
    return random_alm(rng, layout, k * r).reshape(k, r, layout.size)


@pytest.mark.parametrize("spin", [1, 2])
@pytest.mark.parametrize("rows", [2, 3])
@pytest.mark.parametrize("lmax, mmax", [(7, 7), (9, 4)])
def test_one_kernel_coefficient_sets_equal_the_passes(spin, rows, lmax, mmax, rng):
    layout = AlmLayout(lmax, mmax)
    alm = _sets(rng, 2, rows, layout)
    want = spin_mod.coefficient_sets(alm, spin, layout)
    got = _run(_cuda()._coefficient_sets, alm, spin, layout)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * np.abs(want).max())
    # the kernel writes every entry: the T row's l > lmax and the spin rows' l < spin are 0
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("spin", [1, 2])
@pytest.mark.parametrize("rows", [2, 3])
@pytest.mark.parametrize("lmax, mmax", [(7, 7), (9, 4)])
def test_one_kernel_adjoint_equals_the_passes_and_is_the_transpose(spin, rows, lmax, mmax, rng):
    layout = AlmLayout(lmax, mmax)
    ext = spin_mod.extended_layout(layout, spin)
    g = _sets(rng, 2, rows, ext)
    want = spin_mod.coefficient_sets_adjoint(g, spin, layout)
    got = _run(_cuda()._coefficient_sets_adjoint, g, spin, layout)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * np.abs(want).max())
    # <A a, g> = <a, A^T g> over the real inner product of the coefficient vectors
    a = _sets(rng, 2, rows, layout)
    lhs = np.vdot(_run(_cuda()._coefficient_sets, a, spin, layout).view(float),
                  g.view(float))
    rhs = np.vdot(a.view(float), got.view(float))
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


def test_spins_above_the_fused_limit_use_the_passes(rng):
    layout = AlmLayout(8)
    alm = _sets(rng, 1, 2, layout)
    want = spin_mod.coefficient_sets(alm, 3, layout)
    got = _run(_cuda()._coefficient_sets, alm, 3, layout)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * np.abs(want).max())


@pytest.mark.parametrize("lmax, mmax, chunk", [(11, 11, 256), (13, 6, 4), (9, 9, 3)])
def test_spectra_sums_equal_healpys_formula(lmax, mmax, chunk, rng, monkeypatch):
    _c = _cuda()
    monkeypatch.setattr(_c, "CL_CHUNK", chunk)     # several chunks of orders at small lmax
    layout = AlmLayout(lmax, mmax)
    alm = _sets(rng, 2, 3, layout)
    pairs = [(0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2)]
    sums = _c.to_host(_c.spectra_sums(_c.to_device(alm), pairs, lmax, mmax))
    got = sums / (2.0 * np.arange(lmax + 1) + 1.0)
    np.testing.assert_allclose(got, alm2cl(alm, lmax=lmax, mmax=mmax), rtol=1e-13, atol=0)


def test_the_spectra_kernel_takes_as_many_fields_as_alm2cl_sends_it():
    from sphgpu.sht import _cuda_kernels as K
    from sphgpu.sht import spectra

    assert spectra._DEVICE_SUM_FIELDS == K.CL_FIELDS
