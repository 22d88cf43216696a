"""The paper's particle-in-cell sorting test (Helluy 2011, section 4.2), for notebooks.

Particles live in the periodic unit square [0, 1) x [0, 1) over a ``grid`` x ``grid`` mesh of
step h = 1/grid; the particle at (x, y) is in cell ``iy * grid + ix`` with ``ix = floor(x/h)``,
``iy = floor(y/h)``. Every step moves each particle by at most one cell width in x and in y, so
it stays in its cell or goes to a neighbour and the list is only "weakly disordered"; the list
is then re-sorted by cell with the permutation, which is applied to the positions.

With the paper's 32 x 32 grid the 1024 cells fit in b = 10 bits: 2 passes of r = 5 bits,
against 6 passes when the keys are declared 30 bits wide::

    from sphgpu.sort import pic
    short = pic.run_pic(n=2**20, key_bits=10)     # 2 passes of 5 bits
    wide = pic.run_pic(n=2**20, key_bits=30)      # 6 passes of 5 bits
    short["sort_s"], wide["sort_s"]               # seconds per step

The "cpu" backend skips a pass whose digit is the same for every key, so there b = 30 costs
little more than b = 10: the skip finds by itself the short key that the paper picks by hand.

Everything here works on NumPy arrays; ``resort`` also takes device arrays (CuPy or Numba) with
``backend="cuda"``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import backends
from .._validate import check_int
from .api import radix_sort

__all__ = ["make_particles", "cell_index", "move", "resort", "run_pic"]

#: Cells are uint32 keys: at most 2**32 of them.
MAX_GRID = 2**16


def _check_grid(grid) -> int:
    return check_int("grid", grid, minimum=1, maximum=MAX_GRID)


def _check_positions(pos):
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 2:
        raise ValueError(f"pos must have shape (n, 2), got {pos.shape}")
    return pos


def _wrap(p):
    """Positions into [0, 1), in place: p mod 1, with the rounding case -tiny mod 1 == 1 -> 0."""
    np.mod(p, 1.0, out=p)
    p[p >= 1.0] = 0.0
    return p


def make_particles(n, grid=32, seed=None):
    """n particles uniform in the periodic unit square, listed in cell order.

    Parameters
    ----------
    n : int >= 0
    grid : int
        Cells per side of the mesh (1 to 65536); the list is ordered by :func:`cell_index` on
        it, the state after the paper's first sort.
    seed : int, numpy.random.Generator or None

    Returns
    -------
    pos : ndarray, shape (n, 2), float64
        (x, y) in [0, 1), in units of the square's side.
    """
    n = check_int("n", n, minimum=0)
    grid = _check_grid(grid)
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 2))
    cells = cell_index(pos, grid)
    if grid * grid <= 2**16:          # NumPy radix-sorts 16-bit keys
        cells = cells.astype(np.uint16)
    return pos[np.argsort(cells, kind="stable")]


def cell_index(pos, grid):
    """Cell of each particle: ``iy * grid + ix``.

    Parameters
    ----------
    pos : array, shape (n, 2), float
        Positions in [0, 1) (values outside are clamped to the border cells).
    grid : int
        Cells per side (1 to 65536).

    Returns
    -------
    ndarray, shape (n,), uint32, in [0, grid**2)
    """
    pos = _check_positions(pos)
    grid = _check_grid(grid)
    ij = np.floor(pos * grid).astype(np.int64)
    np.clip(ij, 0, grid - 1, out=ij)
    return (ij[:, 1] * grid + ij[:, 0]).astype(np.uint32)


def move(pos, grid, rng):
    """Move each particle by at most one cell width in x and y, periodically.

    The displacement of each coordinate is uniform in [-h, h], h = 1/grid, so a particle stays
    in its cell or moves to one of the 8 neighbours.

    Parameters
    ----------
    pos : array, shape (n, 2), float64
    grid : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (n, 2), float64, a new array with values in [0, 1)
    """
    pos = _check_positions(pos)
    grid = _check_grid(grid)
    step = rng.uniform(-1.0, 1.0, size=pos.shape)
    step *= 1.0 / grid
    step += pos
    return _wrap(step)


def resort(pos, cells, key_bits, *, radix_bits=None, backend="auto"):
    """Sort the particles by cell with the permutation, and apply it to the positions.

    Parameters
    ----------
    pos : array, shape (n, 2)
    cells : array, shape (n,), unsigned integers (uint32 from :func:`cell_index`)
    key_bits : int
        Bits b of the cell keys (10 for the 32 x 32 grid); the sort makes ceil(b / r) passes.
    radix_bits : int, optional
        Digit width r of a pass; by default the backend's.
    backend : {"auto", "cuda", "cpu", "reference"}

    Returns
    -------
    pos : array, shape (n, 2), positions in cell order
    cells : array, shape (n,), non-decreasing
    perm : array, shape (n,), int64, with ``cells == old_cells[perm]``
    """
    cells, pos, perm = radix_sort(cells, key_bits=key_bits, radix_bits=radix_bits, values=pos,
                                  return_permutation=True, backend=backend)
    return pos, cells, perm


def run_pic(n=2**20, grid=32, steps=10, key_bits=10, radix_bits=5, backend="auto", seed=0,
            sync=None):
    """The paper's PIC test: ``steps`` rounds of move, cell index and re-sort, timed.

    Parameters
    ----------
    n : int
        Number of particles (the paper uses 8M).
    grid : int
        Cells per side; the cells need ``(grid**2 - 1).bit_length()`` bits (10 for 32).
    steps : int
    key_bits : int
        Bits b the sort is told the keys have (10, or 30 for the paper's 6-pass comparison).
    radix_bits : int or None
        Digit width r; the paper's 5 by default (None: the backend's tuned default).
    backend : {"auto", "cuda", "cpu", "reference"}
    seed : int
    sync : callable, optional
        Called before each clock reading (e.g. a device synchronise); nothing by default.

    Returns
    -------
    dict with ``"n"``, ``"grid"``, ``"steps"``, ``"key_bits"``, ``"radix_bits"``,
    ``"passes"`` (ceil(b / r)), ``"backend"`` (the one that ran) and per-step lists of seconds
    ``"move_s"`` (move), ``"cell_s"`` (cell index) and ``"sort_s"`` (sort with permutation and
    applying it), plus ``"sort_total_s"``.

    Raises
    ------
    RuntimeError
        If after a step the cells are not in non-decreasing order.
    """
    n = check_int("n", n, minimum=1)
    grid = _check_grid(grid)
    steps = check_int("steps", steps, minimum=0)
    key_bits = check_int("key_bits", key_bits, minimum=1, maximum=32)
    need = (grid * grid - 1).bit_length()
    if key_bits < need:
        raise ValueError(f"key_bits={key_bits} is too small: a {grid} x {grid} grid has "
                         f"{grid * grid} cells, which need {need} bits")
    name = backends.resolve(backend, "sort")
    if radix_bits is None:
        radix_bits = min(backends.load("sort", name).DEFAULT_RADIX_BITS, key_bits)
    radix_bits = check_int("radix_bits", radix_bits, minimum=1, maximum=16)
    sync = sync or (lambda: None)
    clock = time.perf_counter

    rng = np.random.default_rng(seed)
    pos = make_particles(n, grid, seed=rng)
    cells = cell_index(pos, grid)
    out = dict(n=n, grid=grid, steps=steps, key_bits=key_bits, radix_bits=radix_bits,
               passes=math.ceil(key_bits / radix_bits), backend=name,
               move_s=[], cell_s=[], sort_s=[])
    for step in range(steps):
        sync()
        t0 = clock()
        pos = move(pos, grid, rng)
        sync()
        t1 = clock()
        cells = cell_index(pos, grid)
        sync()
        t2 = clock()
        pos, cells, _ = resort(pos, cells, key_bits, radix_bits=radix_bits, backend=name)
        sync()
        t3 = clock()
        out["move_s"].append(t1 - t0)
        out["cell_s"].append(t2 - t1)
        out["sort_s"].append(t3 - t2)
        if not bool(np.all(cells[1:] >= cells[:-1])):
            raise RuntimeError(f"step {step}: the cells are not sorted after the re-sort "
                               f"(backend {name!r})")
    out["sort_total_s"] = float(sum(out["sort_s"]))
    return out
