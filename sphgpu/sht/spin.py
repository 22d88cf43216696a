"""Spin-s transforms through the scalar Legendre step: the spin functions as coefficient maps.

healpy's spin-s transforms (s >= 1; s = 2 for polarization) pair a gradient (E) and a curl (B)
coefficient set with two real maps (Q, U):

    Q_m(theta) = -sum_l [ E_lm lam+_lm(theta) + i B_lm lam-_lm(theta) ]
    U_m(theta) = -sum_l [ B_lm lam+_lm(theta) - i E_lm lam-_lm(theta) ]

with lam+- = (lam_{s,lm} +- lam_{-s,lm}) / 2 the theta parts of the spin-weighted harmonics
_{+-s}Y_lm. Each of them is sin(theta)^-s times a finite combination of the scalar functions
lambda_jm, j = l - s .. l + s: the spin-raising operator (eth) on a function
sin^-k sum_j c_j lambda_j of spin q is again of that form with k + 1, because

    sin(theta) d/dtheta lambda_j = j eps_{j+1} lambda_{j+1} - (j+1) eps_j lambda_{j-1}
    cos(theta) lambda_j          =   eps_{j+1} lambda_{j+1} +     eps_j lambda_{j-1}
    eps_j = sqrt((j^2 - m^2) / (4 j^2 - 1))

so every spin-s sum above is  sin(theta)^-s * sum_j C_jm lambda_jm(theta)  with coefficients C
(lmax + s) obtained from E and B by a few sparse, l-local passes. The Legendre step is then the
scalar one (one recurrence serving Q and U, and T as well in a polarized transform), followed
by a factor sin^-s per ring. The adjoint runs the transposed passes after the scalar adjoint.
HEALPix derives its spin-2 functions from the scalar recurrence in the same spirit.

The functions here act on arrays of NumPy or CuPy alike (``xp``); they are shared by the
reference and CUDA backends and by the CPU twin.

Accuracy: near a pole the sum over j cancels down to sin^s times its terms, so rounding is
amplified by up to sin(theta)^-s on the rings closest to the poles (about 1e7 on the first
HEALPix ring at nside 2048 for s = 2); over a whole map this stays below 1e-12 relative for
s = 2 at nside 2048 (measured against ducc0, see tests and benchmarks). A backend that resamples
the Legendre step in theta must take the rings nearest the poles on their own: the resampling's
error, a fraction of the largest value, is multiplied there too (the CUDA backend's
``POLAR_SIN``; without it the polarized error at nside 2048 was 2e-12 to 4e-12). Rings exactly
at a pole (Clenshaw-Curtis grids) have sin = 0 and are refused by :func:`ring_factor`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._validate import check_int
from ..alm import AlmLayout

__all__ = ["extended_layout", "spin_coefficients", "spin_coefficients_adjoint", "ring_factor",
           "check_spin", "synthesis", "analysis", "chunk_tables", "coefficient_sets",
           "coefficient_sets_adjoint", "row_scale", "scale_rows"]


def check_spin(spin) -> int:
    """``spin`` as an int >= 1, or a clear error naming it."""
    return check_int("spin", spin, minimum=1)


def extended_layout(layout: AlmLayout, spin: int) -> AlmLayout:
    """The layout of the scalar coefficient sets: lmax + spin, same mmax."""
    return AlmLayout(layout.lmax + spin, layout.mmax)


@lru_cache(maxsize=16)
def _tables(lmax: int, mmax: int, spin: int):
    """Host tables on the extended layout (lmax + spin): l, m, eps_l, eps_{l+1} (0 at the top
    l of each m), N_l = sqrt((l-s)!/(l+s)!) (0 for l < s and for l > lmax), and the indices of
    the original layout's coefficients inside the extended one."""
    ext = AlmLayout(lmax + spin, mmax)
    l, m = ext.lm()
    fl = l.astype(np.float64)
    fm = m.astype(np.float64)
    eps = np.sqrt(np.maximum(fl * fl - fm * fm, 0.0) / (4.0 * fl * fl - 1.0))
    eps[l == 0] = 0.0
    fl1 = fl + 1.0
    eps_next = np.sqrt((fl1 * fl1 - fm * fm) / (4.0 * fl1 * fl1 - 1.0))
    eps_next[l == ext.lmax] = 0.0
    # N_l = sqrt((l-s)!/(l+s)!) = prod_{j=l-s+1}^{l+s} j^-1/2 (no overflow at any lmax)
    ell = np.arange(ext.lmax + 1, dtype=np.float64)
    per_l = np.ones(ext.lmax + 1)
    for j in range(-spin + 1, spin + 1):
        per_l /= np.sqrt(np.maximum(ell + j, 1.0))
    per_l[:spin] = 0.0
    per_l[lmax + 1:] = 0.0
    norm = per_l[l]
    base = AlmLayout(lmax, mmax)
    bl, bm = base.lm()
    inner = ext.index(bl, bm)
    return l.astype(np.float64), fm, eps, eps_next, norm, inner


