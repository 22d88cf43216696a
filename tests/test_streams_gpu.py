"""Work on a CuPy stream the caller made current: sphgpu's kernels go to that stream with
CuPy's own steps of the same call, so a non-blocking stream (which does not wait for the legacy
default stream, nor it for them) gives the same numbers as the default stream, and the device
NaN check sees the values the call was given (real GPU only)."""

import numpy as np
import pytest

import sphgpu
from sphgpu.testing import random_alm

pytestmark = pytest.mark.gpu


def _on(stream, fn):
    import cupy

    with stream:
        out = fn()
        stream.synchronize()
    return cupy.asnumpy(out)


def test_transforms_on_a_non_blocking_stream_equal_the_default_stream(rng):
    import cupy

    nside, lmax = 64, 128
    alm = cupy.asarray(random_alm(rng, sphgpu.AlmLayout(lmax)))
    maps = cupy.asarray(rng.standard_normal((4, 12 * nside**2)))
    side = cupy.cuda.Stream(non_blocking=True)
    for fn in (lambda: sphgpu.alm2map(alm, nside, lmax, backend="cuda"),
               lambda: sphgpu.map2alm(maps, lmax, iter=1, pol=False, backend="cuda"),
               lambda: sphgpu.alm2map(cupy.stack([alm] * 3), nside, lmax, backend="cuda")):
        here = cupy.asnumpy(fn())
        np.testing.assert_array_equal(_on(side, fn), here)


def test_the_nan_check_sees_what_a_non_blocking_stream_wrote(rng):
    import cupy

    nside = 256
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        maps = cupy.zeros((4, 12 * nside**2))
        maps[3, -1] = np.nan          # written on the side stream, just before the call
        with pytest.raises(ValueError, match="maps"):
            sphgpu.map2alm(maps, 2 * nside, iter=0, pol=False, backend="cuda")
