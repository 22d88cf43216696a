"""The device paths of sphgpu.io and sphgpu.pixelfunc on a real GPU (``pytest -m gpu``): the
same values as the host paths, which tests/test_io.py and tests/test_pixelfunc.py check against
healpy bit for bit."""

import numpy as np
import pytest

import sphgpu
from sphgpu.testing import TOL

pytestmark = pytest.mark.gpu


@pytest.fixture
def cupy():
    return pytest.importorskip("cupy")


@pytest.mark.parametrize("nest", [False, True])
def test_read_map_to_the_device_equals_the_host_read(cupy, tmp_path, rng, nest):
    nside = 256
    m = rng.standard_normal((3, 12 * nside * nside))
    path = tmp_path / "iqu.fits"
    sphgpu.write_map(path, m, nest=nest)
    host = sphgpu.read_map(path, field=(0, 1, 2))
    dev = sphgpu.read_map(path, field=(0, 1, 2), device=True)
    assert isinstance(dev, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(dev), host)
    # write_map(nest=True) says the maps given are NESTED; read_map returns RING
    np.testing.assert_array_equal(host, sphgpu.reorder(m, n2r=True) if nest else m)


@pytest.mark.parametrize("nside", [1, 16, 512])
def test_reorder_on_the_device_equals_the_host(cupy, rng, nside):
    m = rng.standard_normal((2, 12 * nside * nside))
    for kw in ({"r2n": True}, {"n2r": True}):
        want = sphgpu.reorder(m, **kw)
        got = sphgpu.reorder(cupy.asarray(m), **kw)
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_array_equal(cupy.asnumpy(got), want)


@pytest.mark.parametrize("nside_in, nside_out", [(64, 16), (16, 64), (128, 128)])
@pytest.mark.parametrize("pess", [False, True])
def test_ud_grade_on_the_device_equals_the_host(cupy, rng, nside_in, nside_out, pess):
    m = rng.standard_normal(12 * nside_in * nside_in)
    m[rng.random(m.size) < 0.05] = sphgpu.UNSEEN
    atol = TOL["ud_grade_device_atol"] * np.abs(m[m != sphgpu.UNSEEN]).max()
    for order in ("RING", "NESTED"):
        want = sphgpu.ud_grade(m, nside_out, pess=pess, order_in=order)
        got = cupy.asnumpy(sphgpu.ud_grade(cupy.asarray(m), nside_out, pess=pess,
                                           order_in=order))
        np.testing.assert_array_equal(got == sphgpu.UNSEEN, want == sphgpu.UNSEEN)
        np.testing.assert_allclose(got, want, rtol=0, atol=atol)
