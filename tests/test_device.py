"""Host-to-device copies: large NumPy arrays go up through page-locked buffers in chunks, and
must arrive bit for bit, whatever their size, shape and dtype."""
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
