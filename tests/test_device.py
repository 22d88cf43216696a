"""Array kinds (sphgpu._device): host and device arrays told apart, contiguous copies made only
when needed, and host-to-device copies: large NumPy arrays go up through page-locked buffers in
chunks, and must arrive bit for bit, whatever their size, shape and dtype."""
import numpy as np
import pytest

from sphgpu import _device


@pytest.mark.gpu
@pytest.mark.parametrize("shape, dtype", [((3, 1_000_003), np.float64), ((2_500_001,), np.complex128),
                                          ((7, 333_333), np.float32), ((4_000_000,), np.uint64)])
def test_chunked_upload_arrives_bit_for_bit(monkeypatch, rng, shape, dtype):
    import cupy
    monkeypatch.setattr(_device, "UPLOAD_CHUNK_BYTES", 1 << 20)   # many chunks, a ragged end
    a = rng.standard_normal(shape) * 1e3
    a = (a + 1j * rng.standard_normal(shape)) if np.dtype(dtype).kind == "c" else a
    a = a.astype(dtype)
    d = _device.to_device(a)
    assert isinstance(d, cupy.ndarray) and d.shape == a.shape and d.dtype == a.dtype
    assert np.array_equal(d.get().view(np.uint8), a.view(np.uint8))
    # a strided view and big-endian data take CuPy's own copy, with the same values
    assert np.array_equal(_device.to_device(a[..., ::3]).get(), a[..., ::3])
    b = a.astype(a.dtype.newbyteorder(">"))
    assert np.array_equal(_device.to_device(b).get(), a)


def test_upload_under_the_simulator_is_the_array_itself(rng):
    if not _device.SIMULATOR:
        pytest.skip("simulator only")
    a = rng.standard_normal(10)
    assert _device.to_device(a) is a


class _FakeDeviceArray:
    """Anything that says it lives on a GPU (the CUDA array interface), as Numba's and
    CuPy's arrays do."""
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (0, False),
                                "version": 3}


def test_array_kinds_are_told_by_the_cuda_array_interface(rng):
    a = rng.standard_normal(5)
    assert not _device.is_device_array(a) and not _device.is_device_array([1.0, 2.0])
    assert not _device.is_device_array(np.ma.masked_array(a))
    assert _device.is_device_array(_FakeDeviceArray())
    assert _device.array_module_of(a) is np and _device.array_module_of([1.0]) is np


def test_as_contiguous_copies_a_host_array_only_when_needed(rng):
    a = rng.standard_normal((3, 8))
    assert _device.as_contiguous(a, np.float64) is a
    strided = _device.as_contiguous(a[:, ::2], np.float64)
    assert strided.flags.c_contiguous and np.array_equal(strided, a[:, ::2])
    cast = _device.as_contiguous(a, np.complex128)
    assert cast.dtype == np.complex128 and np.array_equal(cast.real, a)


def test_a_numba_device_array_comes_back_to_the_host(rng):
    # Numba's device arrays have no .get(): to_host copies them with Numba's own call
    if not _device.SIMULATOR:
        pytest.skip("simulator only")
    from numba import cuda

    a = rng.standard_normal((2, 5))
    back = _device.to_host(cuda.to_device(a))
    assert isinstance(back, np.ndarray) and np.array_equal(back, a)
