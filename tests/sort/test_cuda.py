"""The CUDA radix sort kernels (Numba's simulator in CI, the GPU on the GPU machine) against
numpy.argsort(kind="stable")."""

import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.sort import _cuda

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("n", [0, 1, 31, 33, 1025])
@pytest.mark.parametrize("key_bits, radix_bits", [(10, 5), (10, 3), (7, 8), (12, 4)])
def test_sort_pairs_is_a_stable_sort(dtype, n, key_bits, radix_bits, rng):
    keys = rng.integers(0, 2**key_bits, n).astype(dtype)
    keys[: n // 3] = keys[n // 2] if n else 0          # many duplicates: stability matters
    before = keys.copy()
    want = np.argsort(keys, kind="stable")
    out, perm = _cuda.sort_pairs(keys, key_bits, min(radix_bits, key_bits), True)
    np.testing.assert_array_equal(perm, want)
    np.testing.assert_array_equal(out, keys[want])
    np.testing.assert_array_equal(keys, before)                # input untouched
    out2, none = _cuda.sort_pairs(keys, key_bits, radix_bits, False)
    assert none is None
    np.testing.assert_array_equal(out2, keys[want])


def test_full_width_keys_and_skipped_passes(rng):
    keys = rng.integers(0, 2**32, 700, dtype=np.uint64) << np.uint64(31)   # low 31 bits zero
    want = np.argsort(keys, kind="stable")
    out, perm = _cuda.sort_pairs(keys, 64, 8, True)
    np.testing.assert_array_equal(perm, want)
    same = np.full(300, 5, dtype=np.uint32)
    out, perm = _cuda.sort_pairs(same, 3, 2, True)
    np.testing.assert_array_equal(perm, np.arange(300))


def test_radix_bits_above_the_shared_memory_limit_is_refused():
    with pytest.raises(ValueError, match="radix_bits"):
        _cuda.sort_pairs(np.zeros(4, np.uint32), 16, 9, True)


@pytest.mark.parametrize("dtype", [np.int16, np.float64, np.uint8])
def test_public_api_on_the_cuda_backend(dtype, rng):
    import sphgpu.sort as S
    keys = (rng.standard_normal(300) * 50).astype(dtype)
    if dtype == np.float64:
        keys[[3, 7]] = np.nan
        keys[10] = -0.0
    want = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(S.argsort(keys, backend="cuda"), want)
    out, vals = S.radix_sort(keys, values=np.arange(300.0), backend="cuda")
    np.testing.assert_array_equal(vals, want.astype(float))
    np.testing.assert_array_equal(out, keys[want])


@pytest.mark.skipif(_cuda.SIMULATOR, reason="the autotuner measures on a real GPU only")
def test_autotuner_measures_once_caches_on_disk_and_sorts_correctly(tmp_path, monkeypatch, rng):
    import json

    import sphgpu

    monkeypatch.setenv("SPHGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_cuda, "_tuned", {})
    keys = rng.integers(0, 2**20, (1 << 20) + 7, dtype=np.uint32)
    perm = sphgpu.argsort(keys, backend="cuda")
    np.testing.assert_array_equal(perm, np.argsort(keys, kind="stable"))
    cache = json.loads((tmp_path / "sort_launch.json").read_text())
    (key, (bits, items)), = cache.items()
    assert "key_bits=20" in key and "log2n=21" in key and 4 <= bits <= _cuda.MAX_RADIX_BITS
    # a new process reads the file and measures nothing
    monkeypatch.setattr(_cuda, "_tuned", {})
    monkeypatch.setattr(_cuda, "_measure", lambda *a: pytest.fail("measured twice"))
    assert _cuda.choose_radix_bits(len(keys), 20, 4, True) == bits
    np.testing.assert_array_equal(sphgpu.argsort(keys, backend="cuda"), perm)
