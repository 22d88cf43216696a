"""The real-space ring algorithm (numba CPU) against the brute-force sum over every pixel pair,
and against the harmonic route when the support is the whole sphere."""

import math

import numpy as np
import pytest

from sphgpu import RingGeometry
from sphgpu.convolve import CompactKernel, RadialKernel, convolve, split_kernel
from sphgpu.convolve import _cpu as _realspace_cpu
from sphgpu.convolve import _series
from sphgpu.convolve.harmonic import harmonic_convolve
from sphgpu.convolve.realspace import pair_count, ring_plan
from sphgpu.convolve.reference import brute_force

from sphgpu.testing import TOL, rel_err


def _exact(kernel):
    return lambda u: _series.series(kernel.bl, u)


@pytest.mark.parametrize("nside", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("theta_cut", [0.3, 1.0, 2.5, math.pi])
def test_ring_algorithm_matches_brute_force(nside, theta_cut, rng):
    g = RingGeometry.healpix(nside)
    k = RadialKernel.gaussian(40.0 * 60 / nside, 3 * nside)
    maps = rng.standard_normal((2, g.npix))
    ck = k.tabulate(theta_cut)
    got = _realspace_cpu.convolve(maps, ring_plan(g, ck.theta_cut), ck)
    # the same table, every pair: exact up to rounding
    assert rel_err(got, brute_force(maps, g, ck)) <= TOL["realspace_vs_brute_force"]
    # the exact Legendre sum of the kernel, truncated at theta_cut: the 1e-10
    assert rel_err(got, brute_force(maps, g, _exact(k), theta_cut=theta_cut)) <= TOL["realspace"]


def test_split_kernel_real_space_part_matches_brute_force(rng):
    nside, lmax = 8, 16
    s = split_kernel(RadialKernel.cmb(600.0, lmax), 6, 0.6)
    g = RingGeometry.healpix(nside)
    m = rng.standard_normal(g.npix)
    got = convolve(m, s.realspace, method="realspace", backend="cpu")
    assert rel_err(got, brute_force(m, g, s.realspace)) <= TOL["realspace_vs_brute_force"]
    ref = convolve(m, s.realspace, method="realspace", backend="reference")
    assert rel_err(got, ref) <= TOL["realspace_vs_brute_force"]


def test_whole_sphere_support_equals_the_harmonic_route(rng):
    nside, lmax = 8, 20
    g = RingGeometry.healpix(nside)
    k = RadialKernel.gaussian(300.0, lmax)
    m = rng.standard_normal(g.npix)
    got = convolve(m, k, method="realspace", theta_cut=math.pi, backend="cpu")
    assert rel_err(got, harmonic_convolve(m, k.bl, g, backend="cpu")) <= TOL["realspace"]


def test_other_ring_grids(rng):
    g = RingGeometry.gauss_legendre(9)
    k = RadialKernel.gaussian(1500.0, 8)
    ck = k.tabulate(1.2)
    m = rng.standard_normal(g.npix)
    got = _realspace_cpu.convolve(m[None], ring_plan(g, ck.theta_cut), ck)[0]
    assert rel_err(got, brute_force(m, g, ck)) <= TOL["realspace_vs_brute_force"]


def test_point_source_gives_the_kernel_profile():
    # a single pixel of value 1/w at the north ring: the output is K(theta) around it
    nside = 16
    g = RingGeometry.healpix(nside)
    k = RadialKernel.gaussian(200.0, 48)
    ck = k.tabulate(0.4)
    m = np.zeros(g.npix)
    m[0] = 1.0 / g.weight[0]
    out = convolve(m, ck, method="realspace", backend="cpu")
    theta, phi = g.pixel_angles()
    cosd = (np.cos(theta[0]) * np.cos(theta) + np.sin(theta[0]) * np.sin(theta)
            * np.cos(phi - phi[0]))
    d = np.arccos(np.clip(cosd, -1, 1))
    inside = d < 0.39
    np.testing.assert_allclose(out[inside], k.profile(d[inside]),
                               rtol=TOL["point_source_profile_rtol"],
                               atol=TOL["point_source_profile_atol"] * out.max())
    assert np.all(out[d > 0.41] == 0.0)


def test_pair_count_is_close_to_the_true_count():
    nside, theta = 16, 0.3
    g = RingGeometry.healpix(nside)
    pl = ring_plan(g, theta)
    ck = CompactKernel(0.3 / 4, np.tile([1.0, 0, 0, 0], (4, 1)))   # K = 1 inside
    ones = np.ones((1, g.npix))
    inside = _realspace_cpu.convolve(ones, pl, ck)[0] / g.weight[0]
    assert pair_count(nside, ck.theta_cut) == pytest.approx(inside.sum(), rel=0.02)


@pytest.mark.parametrize("nbands", [1, 3, 5])
def test_latitude_bands_give_the_whole_sphere_numbers(nbands, rng):
    # each band computes its own rings from its halo's pixels only: the same numbers as the
    # whole-sphere plan there, bit for bit (same rings, same order of the sums)
    from sphgpu.distributed.partition import latitude_bands

    g = RingGeometry.healpix(8)
    ck = RadialKernel.gaussian(300.0, 24).tabulate(0.45)
    pl = ring_plan(g, ck.theta_cut)
    maps = rng.standard_normal((2, g.npix))
    whole = _realspace_cpu.convolve(maps, pl, ck)
    got = np.full_like(whole, np.nan)
    for b in latitude_bands(pl.theta, nbands, ck.theta_cut, cost=pl.nphi):
        need = pl.halo(b.own)
        halo = slice(min(b.halo.start, need.start), max(b.halo.stop, need.stop))
        band = pl.band(b.own, halo)
        a = band.geometry.pixel_offset
        out = _realspace_cpu.convolve(maps[:, a:a + band.geometry.npix], band, ck)
        last = b.own.stop - 1
        p0, p1 = g.ringstart[b.own.start] - a, g.ringstart[last] + g.nphi[last] - a
        got[:, a + p0:a + p1] = out[:, p0:p1]
        ref = brute_force(maps[:, a:a + band.geometry.npix], band.geometry, ck)
        assert rel_err(out[:, p0:p1], ref[:, p0:p1]) <= TOL["realspace_vs_brute_force"]
    np.testing.assert_array_equal(got, whole)


def test_a_band_whose_halo_is_too_small_is_refused():
    g = RingGeometry.healpix(4)
    pl = ring_plan(g, 0.5)
    need = pl.halo(slice(5, 8))
    assert need.start < 5 and need.stop > 8
    with pytest.raises(ValueError, match="halo"):
        pl.band(slice(5, 8), slice(need.start + 1, need.stop))
    with pytest.raises(ValueError, match="contiguous"):
        pl.band(slice(5, 5), need)
