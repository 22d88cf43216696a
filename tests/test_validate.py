"""The host reductions behind every map and a_lm check: split over threads for large arrays,
they must find what NumPy's single reductions find, NaN and infinities included."""
import math

import numpy as np
import pytest

from sphgpu import _validate as V


@pytest.fixture
def threaded(monkeypatch):
    # the threaded path at test sizes: 3 threads, spans of several blocks and a ragged end
    monkeypatch.setattr(V, "PARALLEL_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(V, "_BLOCK", 64)
    monkeypatch.setattr(V._host_threads, "count", lambda: 3)


@pytest.mark.parametrize("n", [1000, 1001, 4099])
def test_min_max_matches_numpy(threaded, rng, n):
    a = rng.standard_normal(n)
    assert V.min_max(a) == (a.min(), a.max())
    b = a.reshape(1, -1)[:, ::2]                  # not contiguous: NumPy's own reductions
    assert V.min_max(b) == (b.min(), b.max())


@pytest.mark.parametrize("pos", [0, 63, 64, 1367, 4098])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_min_max_sees_nan_and_infinities_anywhere(threaded, rng, pos, bad):
    a = rng.standard_normal(4099)
    a[pos] = bad
    lo, hi = V.min_max(a)
    if math.isnan(bad):
        assert math.isnan(lo) and math.isnan(hi)
    else:
        assert (lo == -np.inf) if bad < 0 else (hi == np.inf)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, np.float64, np.float32])
def test_check_finite_on_the_threaded_path(threaded, rng, dtype):
    a = rng.standard_normal(3000).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(3000).astype(dtype)
    V.check_finite("alm", a)
    a[2999] = complex(1.0, np.nan) if np.dtype(dtype).kind == "c" else np.nan
    with pytest.raises(ValueError, match="alm contains NaN"):
        V.check_finite("alm", a)


def test_check_finite_passes_an_empty_array():
    # nothing to check (the caller names what an empty input means, as the simulations do)
    V.check_finite("cls", np.zeros((3, 0)))


def test_as_maps_zeroes_unseen_on_the_threaded_path(threaded, rng):
    m = rng.standard_normal((2, 3000))
    m[1, 2500] = V.UNSEEN
    arr, bad = V.as_maps("maps", m)
    assert arr[1, 2500] == 0.0 and bad.sum() == 1 and m[1, 2500] == V.UNSEEN
    m[0, 7] = np.nan
    with pytest.raises(ValueError, match="maps contains NaN or infinite values at 1 pixels"):
        V.as_maps("maps", m)


def test_a_forked_child_gets_a_pool_of_its_own(threaded, rng):
    # a pool's threads do not survive fork: a child reusing the parent's pool would wait forever
    import multiprocessing as mp
    from sphgpu import _host_threads
    a = rng.standard_normal(4099)
    assert V.min_max(a) == (a.min(), a.max())       # the parent's pool has started its threads
    parent = _host_threads.pool()
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as p:
        got = p.apply_async(V.min_max, (a,)).get(timeout=60)
    assert got == (a.min(), a.max()) and _host_threads.pool() is parent