_DEV: dict = {}


def _cached(key, make):
    """Per-process cache of small device tables (a few entries: plans are few per session)."""
    hit = _DEV.get(key)
    if hit is None:
        if len(_DEV) > 16:
            _DEV.clear()
        hit = _DEV[key] = make()
    return hit


def _device_tables(xp, layout, spin):
    """:func:`_tables` as arrays of ``xp`` (float64; the last, the indices, int64)."""
    return _cached((xp.__name__, layout.lmax, layout.mmax, spin), lambda: tuple(
        xp.asarray(a) for a in _tables(layout.lmax, layout.mmax, spin)))


def _orders_slice(layout: AlmLayout, mrange: range) -> slice:
    """Where the orders ``mrange`` (contiguous) lie in ``layout``'s m-major array."""
    stop = layout.size if mrange.stop > layout.mmax else layout.index(mrange.stop, mrange.stop)
    return slice(int(layout.index(mrange.start, mrange.start)), int(stop))


def chunk_tables(layout: AlmLayout, spin: int, mrange: range):
    """:func:`_tables` restricted to the orders ``mrange`` (host arrays), for coefficient sets
    that hold only those orders (a worker's m chunk in ``sphgpu.distributed``): the passes are
    local to each order, so they run on any run of whole orders."""
    fl, fm, eps, eps_next, norm, inner = _tables(layout.lmax, layout.mmax, spin)
    e = _orders_slice(extended_layout(layout, spin), mrange)
    b = _orders_slice(layout, mrange)
    return fl[e], fm[e], eps[e], eps_next[e], norm[e], inner[b] - e.start


def _down(xp, c):
    """c_{j-1} at j (the entry before; callers multiply by eps_j, which is 0 at j = m)."""
    out = xp.empty_like(c)
    out[..., 0] = 0.0
    out[..., 1:] = c[..., :-1]
    return out


def _up(xp, c):
    """c_{j+1} at j (the entry after; callers multiply by eps_{j+1}, which is 0 at the top)."""
    out = xp.empty_like(c)
    out[..., -1] = 0.0
    out[..., :-1] = c[..., 1:]
    return out


def eth(xp, c, t, j, bar, transpose=False):
    """One spin-raising (bar=False, spin j -> j+1) or lowering (bar=True, spin -j -> -j-1)
    step on coefficients c (..., n_ext) of sin^-j sum c lambda: returns those of
    sin^-(j+1) sum c' lambda; ``transpose`` gives the transposed (= adjoint: the passes have
    real coefficients) step. ``t``: :func:`_device_tables`.

    eth f = -(sin^q (d/dtheta - m/sin) sin^-q f) on spin q, eth-bar with +m/sin and sin^-q;
    with f = sin^-j P and q = +-j both leave -(D - 2 j X -+ m) on the coefficients, where
    D = sin d/dtheta and X = cos theta act on sums of lambda_j as in the module docstring
    (D^T g_j = j eps_{j+1} g_{j+1} - (j+1) eps_j g_{j-1}; X is symmetric).
    """
    fl, fm, eps, eps_next = t[0], t[1], t[2], t[3]
    dn, up = _down(xp, c), _up(xp, c)
    if transpose:
        d = fl * eps_next * up - (fl + 1.0) * eps * dn
    else:
        d = (fl - 1.0) * eps * dn - (fl + 2.0) * eps_next * up
    x = eps * dn + eps_next * up
    return -(d - 2.0 * j * x + (fm if bar else -fm) * c)


