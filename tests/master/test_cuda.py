"""The CUDA coupling kernel: through Numba's simulator in CI (tiny lmax), on the real GPU on the
GPU machine (`pytest -m gpu`), against the CPU twin (same arithmetic) and the exact reference."""

import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.master import _cpu, coupling_matrix, reference

from .cases import TOL, random_mask_cl, row_err

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU or simulator")

BLOCKS = ("00", "02", "++", "--")


@pytest.mark.parametrize("lmax, tpb", [(0, 8), (3, 8), (7, 4), (10, 8)])
def test_kernel_matches_twin_and_reference(lmax, tpb, rng):
    from sphgpu.master import _cuda

    # (lmax + 1) rows x ceil((lmax + 1) / tpb) blocks x tpb threads: at most 176 threads
    wl = random_mask_cl(rng, lmax)
    got = _cuda.coupling_blocks(wl, lmax, BLOCKS, tpb=tpb)
    assert isinstance(got, np.ndarray) and got.shape == (4, lmax + 1, lmax + 1)
    twin = _cpu.coupling_blocks(wl, lmax, BLOCKS, method="twin")
    want = reference.coupling_blocks(wl, lmax, BLOCKS)
    for b in range(4):
        assert row_err(got[b], twin[b]) <= TOL["coupling_cuda_vs_twin"], BLOCKS[b]
        assert row_err(got[b], want[b]) <= TOL["coupling_vs_reference"], BLOCKS[b]


def test_kernel_writes_only_the_blocks_asked_for(rng):
    from sphgpu.master import _cuda

    lmax = 6
    wl = random_mask_cl(rng, lmax)[:5]          # a spectrum shorter than 2 lmax + 1
    got = _cuda.coupling_blocks(wl, lmax, ("--", "00"))
    want = reference.coupling_blocks(wl, lmax, ("--", "00"))
    assert row_err(got[0], want[0]) <= TOL["coupling_vs_reference"]
    assert row_err(got[1], want[1]) <= TOL["coupling_vs_reference"]


def test_public_call_on_cuda(rng):
    lmax = 5
    wl = random_mask_cl(rng, lmax)
    c = coupling_matrix(wl, lmax, spins=(2, 2), is_cl=True, backend="cuda")
    ref = coupling_matrix(wl, lmax, spins=(2, 2), is_cl=True, backend="reference")
    for b in ("++", "--"):
        assert row_err(c.blocks[b], ref.blocks[b]) <= TOL["coupling_vs_reference"]


@pytest.mark.gpu
def test_real_gpu_matches_ducc0_at_lmax_500(rng):
    from sphgpu.master import _cuda

    lmax = 500
    wl = random_mask_cl(rng, lmax)
    got = _cuda.coupling_blocks(wl, lmax, BLOCKS)
    peer = _cpu.coupling_blocks(wl, lmax, BLOCKS, method="ducc0")
    for b in range(4):
        assert row_err(got[b], peer[b]) <= TOL["coupling_vs_ducc0"], BLOCKS[b]


def test_pure_coupling_on_cuda(rng):
    lmax = 5
    wl = random_mask_cl(rng, lmax)
    c = coupling_matrix(wl, lmax, spins=(2, 2), purify_b=True, is_cl=True, backend="cuda")
    ref = coupling_matrix(wl, lmax, spins=(2, 2), purify_b=True, is_cl=True,
                          backend="reference")
    for b in ("++", "--", "+p", "pp"):
        assert row_err(c.blocks[b], ref.blocks[b]) <= TOL["coupling_vs_reference"], b


# nside 2 with iter=0: the window's analysis is rough enough for the smoothness warning
@pytest.mark.filterwarnings("ignore:mask is not smooth")
def test_pure_alm_through_the_cuda_transforms(rng):
    # purification calls sphgpu.sht's public transforms with the backend asked for: the CUDA
    # ones (simulator in CI) agree with the CPU ones
    from sphgpu.master import pseudo_alm_spin2

    from .cases import healpix_theta

    nside = 2
    mask = 1.0 + 0.5 * np.cos(healpix_theta(nside))      # smooth at any resolution
    q, u = rng.normal(size=(2, 12 * nside ** 2))
    got = pseudo_alm_spin2(q, u, mask, purify_b=True, iter=0, backend="cuda")
    want = pseudo_alm_spin2(q, u, mask, purify_b=True, iter=0, backend="cpu")
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())


@pytest.mark.gpu
def test_real_gpu_pure_b_on_device_arrays(rng):
    cupy = pytest.importorskip("cupy")
    from sphgpu.master import apodize_mask, pseudo_cl_spin2

    from .cases import cut_mask

    nside, lmax = 64, 128
    mask = apodize_mask(cut_mask(nside, 0.35), 10.0, apotype="C2")
    q, u = rng.normal(size=(2, 3, 12 * nside ** 2))                 # a batch of three
    got = pseudo_cl_spin2(cupy.asarray(q), cupy.asarray(u), mask, lmax, purify_b=True,
                          backend="cuda")
    assert isinstance(got, cupy.ndarray) and got.shape == (3, 4, lmax + 1)
    want = pseudo_cl_spin2(q, u, mask, lmax, purify_b=True, backend="cpu")
    assert np.abs(got.get() - want).max() <= 1e-10 * np.abs(want).max()
    wl = cupy.asarray(random_mask_cl(rng, lmax))
    c = coupling_matrix(wl, lmax, spins=(2, 2), purify_b=True, is_cl=True, backend="cuda")
    ref = coupling_matrix(wl.get(), lmax, spins=(2, 2), purify_b=True, is_cl=True,
                          backend="cpu")
    for b in ("++", "--", "+p", "pp"):
        assert isinstance(c.blocks[b], cupy.ndarray)
        assert row_err(c.blocks[b].get(), ref.blocks[b]) <= TOL["coupling_vs_ducc0"], b


@pytest.mark.gpu
def test_real_gpu_pure_b_with_a_device_window(rng):
    """A window already on the GPU is checked there (a Monte Carlo batch passes its plan's
    device copy): the same pure-B a_lm as the host window, and the same errors."""
    cupy = pytest.importorskip("cupy")
    from sphgpu.master import apodize_mask, pseudo_alm_spin2

    from .cases import cut_mask

    nside, lmax = 32, 64
    binary = cut_mask(nside, 0.35)
    mask = apodize_mask(binary, 10.0, apotype="C2")
    q, u = (cupy.asarray(a) for a in rng.normal(size=(2, 12 * nside ** 2)))
    want = pseudo_alm_spin2(q, u, mask, lmax, purify_b=True, backend="cuda")
    got = pseudo_alm_spin2(q, u, cupy.asarray(mask), lmax, purify_b=True, backend="cuda")
    assert isinstance(got, cupy.ndarray)
    assert np.abs(got.get() - want.get()).max() <= 1e-13 * np.abs(want.get()).max()
    with pytest.raises(ValueError, match="mask is binary"):
        pseudo_alm_spin2(q, u, cupy.asarray(binary), lmax, purify_b=True, backend="cuda")
    bad = mask.copy()
    bad[7] = -0.5
    with pytest.raises(ValueError, match="mask must be non-negative"):
        pseudo_alm_spin2(q, u, cupy.asarray(bad), lmax, purify_b=True, backend="cuda")
    bad[7] = np.nan
    with pytest.raises(ValueError, match="mask contains NaN"):
        pseudo_alm_spin2(q, u, cupy.asarray(bad), lmax, purify_b=True, backend="cuda")
