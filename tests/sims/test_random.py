"""sphgpu.sims.random: Philox4x32-10 against Random123's known answers, the compiled CPU loop
and the CUDA kernel (simulator) against the NumPy twin, and the numbers' statistics."""

import numpy as np
import pytest

from sphgpu._device import to_host
from sphgpu.sims.random import (Stream, add_normals, normals, normals_reference, philox4x32,
                                 stream_key)
from sphgpu.testing import TOL

U = np.uint64

# Random123's published known-answer vectors (counter, key, output) for Philox4x32-10
KNOWN = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, want", KNOWN)
def test_philox_known_answers(counter, key, want):
    got = philox4x32(*(U(c) for c in counter), *(U(k) for k in key))
    assert tuple(int(x) for x in got) == want


@pytest.mark.parametrize("n", [0, 1, 2, 31, 33, 1000])
def test_compiled_cpu_loop_equals_the_numpy_twin(n):
    key = stream_key(7, 3)
    np.testing.assert_allclose(normals(n, 5, key), normals_reference(n, 5, key),
                               rtol=TOL["normals_cpu_vs_twin_rtol"], atol=0)


@pytest.mark.parametrize("n", [1, 33])
def test_cuda_kernel_equals_the_numpy_twin(n):
    key = stream_key(7, 3)
    got = normals((n,), 2, key, device=True)
    np.testing.assert_allclose(to_host(got), normals_reference(n, 2, key),
                               rtol=TOL["normals_cuda_vs_twin_rtol"],
                               atol=TOL["normals_cuda_vs_twin_atol"])


def test_values_are_standard_normal_and_draws_independent():
    key = stream_key(1, 0)
    a, b = normals(200_000, 0, key), normals(200_000, 1, key)
    for x in (a, b):
        assert abs(x.mean()) < 0.01 and abs(x.var() - 1) < 0.01
        assert abs(np.mean(x**4) - 3) < 0.05                    # Gaussian kurtosis
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.01
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.01        # the pair's two values too
    # a prefix of a longer draw is the shorter draw: values depend on their index only
    np.testing.assert_array_equal(normals(101, 0, key), a[:101])


def test_streams_differ_by_seed_and_index_and_advance_by_draw():
    keys = {stream_key(s, i) for s in range(3) for i in range(100)}
    assert len(keys) == 300
    s = Stream(4, 9)
    first, second = s.standard_normal((2, 5)), s.standard_normal(7)
    assert first.shape == (2, 5) and s.block == 2
    np.testing.assert_array_equal(first.ravel(), normals(10, 0, stream_key(4, 9)))
    np.testing.assert_array_equal(second, normals(7, 1, stream_key(4, 9)))


# ----------------------------------------------------------------------------- the registry
def test_the_stream_draws_from_the_backend_the_registry_names():
    from sphgpu import backends

    key = stream_key(4, 9)
    ref = Stream(4, 9, backend="reference")
    assert ref.backend == "reference" and not ref.device
    np.testing.assert_array_equal(ref.standard_normal((3, 4)).ravel(),
                                  normals_reference(12, 0, key))
    # the CPU loop is the "cpu" backend's, and the default: the same numbers whichever way
    cpu = backends.load("sims", "cpu").normals((3, 4), 1, key)
    np.testing.assert_array_equal(normals((3, 4), 1, key, backend="cpu"), cpu)
    np.testing.assert_array_equal(normals((3, 4), 1, key, device=False), cpu)
    with backends.use_backend("reference"):
        assert Stream(4, 9, backend="auto").backend == "reference"
        assert Stream(4, 9).backend == "cpu"        # no argument: the host loop, as always


def test_cuda_stream_without_a_gpu_and_bad_arguments_are_reported(monkeypatch):
    from sphgpu import backends

    monkeypatch.setattr(backends, "_cuda_status", lambda: (False, "no GPU here (test)"))
    with pytest.raises(backends.BackendUnavailableError, match="no GPU here"):
        Stream(1, 0, device=True)
    with pytest.raises(backends.BackendUnavailableError, match="no GPU here"):
        normals(3, 0, stream_key(1, 0), backend="cuda")
    with pytest.raises(ValueError, match="backend or device, not both"):
        Stream(1, 0, device=False, backend="cpu")
    with pytest.raises(ValueError, match="backend"):
        normals(3, 0, stream_key(1, 0), backend="gpu")
    with pytest.raises(TypeError, match="device must be a bool"):
        Stream(1, 0, device="cuda")