def _plus_minus(xp, a, t, spin, step):
    """(P+ a, P- a): coefficients of sum a lam+- as sin^-s sum c lambda (extended layout)."""
    na = a * t[4]
    up, dn = na, na
    for j in range(spin):
        up = step(xp, up, t, j, False)
        dn = step(xp, dn, t, j, True)
    return 0.5 * (up + dn), 0.5 * (up - dn)


def _plus_minus_adjoint(xp, gp, gm, t, spin, step):
    """Transpose of :func:`_plus_minus`: returns P+^T gp + P-^T gm (extended layout)."""
    up = 0.5 * (gp + gm)
    dn = 0.5 * (gp - gm)
    for j in reversed(range(spin)):
        up = step(xp, up, t, j, False, True)
        dn = step(xp, dn, t, j, True, True)
    return (up + dn) * t[4]


def _embed(xp, a, t, nalm_ext, out=None):
    """a (..., nalm) in the extended layout (..., nalm_ext), zero where j > l; into ``out``
    (a view is fine) when given."""
    if out is None:
        out = xp.empty(a.shape[:-1] + (nalm_ext,), dtype=np.complex128)
    out[...] = 0.0
    out[..., t[5]] = a
    return out


def spin_coefficients(alm, spin: int, layout: AlmLayout, xp=np, step=eth, out=None,
                      tables=None):
    """Scalar coefficient sets of a spin-s synthesis.

    alm : (k, 2, nalm) complex128, E (gradient) and B (curl) in ``layout``.
    Returns (k, 2, nalm_ext) complex128 in :func:`extended_layout` (written into ``out`` when
    given, e.g. a view of a larger array): the Q and U sets C with
    Q_m(theta) = sin(theta)^-s sum_j C_Q,jm lambda_jm(theta), and likewise U.
    ``tables``: :func:`chunk_tables` when ``alm`` holds only some orders (then so does the
    result).
    """
    t = _device_tables(xp, layout, spin) if tables is None else tables
    n_ext = t[0].shape[0]
    # E and B travel together through the passes (one launch each on a GPU)
    pe, me = _plus_minus(xp, _embed(xp, alm, t, n_ext), t, spin, step)
    if out is None:
        out = xp.empty((alm.shape[0], 2, n_ext), dtype=np.complex128)
    out[:, 0] = -(pe[:, 0] + 1j * me[:, 1])
    out[:, 1] = -(pe[:, 1] - 1j * me[:, 0])
    return out


def spin_coefficients_adjoint(g, spin: int, layout: AlmLayout, xp=np, step=eth, tables=None):
    """Adjoint of :func:`spin_coefficients`: g (k, 2, nalm_ext) -> (k, 2, nalm) E and B
    (``tables`` as there)."""
    t = _device_tables(xp, layout, spin) if tables is None else tables
    gq, gu = g[:, 0], g[:, 1]
    # C_Q = -(P+ E + i P- B), C_U = -(P+ B - i P- E); conjugate-transposed, E and B together:
    gp = xp.stack([gq, gu], axis=1)
    gm = xp.stack([1j * gu, -1j * gq], axis=1)
    eb = -_plus_minus_adjoint(xp, gp, gm, t, spin, step)
    return xp.ascontiguousarray(eb[..., t[5]])


def ring_factor(geometry, spin: int) -> np.ndarray:
    """sin(theta)^-s of every ring, shape (nrings,) float64; ValueError for rings at a pole."""
    s = np.sin(geometry.theta)
    if np.any(s <= 0.0):
        raise ValueError(f"{geometry!r} has rings at a pole, where spin-{spin} transforms through "
                         "this backend are undefined; use backend='cpu' (ducc0) for this grid")
    return s ** (-float(spin))


def row_scale(xp, geometry, spin, rows):
    """The factor each ring of each row of a coefficient set takes between the Legendre and
    ring steps: (rows, nrings) float64, 1 for a T row (spin 0), sin^-s for the spin rows."""
    def make():
        f = np.ones((rows, geometry.nrings))
        f[rows - 2:] = ring_factor(geometry, spin)
        return xp.asarray(f)
    return _cached((xp.__name__, geometry, spin, rows), make)


