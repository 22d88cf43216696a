"""The roofline's work models against direct counts, its arithmetic, and the FP64 ceiling's
kernel (under the simulator in CI)."""

import math

import numpy as np
import pytest

from sphgpu import AlmLayout, RingGeometry
from sphgpu.bench import roofline as R


def test_legendre_steps_count_every_live_l_m_pair():
    lmax, mmax, npairs = 9, 6, 5
    first = np.array([0, 0, 1, 2, 2, 4, 5])
    want = sum(1 for m in range(mmax + 1) for _ in range(m, lmax + 1)
               for p in range(npairs) if p >= first[m])
    assert R.legendre_steps(lmax, mmax, npairs, first) == want
    assert R.legendre_steps(lmax, mmax, npairs) == AlmLayout(lmax, mmax).size * npairs
    with pytest.raises(ValueError, match="first must have"):
        R.legendre_steps(lmax, mmax, npairs, first[:-1])
    with pytest.raises(ValueError, match="mmax <= lmax"):
        R.legendre_steps(3, 4, npairs)
    with pytest.raises(ValueError, match="npairs"):
        R.legendre_steps(3, 3, 0)


def test_legendre_work_shares_the_recurrence_between_maps():
    g = RingGeometry.healpix(4)
    lmax = 8
    npairs = g.ring_pairs()[0].size
    nalm = AlmLayout(lmax).size
    for k in (1, 3):
        w = R.legendre(lmax, lmax, g.nrings, npairs, nmaps=k)
        assert w.flops == nalm * npairs * (3 + 4 * k)
        assert w.bytes == k * 16 * (nalm + g.nrings * (lmax + 1)) + 16 * nalm


def test_ring_fft_work_sums_the_rings():
    g = RingGeometry.healpix(2)
    w = R.ring_fft(g.nphi, 4, nmaps=2)
    assert w.flops == pytest.approx(2 * sum(2.5 * n * math.log2(n) for n in g.nphi))
    assert w.bytes == 2 * (16 * g.nrings * 5 + 8 * g.npix)


def test_resample_work_per_pair_of_orders():
    w = R.resample(n=10, N=40, nrings=15, mmax=5, width=16)
    per_pair = 5 * 20 * math.log2(20) + 5 * 40 * math.log2(40) + 6 * 40 + 4 * 16 * 15
    assert w.flops == pytest.approx(3 * per_pair)
    assert w.bytes == 16 * 6 * (10 + 15)
    assert (w + w).flops == 2 * w.flops


def test_a_point_on_the_roofline():
    c = R.Ceilings(flops_per_s=1e12, bytes_per_s=1e11)
    p = R.point(R.Work(flops=2e9, bytes=1e8), 4e-3, c)
    assert p["bound_s"] == pytest.approx(2e-3) and p["limit"] == "flops"
    assert p["time_over_bound"] == pytest.approx(2.0)
    assert p["flops_fraction"] == pytest.approx(0.5) and p["bytes_fraction"] == pytest.approx(0.25)
    assert p["intensity"] == pytest.approx(20.0)
    q = R.point(R.Work(flops=1e6, bytes=1e9), 0.02, c)
    assert q["limit"] == "bytes" and q["time_over_bound"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="seconds"):
        R.point(R.Work(1.0, 1.0), 0.0, c)


def test_the_fma_kernel_keeps_every_chain():
    from numba import cuda

    kernel = R._fma_kernel(3)
    out = cuda.to_device(np.zeros(4))
    a, b, iters = 0.5, 1.0, 4
    kernel[1, 4](out, a, b, iters)
    want = 0.0
    for i in range(3):
        x = a + 0.001 * i
        for _ in range(iters):
            x = x * a + b
        want += x
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-15)