# ------------------------------------------------------- noise added in place, correlated a_lm
def _noise_cases():
    rng = np.random.default_rng(3)
    npix = 49                      # odd: the last pair of values is half outside
    sigma = rng.uniform(0.5, 2.0, npix)
    mask = rng.uniform(0.0, 1.0, npix)
    return [((npix,), 2.5, None), ((npix,), sigma, mask), ((3, npix), sigma, mask),
            ((3, npix), rng.uniform(0.5, 2.0, (3, npix)), None), ((2, npix), 0.7, mask)]


@pytest.mark.parametrize("backend", ["reference", "cpu", "cuda"])
@pytest.mark.parametrize("case", range(5))
def test_add_normals_is_noise_then_factor_in_one_pass(backend, case):
    from sphgpu._device import array_module

    shape, scale, factor = _noise_cases()[case]
    key = stream_key(11, 2)
    start = np.random.default_rng(case).standard_normal(shape)
    z = normals_reference(start.size, 4, key).reshape(shape)
    want = start + np.broadcast_to(scale, shape) * z
    if factor is not None:
        want = want * factor
    put = array_module().asarray if backend == "cuda" else np.asarray
    out = put(start.copy())
    got = add_normals(out, 4, key, put(scale) if np.ndim(scale) else scale,
                      None if factor is None else put(factor), backend=backend)
    assert got is out
    np.testing.assert_allclose(to_host(out), want, rtol=TOL["normals_cuda_vs_twin_rtol"],
                               atol=TOL["normals_cuda_vs_twin_atol"] * 10)


def test_add_standard_normal_takes_the_streams_next_draw():
    s, t = Stream(5, 1), Stream(5, 1)
    t.standard_normal(3)
    out = np.ones((2, 7))
    s.standard_normal(3)
    s.add_standard_normal(out, 2.0)
    assert s.block == 2
    np.testing.assert_allclose(out, 1.0 + 2.0 * t.standard_normal((2, 7)), rtol=1e-15)


def test_add_normals_refuses_what_it_cannot_write_or_repeat():
    key = stream_key(1, 0)
    with pytest.raises(ValueError, match="out must be a C-contiguous float64"):
        add_normals(np.ones((4, 6))[:, ::2], 0, key, 1.0)
    with pytest.raises(ValueError, match="out must be a C-contiguous float64"):
        add_normals(np.ones(6, dtype=np.float32), 0, key, 1.0)
    with pytest.raises(ValueError, match="scale has 4 values"):
        add_normals(np.ones(6), 0, key, np.ones(4))
    with pytest.raises(ValueError, match="factor has 5 values"):
        add_normals(np.ones(6), 0, key, 1.0, np.ones(5))


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_correlate_equals_the_written_out_sums(backend):
    from sphgpu import backends
    from sphgpu._device import array_module

    rng = np.random.default_rng(8)
    n, nalm = 3, 37
    rows, cols = np.array([0, 1, 1, 2]), np.array([0, 0, 1, 2])
    fre, fim = rng.standard_normal((4, nalm)), rng.standard_normal((4, nalm))
    re, im = rng.standard_normal((n, nalm)), rng.standard_normal((n, nalm))
    start = rng.standard_normal((n, nalm)) + 1j * rng.standard_normal((n, nalm))
    want = start.copy()
    want[0] += fre[0] * re[0] + 1j * fim[0] * im[0]
    want[1] += (fre[1] * re[0] + fre[2] * re[1]) + 1j * (fim[1] * im[0] + fim[2] * im[1])
    want[2] += fre[3] * re[2] + 1j * fim[3] * im[2]
    put = array_module().asarray if backend == "cuda" else np.asarray
    out = put(start.copy())
    mod = backends.load("sims", backend)
    mod.correlate(put(re), put(im), tuple(put(a) for a in (rows, cols, fre, fim)), out)
    np.testing.assert_allclose(to_host(out), want, rtol=1e-14, atol=1e-15)
    ref = backends.load("sims", "reference").correlate(re, im, (rows, cols, fre, fim),
                                                        start.copy())
    np.testing.assert_allclose(to_host(out), ref, rtol=1e-14, atol=1e-15)
