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