def scale_rows(leg, scale):
    """leg (k * rows, nrings, nm) times ``scale`` (rows, nrings) of :func:`row_scale`, row i of
    the batch taking row i % rows: the plain form of what a backend may fuse into its ring
    step."""
    rows = scale.shape[0]
    out = leg.reshape((-1, rows) + leg.shape[1:]) * scale[None, :, :, None]
    return out.reshape(leg.shape)


def synthesis(alm, spin, layout, geometry, alm2leg, leg2map, xp=np, sets=None):
    """Spin-s (and, with 3 rows, polarized) synthesis through a backend's scalar steps.

    alm : (k, 2, nalm) E, B or (k, 3, nalm) T, E, B complex128 (T is spin 0).
    alm2leg(coeffs (n, nalm_ext), layout_ext) -> leg (n, nrings, mmax+1): the scalar Legendre
    step; leg2map(leg, scale) -> maps (n, npix): the ring step of ``scale_rows(leg, scale)``
    (``scale`` from :func:`row_scale`: a backend may fuse the product into its ring pass).
    ``sets(alm)``: the backend's own :func:`coefficient_sets` of ``alm`` (default: the
    NumPy-style passes of ``xp``). One
    call of each serves every row, so a backend that shares its recurrence between the rows of
    a batch shares it for T, Q and U.
    Returns maps (k, 2 or 3, npix) float64: Q, U or I, Q, U.
    """
    k, r, _ = alm.shape
    ext = extended_layout(layout, spin)
    coeffs = sets(alm) if sets else coefficient_sets(alm, spin, layout, xp)
    leg = alm2leg(coeffs.reshape(k * r, ext.size), ext)
    maps = leg2map(leg, row_scale(xp, geometry, spin, r))
    return maps.reshape(k, r, maps.shape[-1])


def coefficient_sets(alm, spin: int, layout: AlmLayout, xp=np, step=eth, tables=None):
    """Every row's scalar coefficient set: alm (k, 2, nalm) E, B or (k, 3, nalm) T, E, B ->
    (k, 2 or 3, nalm_ext) complex128 on :func:`extended_layout` (T embedded as it is, E and B
    through :func:`spin_coefficients`); ``tables`` as there."""
    k, r, _ = alm.shape
    t = _device_tables(xp, layout, spin) if tables is None else tables
    n_ext = t[0].shape[0]
    coeffs = xp.empty((k, r, n_ext), dtype=np.complex128)
    if r == 3:
        _embed(xp, alm[:, 0], t, n_ext, out=coeffs[:, 0])
    spin_coefficients(alm[:, r - 2:], spin, layout, xp, step, out=coeffs[:, r - 2:], tables=t)
    return coeffs


def coefficient_sets_adjoint(g, spin: int, layout: AlmLayout, xp=np, step=eth, tables=None):
    """Adjoint of :func:`coefficient_sets`: g (k, 2 or 3, nalm_ext) -> (k, 2 or 3, nalm)."""
    k, r, _ = g.shape
    t = _device_tables(xp, layout, spin) if tables is None else tables
    out = xp.empty((k, r, t[5].shape[0]), dtype=np.complex128)
    if r == 3:
        out[:, 0] = g[:, 0][..., t[5]]
    out[:, r - 2:] = spin_coefficients_adjoint(g[:, r - 2:], spin, layout, xp, step, tables=t)
    return out


def analysis(maps, spin, layout, geometry, map2leg, leg2alm, xp=np, sets_adjoint=None):
    """Adjoint of :func:`synthesis` (weighted by the quadrature, as the scalar analysis).

    maps : (k, 2, npix) Q, U or (k, 3, npix) I, Q, U float64. map2leg(maps (n, npix), scale)
    -> ``scale_rows`` of the weighted leg (n, nrings, mmax+1); leg2alm(leg, layout_ext) ->
    coeffs (n, nalm_ext). ``sets_adjoint(g)``: the backend's own
    :func:`coefficient_sets_adjoint` of g (default: the NumPy-style passes of ``xp``).
    Returns (k, 2 or 3, nalm) complex128: E, B or T, E, B.
    """
    k, r, npix = maps.shape
    ext = extended_layout(layout, spin)
    leg = map2leg(maps.reshape(k * r, npix), row_scale(xp, geometry, spin, r))
    g = leg2alm(leg, ext).reshape(k, r, ext.size)
    if sets_adjoint:
        return sets_adjoint(g)
    return coefficient_sets_adjoint(g, spin, layout, xp)
