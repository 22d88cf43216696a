"""The particle-in-cell test of the paper: particles, cells, moves and re-sorts."""

import numpy as np
import pytest

from sphgpu.sort import pic


def test_make_particles_are_uniform_and_in_cell_order():
    pos = pic.make_particles(20000, grid=8, seed=3)
    assert pos.shape == (20000, 2) and pos.dtype == np.float64
    assert pos.min() >= 0.0 and pos.max() < 1.0
    cells = pic.cell_index(pos, 8)
    assert np.all(cells[1:] >= cells[:-1])
    counts = np.bincount(cells, minlength=64)
    assert counts.min() > 0.7 * 20000 / 64 and counts.max() < 1.3 * 20000 / 64
    assert np.array_equal(pos, pic.make_particles(20000, grid=8, seed=3))
    assert pic.make_particles(0).shape == (0, 2)


def test_cell_index():
    h = 1.0 / 32
    pos = np.array([[0.0, 0.0], [1 - 1e-12, 0.0], [0.0, 1 - 1e-12], [16.5 * h, 3.5 * h],
                    [1.0, 1.0], [h, 2 * h]])
    cells = pic.cell_index(pos, 32)
    assert cells.dtype == np.uint32
    assert cells.tolist() == [0, 31, 31 * 32, 3 * 32 + 16, 1023, 2 * 32 + 1]


@pytest.mark.parametrize("grid", [1, 5, 32])
def test_move_at_most_one_cell(rng, grid):
    pos = rng.random((5000, 2))
    pos[:10] = 0.0                                    # moves across the periodic border
    new = pic.move(pos, grid, rng)
    assert new.shape == pos.shape and new.min() >= 0.0 and new.max() < 1.0
    d = np.abs(new - pos)
    d = np.minimum(d, 1.0 - d)                        # periodic distance
    assert d.max() <= 1.0 / grid + 1e-12
    a, b = pic.cell_index(pos, grid), pic.cell_index(new, grid)
    di = np.abs(a % grid - b % grid).astype(np.int64)
    dj = np.abs(a // grid - b // grid).astype(np.int64)
    assert np.all(np.minimum(di, grid - di) <= 1) and np.all(np.minimum(dj, grid - dj) <= 1)
    assert not np.array_equal(new, pos)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_resort_applies_the_permutation(rng, backend):
    pos = pic.make_particles(3000, seed=1)
    moved = pic.move(pos, 32, rng)
    cells = pic.cell_index(moved, 32)
    p2, c2, perm = pic.resort(moved, cells, 10, radix_bits=5, backend=backend)
    ref = np.argsort(cells, kind="stable")
    assert np.array_equal(perm, ref) and np.array_equal(c2, cells[ref])
    assert np.array_equal(p2, moved[ref])
    assert np.array_equal(pic.cell_index(p2, 32), c2)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_run_pic(backend):
    out = pic.run_pic(n=4000, steps=3, backend=backend, seed=2)
    assert out["backend"] == backend and out["passes"] == 2 and out["radix_bits"] == 5
    assert len(out["sort_s"]) == len(out["move_s"]) == len(out["cell_s"]) == 3
    assert all(t >= 0 for t in out["sort_s"]) and out["sort_total_s"] == sum(out["sort_s"])
    wide = pic.run_pic(n=4000, steps=2, key_bits=30, backend=backend, seed=2)
    assert wide["passes"] == 6 and wide["key_bits"] == 30
    tuned = pic.run_pic(n=1000, grid=5, steps=1, key_bits=5, radix_bits=None, backend=backend)
    assert tuned["passes"] == 1


def test_run_pic_calls_the_sync_hook():
    calls = []
    pic.run_pic(n=100, steps=2, sync=lambda: calls.append(1))
    assert len(calls) == 8
