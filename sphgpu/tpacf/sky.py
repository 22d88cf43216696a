"""Per-point arithmetic of catalog preparation, written once for the host and the GPU.

A point's unit vector and its cell key are computed by the functions that :func:`point_math`
builds from one source, compiled with ``numba.njit`` for the host and as CUDA device functions
for the GPU. Every multiplication and addition goes through the ``mul`` and ``add`` it is given
(plain IEEE float64 operations on the host, ``__dmul_rn``/``__dadd_rn`` on the GPU, which the
compiler cannot contract into an FMA), and sine and cosine are polynomials here rather than the
platform's library (NumPy's, glibc's and CUDA's differ in the last bit, and NumPy's depends on
the host's SIMD level). So the host and the GPU give the same float64 unit vectors, bit for bit,
on every machine, and hence the same squared chord of every pair.

Definitions (degrees in, as the catalogs hold them):

    w     = RA modulo 360 in [0, 360) (an exact 360, or a tiny negative rounding to it, is 0)
    k     = nearest integer to x / 90;  r = x - 90 k (exact);  t = r * (pi / 180) in [-pi/4, pi/4]
    sin t, cos t: their Taylor polynomials to t**19 and t**18 (truncation below 1e-19)
    sin x, cos x from sin t, cos t by the quadrant k
    unit vector (cos dec cos w, cos dec sin w, sin dec); exact at multiples of 90 degrees
    band  = floor((dec + 90) * nbands / 180), clipped to [0, nbands)
    q     = floor(w * 2**32 / 360), clipped to [0, 2**32): RA quantised to 32 bits

Accuracy: absolute error below 3e-16 in every component (tests/tpacf/test_prepare.py, against
long double); NumPy's cos(deg2rad(x)) reaches 6e-16, since deg2rad rounds large angles.
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numba
import numpy as np

__all__ = ["point_math", "host_math", "QBITS", "Q_PER_DEG", "parallel_slices"]

QBITS = 32
#: RA quanta per degree
Q_PER_DEG = 2.0**QBITS / 360.0
_QMAX = 2**QBITS - 1
_DEG = math.pi / 180.0
_SIN = tuple((-1.0) ** (k // 2) / math.factorial(k) for k in range(3, 20, 2))    # t^3 .. t^19
_COS = tuple((-1.0) ** (k // 2) / math.factorial(k) for k in range(2, 19, 2))    # t^2 .. t^18


def point_math(jit, mul, add):
    """The per-point functions compiled by ``jit`` with the given float64 ``mul`` and ``add``:

    ``sincos_deg(x) -> (sin, cos)`` of x degrees, |x| <= 450;
    ``wrap_ra(ra) -> w`` in [0, 360);
    ``unit_vector(ra, dec) -> (x, y, z)``;
    ``cell(ra, dec, nbands) -> (band, q)`` (int64).
    """
    S, C = _SIN, _COS

    @jit
    def sincos_deg(x):
        k = math.floor(add(x / 90.0, 0.5))
        r = add(x, -90.0 * k)                     # exact (Sterbenz): |r| <= 45
        t = mul(r, _DEG)
        t2 = mul(t, t)
        # Horner's scheme, written out (a loop over the tuples needs a run-time tuple index)
        ps = add(S[7], mul(t2, S[8]))
        ps = add(S[6], mul(t2, ps))
        ps = add(S[5], mul(t2, ps))
        ps = add(S[4], mul(t2, ps))
        ps = add(S[3], mul(t2, ps))
        ps = add(S[2], mul(t2, ps))
        ps = add(S[1], mul(t2, ps))
        ps = add(S[0], mul(t2, ps))
        pc = add(C[7], mul(t2, C[8]))
        pc = add(C[6], mul(t2, pc))
        pc = add(C[5], mul(t2, pc))
        pc = add(C[4], mul(t2, pc))
        pc = add(C[3], mul(t2, pc))
        pc = add(C[2], mul(t2, pc))
        pc = add(C[1], mul(t2, pc))
        pc = add(C[0], mul(t2, pc))
        s = add(t, mul(mul(t, t2), ps))
        c = add(1.0, mul(t2, pc))
        quadrant = int(k) & 3
        if quadrant == 0:
            return s, c
        if quadrant == 1:
            return c, -s
        if quadrant == 2:
            return -s, -c
        return -c, s

    @jit
    def wrap_ra(ra):
        w = ra % 360.0                 # Python's float modulo: fmod (exact), + 360 if negative
        if w >= 360.0:
            w = 0.0
        return w

    @jit
    def unit_vector(ra, dec):
        sr, cr = sincos_deg(wrap_ra(ra))
        sd, cd = sincos_deg(dec)
        return mul(cd, cr), mul(cd, sr), sd

    @jit
    def cell(ra, dec, nbands):
        b = math.floor(mul(add(dec, 90.0), nbands / 180.0))
        b = min(max(b, 0), nbands - 1)
        q = math.floor(mul(wrap_ra(ra), Q_PER_DEG))
        q = min(max(q, 0), _QMAX)
        return b, q

    return SimpleNamespace(sincos_deg=sincos_deg, wrap_ra=wrap_ra, unit_vector=unit_vector,
                           cell=cell)


@numba.njit(inline="always")
def host_mul(a, b):
    """a * b, compiled for the host: :func:`point_math` and the slop geometry take the
    product and the sum as functions, so that the CUDA kernels can give their own."""
    return a * b


@numba.njit(inline="always")
def host_add(a, b):
    """a + b, compiled for the host (see :func:`host_mul`)."""
    return a + b


#: the host's compiled point functions (Numba does not contract a * b + c without fastmath)
host_math = point_math(numba.njit(inline="always"), host_mul, host_add)
_unit_vector = host_math.unit_vector
_cell = host_math.cell


@numba.njit(nogil=True, cache=True)
def unit_vectors_into(ra, dec, out, a, b):
    """out[:, i] = unit vector of (ra[i], dec[i]) for i in [a, b)."""
    for i in range(a, b):
        x, y, z = _unit_vector(ra[i], dec[i])
        out[0, i] = x
        out[1, i] = y
        out[2, i] = z


@numba.njit(nogil=True, cache=True)
def cell_keys_into(ra, dec, labels, nbands, nreg, keys, a, b):
    """keys[i] = ((band * nreg + label) << 32) | q for i in [a, b) (labels of length 0: 0)."""
    for i in range(a, b):
        band, q = _cell(ra[i], dec[i], nbands)
        hi = band * nreg + (labels[i] if labels.shape[0] else 0)
        keys[i] = (np.uint64(hi) << np.uint64(QBITS)) | np.uint64(q)


@numba.njit(nogil=True, cache=True)
def sorted_points_into(ra, dec, w, perm, xyz, xyz32, ws, a, b):
    """Sorted unit vectors (float64 and float32) and weights (w of length 0: none) of the
    points perm[a:b] into positions [a, b)."""
    for k in range(a, b):
        i = perm[k]
        x, y, z = _unit_vector(ra[i], dec[i])
        xyz[0, k] = x
        xyz[1, k] = y
        xyz[2, k] = z
        xyz32[0, k] = np.float32(x)
        xyz32[1, k] = np.float32(y)
        xyz32[2, k] = np.float32(z)
        if w.shape[0]:
            ws[k] = w[i]


#: below this many points a host pass runs on the calling thread (threads cost more)
_PARALLEL_MIN = 1 << 15


@functools.lru_cache(maxsize=4)
def pool(nthreads):
    """One thread pool per thread count, kept for the process (starting threads per call
    costs more than a small count)."""
    return ThreadPoolExecutor(nthreads, thread_name_prefix="sphgpu-tpacf")


def parallel_slices(fn, n, *args):
    """``fn(*args, a, b)`` over slices [a, b) covering [0, n), on numba.get_num_threads()
    threads (``fn`` must release the GIL)."""
    nthreads = max(1, numba.get_num_threads())
    if nthreads == 1 or n < _PARALLEL_MIN:
        fn(*args, 0, n)
        return
    step = -(-n // (2 * nthreads))
    list(pool(nthreads).map(lambda a: fn(*args, a, min(n, a + step)), range(0, n, step)))
