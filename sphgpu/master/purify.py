"""Pure-B pseudo-a_lm of a masked spin-2 field (Smith 2006; Grain, Tristram & Stompor 2009).

A mask W cut into a polarized sky leaks E into B: the B coefficients of W (Q + iU) hold E
power, which on a cut sky can exceed a primordial B signal by orders of magnitude. The pure
estimator moves the spin derivatives that separate B from E off the sky and onto the window.

Conventions (healpy's, which the package follows; :mod:`sphgpu.sht`): P = Q + iU is a spin-2
field with P = sum 2a_lm 2Y_lm, P* = sum -2a_lm -2Y_lm, and E_lm = -(2a_lm + -2a_lm) / 2,
B_lm = i (2a_lm - -2a_lm) / 2. A spin-s field's gradient and curl coefficients G, C
(``alm2map_spin``/``map2alm_spin``) are sa_lm = -(G + iC), -sa_lm = -(-1)^s (G - iC). The
spin-raising and lowering operators are Goldberg's (Zaldarriaga & Seljak 1997):

    edth f = -sin^s(theta) (d_theta + i d_phi / sin theta) (sin^-s(theta) f),
    edth sY_lm = sqrt((l - s)(l + s + 1)) s+1Y_lm,
    edth-bar sY_lm = -sqrt((l + s)(l - s + 1)) s-1Y_lm,

so edth-bar^2 P - edth^2 P* = -2i sum N_l B_lm Y_lm with N_l = sqrt((l + 2)! / (l - 2)!), a
scalar that holds B alone. The pure-B coefficients weight that scalar with the window,

    B^pure_lm = (i / (2 N_l)) int W Y*_lm (edth-bar^2 P - edth^2 P*) dOmega,

and two integrations by parts (exact on the sphere for a twice differentiable W; no boundary
term) put the derivatives on W Y*_lm, which gives, with the window's spin-1 and spin-2
derivatives

    edth W = D1 + i D2 = -(dW/dtheta + i dW/dphi / sin theta),
    edth^2 W = X1 + i X2,

    B^pure_lm = B~_lm                                                  (spin 2: W Q, W U)
              + 2 / sqrt((l - 1)(l + 2)) C1_lm                          (spin 1)
              - sqrt((l - 2)! / (l + 2)!) a_lm[X1 U - X2 Q]              (spin 0)

where B~ is the curl coefficient of the masked field (W Q, W U) (the standard pseudo-B),
C1 the curl coefficient of the spin-1 field (D1 Q + D2 U, D1 U - D2 Q) = edth-bar W P, and
a_lm[f] = int f Y*_lm the scalar analysis (2 / sqrt((l-1)(l+2)) = 2 sqrt(l(l+1)) sqrt((l-2)! /
(l+2)!), Smith's factor of the spin-1 term). W's derivatives come from its harmonic
coefficients w_lm (``lmax_mask``, default 3 nside - 1) through the package's own spin
transforms: edth W has gradient coefficients -sqrt(l(l+1)) w_lm (``alm2map_der1``), edth^2 W
the gradient coefficients -N_l w_lm (``alm2map_spin``, spin 2); both with no curl.

E^pure would need the same for E; it is not computed: E is the standard pseudo-E of W P.

The first form shows what the estimator measures: B^pure_lm = a_lm[W beta] / N_l with beta =
sum N_l B_lm Y_lm, whatever the E modes are. Its coupling matrices (see
:func:`sphgpu.master.coupling_matrix` with ``purify_b=True``) follow from that exactly.

The window must vanish with its first derivative where the sky ends (an apodized mask:
:func:`sphgpu.master.apodize_mask`, "C1", "C2" or "Smooth", over several pixels): a binary
mask has no derivatives, and a steep one leaks E through the band-limited derivative maps.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._device import array_module_of as _array_module
from .._device import is_device_array, to_host
from .._validate import as_maps, check_int
from ..alm import AlmLayout
from ..geometry import RingGeometry
from ..sht import alm2cl, alm2map_der1, alm2map_spin, map2alm, map2alm_spin
from .coupling import _mask_map, require_apodized

__all__ = ["pseudo_alm_spin2", "pseudo_cl_spin2", "mask_derivatives", "SMOOTH_TOL"]

#: largest difference, relative to the mask's maximum, between a mask and the resynthesis of
#: its harmonic coefficients to lmax_mask before purification warns that the mask is too steep
#: (measured at nside 16-64, 3 nside - 1: binary masks 0.16-0.17; "C1"/"C2" apodization over
#: 2 pixels 0.04-0.06, over 4 pixels 0.03, "Smooth" 0.004)
SMOOTH_TOL = 0.1


def _window(mask, geometry, name="mask", keep_device=False):
    """The window as a float64 map and its grid: on the host, or where it is with
    ``keep_device`` (a HEALPix window only)."""
    if geometry is None:
        m, nside = _mask_map(mask, name, keep_device)
        return m, RingGeometry.healpix(nside)
    if not isinstance(geometry, RingGeometry):
        raise TypeError(f"geometry must be a RingGeometry, got {type(geometry).__name__}")
    m = np.asarray(mask.get() if is_device_array(mask) and hasattr(mask, "get") else mask)
    if m.dtype.kind not in "biuf" or m.ndim != 1 or m.size != geometry.npix:
        raise ValueError(f"{name} must be one real map of the geometry's {geometry.npix} "
                         f"pixels, got shape {m.shape}, dtype {m.dtype}")
    m = m.astype(np.float64)
    if not np.all(np.isfinite(m)) or np.any(m < 0) or not np.any(m > 0):
        raise ValueError(f"{name} must be finite, non-negative and not zero everywhere")
    return m, geometry


def _lmax_mask(lmax_mask, geometry):
    if lmax_mask is None:
        return geometry.natural_lmax              # 3 nside - 1 for HEALPix
    return check_int("lmax_mask", lmax_mask, minimum=0)


def _derivatives(m, geometry, lmax_mask, iter, backend, xp, name="mask", warn=True):
    """edth W and edth^2 W (each as two real maps) from the window's harmonic coefficients,
    on the module ``xp``; warns when the resynthesis misses the mask by more than SMOOTH_TOL."""
    mm = xp.asarray(m)
    w = map2alm(mm, lmax_mask, iter=iter, backend=backend, geometry=geometry)
    l = AlmLayout(lmax_mask).lm()[0].astype(np.float64)
    # alm2map_der1: W, dW/dtheta, dW/dphi / sin(theta); edth W = -(the last two)
    smooth, dth, dph = alm2map_der1(w, lmax=lmax_mask, backend=backend, geometry=geometry)
    nl = xp.asarray(np.sqrt(np.maximum((l + 2.0) * (l + 1.0) * l * (l - 1.0), 0.0)))
    x1, x2 = alm2map_spin(xp.stack([-nl * w, xp.zeros_like(w)]), spin=2, lmax=lmax_mask,
                          backend=backend, geometry=geometry)
    if warn:
        miss = float(xp.max(xp.abs(smooth - mm))) / float(m.max())
        if miss > SMOOTH_TOL:
            warnings.warn(
                f"{name} is not smooth at the scale of lmax_mask={lmax_mask}: its harmonic "
                f"resynthesis misses it by {miss:.2g} of its maximum (> {SMOOTH_TOL}), so "
                "purification will leak E into B; apodize it over more pixels "
                "(sphgpu.master.apodize_mask)", UserWarning, stacklevel=3)
    return -dth, -dph, x1, x2


def mask_derivatives(mask, *, lmax_mask: int | None = None, iter: int = 3,
                     backend: str = "auto", geometry=None, warn: bool = False):
    """The spin-1 and spin-2 derivatives of a window, edth W and edth^2 W (Goldberg's edth).

    edth W = -(dW/dtheta + i dW/dphi / sin theta) and edth^2 W = (d_theta^2 - cot theta
    d_theta - d_phi^2 / sin^2 theta) W + (2i / sin theta) (d_theta d_phi - cot theta d_phi) W,
    both computed from the window's harmonic coefficients to ``lmax_mask`` (gradient
    coefficients -sqrt(l(l+1)) w_lm and -sqrt((l+2)!/(l-2)!) w_lm, no curl).

    Parameters
    ----------
    mask : array_like, shape (npix,)
        The window: a HEALPix map (RING) of non-negative weights, or a map on ``geometry``.
    lmax_mask : int, optional
        Band limit of the window's coefficients (default 3 nside - 1; a ring grid's natural
        band limit with ``geometry``).
    iter : int
        Jacobi iterations of the window's analysis (healpy's ``iter``).
    backend : {"auto", "cuda", "cpu", "reference"}
        Backend of the transforms.
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix.
    warn : bool
        Warn (UserWarning), as :func:`pseudo_alm_spin2` does, when the window's harmonic
        resynthesis misses it by more than :data:`SMOOTH_TOL` (too steep for purification).

    Returns
    -------
    ndarray, shape (2, 2, npix), float64
        ``[0]`` the real and imaginary parts of edth W, ``[1]`` those of edth^2 W; a device
        array for a device ``mask``.
    """
    m, geometry = _window(mask, geometry)
    xp = _array_module(mask)
    lw = _lmax_mask(lmax_mask, geometry)
    d1, d2, x1, x2 = _derivatives(m, geometry, lw, iter, backend, xp, warn=bool(warn))
    return xp.stack([xp.stack([d1, d2]), xp.stack([x1, x2])])


def _given_derivatives(derivatives, npix, xp):
    """``derivatives`` (:func:`mask_derivatives`'s (2, 2, npix)) checked, on the module ``xp``."""
    d = derivatives if is_device_array(derivatives) else np.asarray(derivatives)
    if d.shape != (2, 2, npix) or d.dtype != np.float64:
        raise ValueError(f"derivatives must be mask_derivatives' float64 array of shape "
                         f"(2, 2, {npix}), got shape {d.shape}, dtype {d.dtype}")
    return np.asarray(to_host(d)) if xp is np else xp.asarray(d)


def _pixels(name, a, npix):
    arr, _ = as_maps(name, a, max_ndim=2)
    if arr.shape[-1] != npix:
        raise ValueError(f"{name} must have the mask's {npix} pixels, got shape {arr.shape}")
    return arr


def pseudo_alm_spin2(q, u, mask, lmax: int | None = None, *, purify_b: bool = False,
                     lmax_mask: int | None = None, iter: int = 3, backend: str = "auto",
                     geometry=None, derivatives=None):
    """E and B pseudo-a_lm of a masked spin-2 field, B purified on request (Smith 2006).

    Without purification these are the coefficients of the masked maps, ``map2alm_spin([W Q,
    W U], 2)``. With ``purify_b=True`` B is the pure-B estimate (module docstring of
    :mod:`sphgpu.master.purify`: the conventions, the derivation and the formula)

        B^pure_lm = B~_lm + 2 / sqrt((l-1)(l+2)) C1_lm - sqrt((l-2)!/(l+2)!) a_lm[X1 U - X2 Q]

    which holds no E at all in exact arithmetic (a_lm[W beta] / N_l, beta = sum N_l B_lm
    Y_lm), and whose pseudo-spectra :func:`sphgpu.master.coupling_matrix` with
    ``purify_b=True`` couples exactly. On a HEALPix grid the quadrature of the products is
    not exact, so some E remains, orders of magnitude below the standard pseudo-B's leakage
    for a well-apodized mask. E is never purified: it is the standard pseudo-E.

    The window must be apodized: vanish, with its first derivative, where the sky ends
    (:func:`sphgpu.master.apodize_mask`). A binary mask raises ValueError; a mask that its
    harmonic coefficients to ``lmax_mask`` miss by more than :data:`SMOOTH_TOL` of its
    maximum (an apodization over fewer than about two pixels) warns.

    Where the sky is read: the derivative maps of the window are band-limited (``lmax_mask``),
    so near the mask's edge they ring, weakly, into the region where the mask is 0, and q, u
    are read there with those small weights. That is what makes the estimator match its
    coupling matrix: on simulated full skies (nside 32 and 64, "C2" masks of 5 and 10 deg,
    l >= 10) the pure pseudo-BB of an E-only sky was a median 4e-5 to 7e-5 of the standard
    one, at most 1.2e-3. For data, give 0 (or UNSEEN, or a ``numpy.ma`` mask, which count as
    0) where the sky was not observed: the ringing then meets no sky, the estimator is
    slightly off its exact form, and that ratio rose to a median 1e-2 (at most 0.03 with the
    10 deg mask, 0.13 with the 5 deg one at nside 64; "Smooth" apodization: 1e-3, at most
    6e-3), with the lowest bandpower (l < 10) biased. HEALPix analysis to 3 nside - 1 leaves
    the window's coefficients inexact: ``iter=10`` instead of 3 took the full-sky median
    above to 6.5e-6, at most 5.9e-4 (nside 32; give the same ``iter`` to
    :func:`~sphgpu.master.coupling_matrix`).

    Parameters
    ----------
    q, u : array, shape (npix,) or (k, npix), float
        The Stokes Q and U maps, not multiplied by the mask (RING HEALPix, healpy's
        polarization convention); a leading k is a batch of fields sharing the mask. NumPy
        or device arrays; UNSEEN and ``numpy.ma`` pixels count as 0.
    mask : array_like, shape (npix,)
        The window W: non-negative, apodized for ``purify_b=True``; NumPy or a device array
        (checked where it is).
    lmax : int, optional
        Band limit of the returned coefficients (default 3 nside - 1).
    purify_b : bool
        Return pure B instead of the standard pseudo-B.
    lmax_mask : int, optional
        Band limit of the window's coefficients that give its derivatives (default 3 nside -
        1; a ring grid's natural band limit with ``geometry``).
    iter : int
        Jacobi iterations of every analysis (healpy's ``iter``; 3 as ``anafast``).
    backend : {"auto", "cuda", "cpu", "reference"}
        Backend of the transforms (device arrays stay on the device).
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix (a Gauss-Legendre grid makes the quadrature exact).
    derivatives : array, shape (2, 2, npix), float64, optional
        With ``purify_b``: :func:`mask_derivatives` of this mask (same ``lmax_mask``, ``iter``
        and backend), made once for many calls, which then skip the window's three
        transforms; by default each call makes them.

    Returns
    -------
    array, shape (2, nalm) or (k, 2, nalm), complex128
        E and B (pure B with ``purify_b``) coefficients in healpy's m-major order,
        nalm for ``lmax``; zero for l < 2.

    Raises
    ------
    ValueError
        A mask that is not a map (wrong size, negative, NaN, zero everywhere); a binary mask
        with ``purify_b=True``; q and u of different shapes or not of the mask's size, or
        NaN or infinite where not masked (UNSEEN or ``numpy.ma``); ``derivatives`` not of
        shape (2, 2, npix).
    TypeError
        ``purify_b`` not a bool; q and u one on the device, the other not.

    Examples
    --------
    >>> mask = sphgpu.master.apodize_mask(binary, 10.0, apotype="C2")
    >>> eb = pseudo_alm_spin2(q, u, mask, purify_b=True)     # (2, nalm): E, pure B
    """
    # a device window stays there: a Monte Carlo batch passes the plan's device copy, whose
    # checks are then a few reductions instead of two passes over a host map and an upload
    # (0.2 s and 400 MB a batch at nside 2048)
    m, geometry = _window(mask, geometry, keep_device=True)
    npix = geometry.npix
    qq = _pixels("q", q, npix)
    uu = _pixels("u", u, npix)
    if qq.shape != uu.shape:
        raise ValueError(f"q and u must have the same shape, got {qq.shape} and {uu.shape}")
    if is_device_array(qq) != is_device_array(uu):
        raise TypeError("q and u must both be NumPy arrays or both device arrays")
    if not isinstance(purify_b, (bool, np.bool_)):
        raise TypeError(f"purify_b must be True or False, got {purify_b!r}")
    if purify_b:
        require_apodized(m, "mask")
    xp = _array_module(qq)
    lmax = geometry.natural_lmax if lmax is None else check_int("lmax", lmax, minimum=0)
    iter = check_int("iter", iter, minimum=0)
    m = np.asarray(to_host(m)) if xp is np else m
    w = xp.asarray(m)
    eb = map2alm_spin(xp.stack([w * qq, w * uu], axis=-2), 2, lmax, iter=iter,
                      backend=backend, geometry=geometry)
    if not purify_b:
        return eb
    if derivatives is None:
        lw = _lmax_mask(lmax_mask, geometry)
        d1, d2, x1, x2 = _derivatives(m, geometry, lw, iter, backend, xp)
    else:
        (d1, d2), (x1, x2) = _given_derivatives(derivatives, npix, xp)
    # the derivative maps are those of the band-limited window: they ring, weakly, where the
    # mask is 0, and the sky is read there. Cutting them to the mask's support (or a sky of 0
    # there) makes the estimator inconsistent with its coupling: 100 times more E leaks
    # (the E-only test of tests/master/test_purify.py measures both)
    spin1 = map2alm_spin(xp.stack([d1 * qq + d2 * uu, d1 * uu - d2 * qq], axis=-2), 1, lmax,
                         iter=iter, backend=backend, geometry=geometry)
    spin0 = map2alm(x1 * uu - x2 * qq, lmax, iter=iter, pol=False, backend=backend,
                    geometry=geometry)
    l = AlmLayout(lmax).lm()[0].astype(np.float64)
    big = l >= 2
    lc = np.where(big, l, 2.0)
    f1 = np.where(big, 2.0 / np.sqrt((lc - 1.0) * (lc + 2.0)), 0.0)
    f0 = np.where(big, 1.0 / np.sqrt((lc + 2.0) * (lc + 1.0) * lc * (lc - 1.0)), 0.0)
    out = xp.array(eb, copy=True)
    out[..., 1, :] = eb[..., 1, :] + xp.asarray(f1) * spin1[..., 1, :] - xp.asarray(f0) * spin0
    return out


def pseudo_cl_spin2(q, u, mask, lmax: int | None = None, *, purify_b: bool = False,
                    lmax_mask: int | None = None, iter: int = 3, backend: str = "auto"):
    """Pseudo-spectra EE, EB, BE, BB of a masked spin-2 field (B purified on request), on the
    stacking that :class:`sphgpu.master.Workspace` decouples for spins (2, 2).

    Parameters
    ----------
    q, u : array, shape (npix,) or (k, npix), float
        Stokes Q and U maps (RING HEALPix), unmasked; a leading k is a batch.
    mask : array_like, shape (npix,)
        The window (apodized for ``purify_b=True``; see :func:`pseudo_alm_spin2`).
    lmax : int, optional
        Last multipole (default 3 nside - 1).
    purify_b : bool
        Pure B (Smith 2006); decouple with ``coupling_matrix(..., purify_b=True)``.
    lmax_mask : int, optional
        Band limit of the window's derivatives (default 3 nside - 1).
    iter : int
        Jacobi iterations of the analyses.
    backend : {"auto", "cuda", "cpu", "reference"}
        Backend of the transforms.

    Returns
    -------
    array, shape (4, lmax + 1) or (k, 4, lmax + 1), float64
        EE, EB, BE, BB (EB = BE for one field); device in, device out.

    Raises
    ------
    ValueError
        As :func:`pseudo_alm_spin2`.
    """
    eb = pseudo_alm_spin2(q, u, mask, lmax, purify_b=purify_b, lmax_mask=lmax_mask, iter=iter,
                          backend=backend)
    xp = _array_module(eb)
    cl = alm2cl(eb)                       # (..., 3, lmax + 1): EE, BB, EB (by diagonal)
    return xp.stack([cl[..., 0, :], cl[..., 2, :], cl[..., 2, :], cl[..., 1, :]], axis=-2)
