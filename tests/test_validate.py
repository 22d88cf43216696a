"""The host reductions behind every map and a_lm check: split over threads for large arrays,
they must find what NumPy's single reductions find, NaN and infinities included."""
import math

import numpy as np
import pytest

import sphgpu
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


class _DeviceLike:
    """A device array to sphgpu (it has __cuda_array_interface__); holds nothing."""

    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (0, False),
                                "version": 3}


def test_check_host_array_refuses_device_arrays_naming_the_argument():
    # what the CPU and reference backends of sht, sort and convolve say (one message)
    with pytest.raises(TypeError, match=r"^keys is a GPU array; the CPU backends take NumPy "
                                        r"arrays \(use backend='cuda', or copy it to the host\)$"):
        V.check_host_array("keys", _DeviceLike())
    with pytest.raises(TypeError, match=r"^maps\[2\] is a GPU array; the workers copy it$"):
        V.check_host_array("maps[2]", _DeviceLike(), why="the workers copy it")
    # a backend that takes device arrays, and host inputs of any kind (checked later), pass
    assert V.check_host_array("keys", _DeviceLike(), device_ok=True) is None
    for host in (np.zeros(3), [1.0, 2.0], np.ma.zeros(3), None):
        assert V.check_host_array("keys", host) is None


@pytest.mark.gpu
def test_device_checks_find_every_bad_value_in_one_pass(rng):
    """The GPU's one-pass count (check_finite, as_maps) against NumPy: NaN, +-inf and UNSEEN
    anywhere, in float and complex arrays."""
    import cupy

    a = rng.standard_normal(1_000_003)
    assert V.count_outside(cupy.asarray(a), -np.inf) == 0
    bad = a.copy()
    bad[[0, 17, 500_000, -1]] = [np.nan, np.inf, -np.inf, V.UNSEEN]
    lower = V.UNSEEN + V._UNSEEN_TOL
    want = int(np.count_nonzero(~(np.isfinite(bad) & (bad > lower))))
    assert want == 4 and V.count_outside(cupy.asarray(bad), lower) == want
    assert V.count_outside(cupy.asarray(bad), -np.inf) == 3      # UNSEEN is finite
    for pos in (0, 999, 1_000_002):
        c = (a + 1j * a)[:1_000_002].copy()
        c[pos % c.size] = complex(1.0, np.nan)
        with pytest.raises(ValueError, match="alm contains NaN"):
            V.check_finite("alm", cupy.asarray(c))
    V.check_finite("alm", cupy.asarray(a + 1j * a))
    clean, none = V.as_maps("maps", cupy.asarray(a))
    assert none is None and isinstance(clean, cupy.ndarray)
    unseen = a.copy()
    unseen[5] = V.UNSEEN
    zeroed, mask = V.as_maps("maps", cupy.asarray(unseen))
    assert zeroed[5] == 0 and int(mask.sum()) == 1 and float(zeroed[6]) == a[6]
    with pytest.raises(ValueError, match="maps contains NaN or infinite values at 3 pixels"):
        V.as_maps("maps", cupy.asarray(bad))


@pytest.mark.gpu
def test_alm2map_finishes_its_deferred_nan_check(rng):
    """alm2map starts the NaN check of device a_lm, queues the transform, then finishes the
    check: NaN anywhere still raises, naming alm, and clean a_lm pass."""
    import cupy

    import sphgpu

    pending = []
    alm = cupy.asarray(rng.standard_normal(45) + 1j * rng.standard_normal(45))
    assert V.as_complex_array("alm", alm, pending=pending) is not None and len(pending) == 1
    pending[0]()
    for pos in (0, 20, 44):
        bad = alm.copy()
        bad[pos] = complex(np.inf, 0.0)
        with pytest.raises(ValueError, match="alms contains NaN or infinite values"):
            sphgpu.alm2map(bad, 4, 8, pol=False, backend="cuda")
    maps = sphgpu.alm2map(alm, 4, 8, pol=False, backend="cuda")
    assert maps.shape == (192,) and bool(cupy.isfinite(maps).all())


def test_count_kernel_in_the_simulator(rng):
    """The CUDA backend's count behind the device checks, in Numba's simulator (the GPU tests
    above run it through CuPy): the kernel at a grid smaller than the array (its grid-stride
    loop), its launch, and the checks' lookup of it by name."""
    from sphgpu._device import SIMULATOR

    if not SIMULATOR:
        pytest.skip("simulator only")
    import importlib

    CK = importlib.import_module(V.DEVICE_CHECKS)
    a = rng.standard_normal(3001)
    a[[3, 1000, 3000]] = [np.nan, np.inf, V.UNSEEN]
    for lower, want in ((V.UNSEEN + V._UNSEEN_TOL, 3), (-np.inf, 2)):
        count = np.zeros(1, dtype=np.int64)
        CK.count_outside_kernel[5, 32](a, lower, count)
        assert count[0] == want
        assert CK.count_outside(a, lower)[0] == want
        assert V.count_outside(a, lower) == want
    # a 2-D array is counted whole (flattened), as a batch of maps is
    batch = rng.standard_normal((2, 37))
    assert V.count_outside(batch, -np.inf) == 0
    batch[1, 36] = -np.inf
    assert V.count_outside(batch, -np.inf) == 1


@pytest.mark.parametrize("call, name", [
    (lambda a, b: sphgpu.alm2map([a, b], 2, pol=False, backend="cpu"), "alms?"),  # healpy: alms
    (lambda a, b: sphgpu.alm2cl([a, b]), "alms1"),
    (lambda a, b: sphgpu.map2alm([np.zeros(48), np.zeros(12)], pol=False, backend="cpu"),
     "maps"),
    (lambda a, b: sphgpu.map2alm([np.ma.zeros(48), np.ma.zeros(12)], pol=False,
                                 backend="cpu"), "maps"),
])
def test_a_ragged_list_is_refused_naming_the_argument(call, name):
    """[a1, a2_shorter] failed in np.asarray with NumPy's 'inhomogeneous shape' (no name)."""
    a1, a2 = np.zeros(10, complex), np.zeros(6, complex)     # lmax 3 and lmax 2
    with pytest.raises(ValueError, match=rf"^{name}\b.*different shapes"):
        call(a1, a2)


def test_ragged_checks_in_the_validators():
    from sphgpu._validate import as_complex_array, as_maps, as_real_array

    with pytest.raises(ValueError, match=r"^cls .*\(5,\), \(3,\)"):
        as_real_array("cls", [np.ones(5), np.ones(3)])
    with pytest.raises(ValueError, match=r"^alm .*\(4,\), ragged"):
        as_complex_array("alm", [np.ones(4, complex), [1j, [2j]]])
    with pytest.raises(ValueError, match=r"^m .*different shapes"):
        as_maps("m", [np.ones(12), np.ones(48)])
    # equal lengths still pass
    assert as_real_array("cls", [np.ones(3), np.ones(3)]).shape == (2, 3)
