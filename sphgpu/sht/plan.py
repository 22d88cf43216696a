"""The transform plan: a grid, an a_lm layout and a backend, made once and applied many times.

:class:`SHT` holds what every transform of one (grid, lmax, mmax, backend) shares: the
:class:`~sphgpu.RingGeometry`, the :class:`~sphgpu.AlmLayout`, the backend module (resolved
once) and the backend's own plan (:meth:`sphgpu.backends.SHTBackend.prepare`: on the GPU the
ring pairs, recurrence tables and FFT set-up of ``sht/_cuda.py``, one per spin). Its methods
check shapes, dtypes and the kind of array (host or device) and call the backend: they look
at no values, so a transform reused through a plan costs the host nothing beyond the launches.

The healpy-named functions (:mod:`sphgpu.sht.transforms`) are thin wrappers over plans: they
read healpy's arguments, masks and UNSEEN pixels, refuse NaN, apply beams and pixel windows,
and run the same private methods (:func:`plan_for` finds their plan, cached by description).

A plan pickles as its description (nside, lmax, mmax, the grid's recipe, the backend's name),
so Dask sends a few numbers, not arrays; the receiving process rebuilds it once and keeps it
(:func:`rebuild`; :func:`plan_elsewhere` makes one for workers whose backend cannot run here).
"""

from __future__ import annotations

import functools
import hashlib
import weakref

import numpy as np

from .. import backends
from .._kept import Kept
from .._device import array_module_of, as_contiguous, is_device_array, like_input
from .._validate import check_fits_in_memory, check_flag, check_host_array, check_int
from ..alm import AlmLayout
from ..geometry import RingGeometry

__all__ = ["SHT"]


# ----------------------------------------------------------------------------- argument reading
def nside_from_npix(npix: int, name: str = "map") -> int:
    """nside of a HEALPix map with ``npix`` pixels; ValueError naming ``name`` if there is none."""
    nside = int(round((npix / 12) ** 0.5))
    if nside < 1 or 12 * nside * nside != npix:
        raise ValueError(f"{name} has {npix} pixels, which is not 12*nside**2 for any nside "
                         "(pass geometry= for other grids)")
    return nside


def resolve_geometry(nside, geometry, npix=None, name="map") -> RingGeometry:
    """The grid of a transform, from ``nside`` or ``geometry`` (or a map's length, ``npix``)."""
    if geometry is not None:
        if not isinstance(geometry, RingGeometry):
            raise TypeError(f"geometry must be a RingGeometry, got {type(geometry).__name__}")
        if nside is not None and (geometry.kind != "healpix" or geometry.nside != nside):
            raise ValueError(f"nside={nside!r} disagrees with geometry={geometry!r}: give one")
        if npix is not None and npix != geometry.npix:
            raise ValueError(f"{name} has {npix} pixels but the geometry has {geometry.npix}")
        return geometry
    if nside is None:
        if npix is None:
            raise ValueError("give nside (HEALPix) or geometry=")
        nside = nside_from_npix(npix, name)
    nside = check_int("nside", nside, minimum=1)
    if npix is not None and npix != 12 * nside * nside:
        raise ValueError(f"{name} has {npix} pixels but nside={nside} needs {12 * nside * nside}")
    return RingGeometry.healpix(nside)


def shape_kind(name, arr, pol, what):
    """How healpy reads the leading axes of ``arr`` (alm or maps): returns ``(polarized,
    batch_shape)``. With ``pol=True`` (healpy's default) 3 rows (T, E, B or I, Q, U) or shape
    (k, 3, n) are polarized; one row or a 1-D array is spin 0. ``pol=False``: 1-D or a batch
    (k, n) of spin-0 transforms."""
    if not pol:
        if arr.ndim > 2:
            raise ValueError(f"{name} has shape {arr.shape}: with pol=False give one {what} "
                             f"(1-D) or a batch of them (2-D)")
        return False, arr.shape[:-1]
    if arr.ndim == 1 or (arr.ndim == 2 and arr.shape[0] == 1):
        return False, arr.shape[:-1]
    if arr.shape[-2] != 3:
        raise ValueError(
            f"{name} has shape {arr.shape}: with pol=True (the default, as healpy) give 3 rows "
            f"(T, E, B a_lm or I, Q, U maps) or shape (k, 3, n); pass pol=False for a batch of "
            f"spin-0 transforms")
    return True, arr.shape[:-1]


def spin_lead(name, arr):
    """The batch shape of a spin-s field's two rows, ``arr`` (2, n) or (k, 2, n)."""
    if arr.ndim < 2 or arr.shape[-2] != 2:
        raise ValueError(f"{name} has shape {arr.shape}: give 2 rows (shape (2, n)) or a batch "
                         "of shape (k, 2, n)")
    return arr.shape[:-1]


def check_kind(name, a, plan):
    """TypeError naming ``name`` when ``a`` is a device array and ``plan``'s backend takes
    NumPy arrays only."""
    check_host_array(name, a, device_ok=plan.accepts_device_arrays)


def _rows(arr, rows):
    """arr with its batch axes flattened to (k, rows, n) (rows = 0: (k, n))."""
    return arr.reshape((-1, rows, arr.shape[-1]) if rows else (-1, arr.shape[-1]))


def _jacobi(work, iter, analysis, synthesis):
    """healpy's map2alm iterations: one quadrature pass, then ``iter`` corrections from the
    residual map."""
    alm = analysis(work)
    for _ in range(iter):
        alm += analysis(work - synthesis(alm))
    return alm


def _as_input(name, a, complex_):
    """``a`` as a C-contiguous complex128 (a_lm) or float64 (maps) array of its own kind,
    copied only where needed; TypeError naming ``name`` for the wrong kind of number or for a
    masked array (whose mask the plan would not read)."""
    if np.ma.isMaskedArray(a):
        raise TypeError(f"{name} is a numpy.ma array: a plan reads no masks (sphgpu.map2alm "
                        "does, as healpy); pass the data with masked pixels set to 0")
    if not is_device_array(a):
        if a is None or isinstance(a, (str, bytes)):
            raise TypeError(f"{name} must be an array of numbers, got {type(a).__name__}")
        a = np.asarray(a)
    kind = np.dtype(a.dtype).kind
    if complex_ and kind != "c":
        raise TypeError(f"{name} must be complex (complex64 or complex128), got dtype {a.dtype}")
    if not complex_ and kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    return as_contiguous(a, np.complex128 if complex_ else np.float64)


def _check_last(name, arr, n, what):
    if arr.ndim == 0 or arr.shape[-1] != n:
        raise ValueError(f"{name} has shape {arr.shape}, but {what} needs {n} values on its "
                         "last axis")


def _check_out(out, shape, dtype, original, what):
    """``out`` checked against the result it will receive: shape, dtype, and host or device
    as the input (NumPy in, NumPy out; device in, device out)."""
    if out is None:
        return None
    device = is_device_array(out)
    if not device and not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a NumPy or GPU array, got {type(out).__name__}")
    if device != is_device_array(original):
        have, want = ("a GPU", "NumPy") if device else ("a NumPy", "GPU")
        raise TypeError(f"out is {have} array but the {what} will be {want} arrays (device in, "
                        f"device out): give out of the input's kind")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out has shape {tuple(out.shape)} but the {what} have shape "
                         f"{tuple(shape)}")
    if np.dtype(out.dtype) != np.dtype(dtype):
        raise TypeError(f"out must have dtype {np.dtype(dtype).name} for the {what}, got "
                        f"{out.dtype}")
    if not device and not out.flags.writeable:
        raise ValueError("out is read-only")
    return out


def _deliver(result, shape, original, out):
    """The result shaped ``shape``, in the caller's kind, or copied into ``out``."""
    result = result.reshape(shape)
    if out is None:
        return like_input(result, original)
    array_module_of(out).asarray(out)[...] = result
    return out


# ----------------------------------------------------------------------------- the plan
class SHT:
    """A spherical harmonic transform plan: a grid, band limits and a backend, made once and
    applied to any number of maps and a_lm.

    ``sphgpu.alm2map(alm, nside)`` and ``SHT(nside, lmax).alm2map(alm)`` run the same code
    and give the same numbers; the plan skips what a repeated call would redo (resolving the
    grid and the backend, reading healpy's arguments, and looking at the values: NaN and
    ``UNSEEN`` pixels are not searched for, masks are not read, so give finite data), and
    holds the backend's own set-up (the GPU's tables) for as long as it lives. Arrays in,
    same kind out: NumPy gives NumPy, device arrays (CuPy, Numba) give device arrays; each
    method takes ``out=``, an array of the result's shape, dtype and kind that receives it
    (copied from the backend's result). A plan pickles as its :attr:`description`, a few
    numbers, and is made again once per process that receives it (Dask workers).

    Parameters
    ----------
    nside : int, optional
        HEALPix resolution (RING order); give this or ``geometry``.
    lmax : int, optional
        Band limit; the grid's natural one by default (``3*nside - 1`` for HEALPix).
    mmax : int, optional
        Azimuthal limit, <= lmax; lmax by default.
    geometry : RingGeometry, optional
        Any ring grid instead of HEALPix.
    backend : {"auto", "cuda", "cpu", "reference"}, optional
        Where to compute, resolved once here (see :mod:`sphgpu.backends`).

    Raises
    ------
    TypeError, ValueError
        For arguments as :func:`sphgpu.alm2map` refuses them.
    sphgpu.BackendUnavailableError
        For ``backend="cuda"`` where no GPU can run it.

    Examples
    --------
    >>> sht = SHT(nside=64, lmax=127)
    >>> maps = sht.alm2map(alm, pol=False)          # alm: (k, sht.nalm) complex
    >>> back = sht.map2alm(maps, iter=3, pol=False)
    """

    def __init__(self, nside=None, lmax=None, mmax=None, *, geometry=None, backend="auto"):
        geometry = resolve_geometry(nside, geometry)
        layout = AlmLayout(geometry.natural_lmax if lmax is None else lmax, mmax)
        self._setup(geometry, layout, backends.resolve(backend, "sht"), holds=True)

    @classmethod
    def _made(cls, geometry, layout, name, holds, load=True):
        """A plan of a resolved grid, layout and backend name, without reading arguments;
        ``load=False`` leaves the backend's module to the first transform (a plan for Dask
        workers, made where its backend may not run)."""
        self = cls.__new__(cls)
        self._setup(geometry, layout, name, holds, load)
        return self

    def _setup(self, geometry, layout, name, holds, load=True):
        self._geometry = geometry
        self._layout = layout
        self._backend = name
        self._module = backends.load("sht", name) if load else None
        # the backend's plan per spin, made at first use: held by plans made by the user; the
        # public functions' cached plans leave them to the backend's own cache (the GPU's holds
        # a few plans, each up to hundreds of MB of tables at large lmax)
        self._holds = holds
        self._prepared = {}
        self._orders = None

    @property
    def _impl(self):
        """The backend module (imported at the first transform of a plan made for workers)."""
        module = self._module
        if module is None:
            module = self._module = backends.load("sht", self._backend)
        return module

    # ------------------------------------------------------------------ description
    @property
    def geometry(self) -> RingGeometry:
        """The grid."""
        return self._geometry

    @property
    def layout(self) -> AlmLayout:
        """The a_lm layout (healpy's m-major order)."""
        return self._layout

    @property
    def backend(self) -> str:
        """The backend's name: "cuda", "cpu" or "reference"."""
        return self._backend

    @property
    def lmax(self) -> int:
        """Band limit."""
        return self._layout.lmax

    @property
    def mmax(self) -> int:
        """Azimuthal limit."""
        return self._layout.mmax

    @property
    def nside(self) -> int | None:
        """HEALPix resolution, or None for another grid."""
        r = self._geometry.recipe
        return r[1] if r is not None and r[0] == "healpix" else None

    @property
    def npix(self) -> int:
        """Pixels of a map."""
        return self._geometry.npix

    @property
    def nalm(self) -> int:
        """Coefficients of an a_lm set."""
        return self._layout.size

    @property
    def accepts_device_arrays(self) -> bool:
        """Whether the backend takes (and returns) device arrays."""
        return self._impl.ACCEPTS_DEVICE_ARRAYS

    @property
    def description(self) -> tuple:
        """``(nside, lmax, mmax, grid, backend)``: what the plan pickles as. ``grid`` is None
        for HEALPix (``nside`` says it all), the grid's :attr:`~sphgpu.RingGeometry.recipe`
        for the other standard grids, else ``("grid", content hash)`` (the rings' arrays then
        travel too)."""
        return describe(self._geometry, self._layout, self._backend)

    def __reduce__(self):
        desc = self.description
        grid = self._geometry if desc[3] is not None and desc[3][0] == "grid" else None
        return (rebuild, desc + (grid,))

    def __repr__(self):
        where = (f"nside={self.nside}" if self.nside is not None
                 else f"geometry={self._geometry!r}")
        return (f"SHT({where}, lmax={self.lmax}, mmax={self.mmax}, "
                f"backend={self._backend!r})")

    # ------------------------------------------------------------------ the backend's plan
    def _plan_of(self, spin):
        """The backend's plan for spin ``spin`` (None: the backend finds its own)."""
        try:
            return self._prepared[spin]
        except KeyError:
            p = self._impl.prepare(self._layout, self._geometry, spin) if self._holds else None
            self._prepared[spin] = p
            return p

    # ------------------------------------------------------------------ shared bodies
    # The healpy-named functions call these on validated arrays: contiguous complex128 a_lm or
    # float64 maps of the backend's kind, with the plan's sizes.
    def _synthesis(self, arr, rows, spin):
        """Maps (k, npix) (rows = 0) or (k, rows, npix) of ``arr`` (..., nalm), of the input's
        kind; spin-0 rows when ``rows`` is 0, else spin ``spin`` (T, E, B with rows = 3)."""
        impl = self._impl
        if rows:
            return impl.synthesis_spin(_rows(arr, rows), spin, self._layout, self._geometry,
                                       prepared=self._plan_of(spin))
        return impl.synthesis(_rows(arr, 0), self._layout, self._geometry,
                              prepared=self._plan_of(0))

    def _synthesis_spin(self, arr, spin):
        """alm2map_spin's maps (k, 2, npix) of ``arr`` (..., 2, nalm): spin 0 gives the maps
        of -G and -C, as healpy."""
        if spin == 0:
            return -self._synthesis(arr, 0, 0)
        return self._synthesis(arr, 2, spin)

    def _analysis(self, arr, rows, spin, iter, host, factor=None):
        """a_lm (k, nalm) or (k, rows, nalm) of maps ``arr`` (..., npix): one quadrature pass
        and ``iter`` Jacobi iterations on the backend's device (one copy in, one out), each
        map times ``factor`` (npix,) first when given; NumPy when ``host``."""
        impl, layout, geometry = self._impl, self._layout, self._geometry
        work = impl.to_device(_rows(arr, rows))
        if factor is not None:
            work = work * array_module_of(work).asarray(factor)
        pl = self._plan_of(spin if rows else 0)
        if rows:
            alm = _jacobi(
                work, iter,
                lambda m: impl.analysis_spin(m, spin, layout, geometry, prepared=pl),
                lambda a: impl.synthesis_spin(a, spin, layout, geometry, prepared=pl))
        else:
            alm = _jacobi(work, iter,
                          lambda m: impl.analysis(m, layout, geometry, prepared=pl),
                          lambda a: impl.synthesis(a, layout, geometry, prepared=pl))
        return impl.to_host(alm) if host else alm

    def _der1(self, arr):
        """alm2map_der1's maps (k, 3, npix): the map and its two derivatives, through one
        spin-1 synthesis of the rows a_lm and sqrt(l(l+1)) a_lm."""
        batch = _rows(arr, 0)
        xp = array_module_of(batch)
        ell = xp.asarray(self._layout.lm()[0].astype(np.float64))
        rows = xp.zeros((batch.shape[0], 3, self._layout.size), dtype=np.complex128)
        rows[:, 0] = batch
        rows[:, 1] = batch * xp.sqrt(ell * (ell + 1.0))
        return self._synthesis(rows, 3, 1)

    # ------------------------------------------------------------------ transforms
    def _read(self, name, a, complex_, n, what):
        check_kind(name, a, self)
        arr = _as_input(name, a, complex_)
        _check_last(name, arr, n, what)
        return arr

    def _check_memory(self, arr, n, itemsize, what):
        check_fits_in_memory(itemsize * n * max(1, arr.size // arr.shape[-1]), what,
                             f"{self!r}")

    def alm2map(self, alm, *, pol=True, out=None):
        """Maps of spherical-harmonic coefficients (:func:`sphgpu.alm2map` without beams).

        Parameters
        ----------
        alm : array, shape (nalm,), (3, nalm), (k, nalm) or (k, 3, nalm), complex
            Coefficients in this plan's layout; NumPy or (GPU backend) device array. With
            ``pol=True`` three rows are T, E, B and give I, Q, U maps.
        pol : bool, optional
            healpy's ``pol``: True (default) reads 3 rows as T, E, B; False, a 2-D array is a
            batch of spin-0 sets.
        out : array, optional
            Where to write the maps: float64, the result's shape, NumPy for NumPy input and a
            device array for device input.

        Returns
        -------
        array, float64, shape (npix,), (3, npix), (k, npix) or (k, 3, npix)
            ``out`` when given.
        """
        arr = self._read("alm", alm, True, self.nalm, f"lmax={self.lmax}, mmax={self.mmax}")
        polarized, lead = shape_kind("alm", arr, check_flag("pol", pol), "a_lm set")
        shape = lead + (self.npix,)
        out = _check_out(out, shape, np.float64, alm, "maps")
        self._check_memory(arr, self.npix, 8, "the maps")
        return _deliver(self._synthesis(arr, 3 if polarized else 0, 2), shape, alm, out)

    def map2alm(self, maps, *, iter=3, pol=True, out=None):
        """Coefficients of maps (:func:`sphgpu.map2alm` without HEALPix's weights): one
        quadrature pass and ``iter`` Jacobi iterations, as healpy.

        Parameters
        ----------
        maps : array, shape (npix,), (3, npix), (k, npix) or (k, 3, npix), real
            Maps on this plan's grid (finite: UNSEEN and masks are not read). With
            ``pol=True`` three rows are I, Q, U and give T, E, B.
        iter : int, optional
            Jacobi iterations (3, as healpy).
        pol : bool, optional
            As in :meth:`alm2map`.
        out : array, optional
            Where to write the a_lm: complex128, the result's shape, of the input's kind.

        Returns
        -------
        array, complex128, shape (nalm,), (3, nalm), (k, nalm) or (k, 3, nalm)
            ``out`` when given.
        """
        arr = self._read("maps", maps, False, self.npix, f"{self._geometry!r}")
        polarized, lead = shape_kind("maps", arr, check_flag("pol", pol), "map")
        iter = check_int("iter", iter, minimum=0)
        shape = lead + (self.nalm,)
        out = _check_out(out, shape, np.complex128, maps, "a_lm")
        self._check_memory(arr, self.nalm, 16, "the a_lm")
        alm = self._analysis(arr, 3 if polarized else 0, 2, iter, not is_device_array(maps))
        return _deliver(alm, shape, maps, out)

    def alm2map_spin(self, alm, spin, *, out=None):
        """The two real maps of a spin-s field from its gradient (E) and curl (B)
        coefficients (:func:`sphgpu.alm2map_spin`).

        Parameters
        ----------
        alm : array, shape (2, nalm) or (k, 2, nalm), complex
            Gradient and curl coefficients in this plan's layout.
        spin : int
            The spin s >= 0 (0: the maps of -G and -C, as healpy).
        out : array, optional
            Where to write the maps: float64, the result's shape, of the input's kind.

        Returns
        -------
        array, float64, shape (2, npix) or (k, 2, npix)
            ``out`` when given.
        """
        arr = self._read("alm", alm, True, self.nalm, f"lmax={self.lmax}, mmax={self.mmax}")
        lead = spin_lead("alm", arr)
        spin = check_int("spin", spin, minimum=0)
        shape = lead + (self.npix,)
        out = _check_out(out, shape, np.float64, alm, "maps")
        self._check_memory(arr, self.npix, 8, "the maps")
        return _deliver(self._synthesis_spin(arr, spin), shape, alm, out)

    def map2alm_spin(self, maps, spin, *, iter=0, out=None):
        """Gradient (E) and curl (B) coefficients of the two real maps of a spin-s field
        (:func:`sphgpu.map2alm_spin`).

        Parameters
        ----------
        maps : array, shape (2, npix) or (k, 2, npix), real
            The two maps (Q, U for s = 2) on this plan's grid.
        spin : int
            The spin s >= 0 (0: minus the scalar coefficients of each map, as healpy).
        iter : int, optional
            Jacobi iterations (0, as healpy's ``map2alm_spin``).
        out : array, optional
            Where to write the a_lm: complex128, the result's shape, of the input's kind.

        Returns
        -------
        array, complex128, shape (2, nalm) or (k, 2, nalm)
            ``out`` when given.
        """
        arr = self._read("maps", maps, False, self.npix, f"{self._geometry!r}")
        lead = spin_lead("maps", arr)
        spin = check_int("spin", spin, minimum=0)
        iter = check_int("iter", iter, minimum=0)
        shape = lead + (self.nalm,)
        out = _check_out(out, shape, np.complex128, maps, "a_lm")
        self._check_memory(arr, self.nalm, 16, "the a_lm")
        host = not is_device_array(maps)
        if spin == 0:
            alm = -self._analysis(arr, 0, 0, iter, host)
        else:
            alm = self._analysis(arr, 2, spin, iter, host)
        return _deliver(alm, shape, maps, out)

    def alm2map_der1(self, alm, *, out=None):
        """A map and its first derivatives (:func:`sphgpu.alm2map_der1`).

        Parameters
        ----------
        alm : array, shape (nalm,) or (k, nalm), complex
            Coefficients of a scalar field in this plan's layout.
        out : array, optional
            Where to write the maps: float64, the result's shape, of the input's kind.

        Returns
        -------
        array, float64, shape (3, npix) or (k, 3, npix)
            The map, d/dtheta and (1/sin theta) d/dphi of it; ``out`` when given.
        """
        arr = self._read("alm", alm, True, self.nalm, f"lmax={self.lmax}, mmax={self.mmax}")
        if arr.ndim > 2:
            raise ValueError(f"alm has shape {arr.shape}: give one a_lm set (1-D) or a batch "
                             "of them (2-D)")
        shape = arr.shape[:-1] + (3, self.npix)
        out = _check_out(out, shape, np.float64, alm, "maps")
        self._check_memory(arr, 3 * self.npix, 8, "the maps")
        return _deliver(self._der1(arr), shape, alm, out)

    # ------------------------------------------------------------------ the two steps
    def _all_orders(self):
        """(mvals, astart) of every order 0..mmax in the plan's layout (the stages' arguments
        for whole transforms)."""
        if self._orders is None:
            self._orders = (np.arange(self.mmax + 1, dtype=np.int64), self._layout.mstart())
        return self._orders

    def alm2leg(self, alm, *, out=None):
        """The Legendre step of a synthesis (:func:`sphgpu.sht.stages.alm2leg` of every
        order): Delta_m(theta) = sum_l a_lm lambda_lm(cos theta) on every ring.

        Parameters
        ----------
        alm : array, shape (..., nalm), complex
            Coefficient sets in this plan's layout.
        out : array, optional
            Where to write the result: complex128, its shape, of the input's kind.

        Returns
        -------
        array, complex128, shape (..., nrings, mmax + 1)
            Column m is order m.
        """
        arr = self._read("alm", alm, True, self.nalm, f"lmax={self.lmax}, mmax={self.mmax}")
        shape = arr.shape[:-1] + (self._geometry.nrings, self.mmax + 1)
        out = _check_out(out, shape, np.complex128, alm, "Legendre step's values")
        leg = self._impl.stage_alm2leg(_rows(arr, 0), self._layout, self._geometry,
                                       *self._all_orders())
        return _deliver(leg, shape, alm, out)

    def leg2alm(self, leg, *, out=None):
        """The adjoint Legendre step (:func:`sphgpu.sht.stages.leg2alm` of every order):
        a_lm = sum over rings of leg[ring, m] lambda_lm(cos theta_ring).

        Parameters
        ----------
        leg : array, shape (..., nrings, mmax + 1), complex
            Values per ring and order.
        out : array, optional
            Where to write the a_lm: complex128, their shape, of the input's kind.

        Returns
        -------
        array, complex128, shape (..., nalm)
        """
        arr = self._read_leg(leg)
        shape = arr.shape[:-2] + (self.nalm,)
        out = _check_out(out, shape, np.complex128, leg, "a_lm")
        mvals, astart = self._all_orders()
        alm = self._impl.stage_leg2alm(arr.reshape((-1,) + arr.shape[-2:]), self._layout,
                                       self._geometry, mvals, astart, self.nalm)
        return _deliver(alm, shape, leg, out)

    def leg2map(self, leg, *, out=None):
        """The ring step of a synthesis (:func:`sphgpu.sht.stages.leg2map`): each ring's
        values from its Delta_m by FFT.

        Parameters
        ----------
        leg : array, shape (..., nrings, mmax + 1), complex
            Values per ring and order (column m is order m).
        out : array, optional
            Where to write the maps: float64, their shape, of the input's kind.

        Returns
        -------
        array, float64, shape (..., npix)
        """
        arr = self._read_leg(leg)
        shape = arr.shape[:-2] + (self.npix,)
        out = _check_out(out, shape, np.float64, leg, "maps")
        maps = self._impl.stage_leg2map(arr.reshape((-1,) + arr.shape[-2:]), self._geometry)
        return _deliver(maps, shape, leg, out)

    def map2leg(self, maps, *, quadrature=True, out=None):
        """The ring step of an analysis (:func:`sphgpu.sht.stages.map2leg`):
        ``leg[ring, m] = w * sum_j map_j e^{-i m phi_j}`` over each ring's pixels.

        Parameters
        ----------
        maps : array, shape (..., npix), real
            Maps on this plan's grid.
        quadrature : bool, optional
            Weigh by the pixels' quadrature weights ``w`` (True, as map2alm needs); False
            gives the plain adjoint of :meth:`leg2map`.
        out : array, optional
            Where to write the result: complex128, its shape, of the input's kind.

        Returns
        -------
        array, complex128, shape (..., nrings, mmax + 1)
        """
        arr = self._read("maps", maps, False, self.npix, f"{self._geometry!r}")
        quadrature = check_flag("quadrature", quadrature)
        shape = arr.shape[:-1] + (self._geometry.nrings, self.mmax + 1)
        out = _check_out(out, shape, np.complex128, maps, "Legendre step's values")
        leg = self._impl.stage_map2leg(_rows(arr, 0), self._geometry, self.mmax, quadrature)
        return _deliver(leg, shape, maps, out)

    def _read_leg(self, leg):
        check_kind("leg", leg, self)
        arr = _as_input("leg", leg, True)
        want = (self._geometry.nrings, self.mmax + 1)
        if arr.ndim < 2 or tuple(arr.shape[-2:]) != want:
            raise ValueError(f"leg has shape {arr.shape}, but this plan's steps need "
                             f"(..., {want[0]}, {want[1]}) (rings, orders 0..mmax)")
        return arr


# ----------------------------------------------------------------------------- finding plans
@functools.lru_cache(maxsize=16)
def _cached(geometry, lmax, mmax, name):
    # keyed by the grid object (geometries hash by identity; HEALPix's are kept per nside)
    return SHT._made(geometry, AlmLayout(lmax, mmax), name, holds=False)


def plan_for(geometry: RingGeometry, layout: AlmLayout, backend="auto") -> SHT:
    """The plan of a healpy-named call: resolved ``backend`` (warned about and refused as
    :func:`sphgpu.backends.resolve` does), cached by (grid, lmax, mmax, backend). These plans
    leave the backend's own set-up to the backend's cache."""
    return _cached(geometry, layout.lmax, layout.mmax, backends.resolve(backend, "sht"))


def plan_elsewhere(geometry: RingGeometry, layout: AlmLayout, backend: str) -> SHT:
    """A plan to send to the processes that run it (Dask workers): ``backend`` a concrete name
    (:func:`sphgpu.backends.resolve_remote`), not looked for here; it pickles as its
    description, and its backend is loaded where it runs."""
    return SHT._made(geometry, layout, backends.info(backend).name, holds=True, load=False)


def describe(geometry: RingGeometry, layout: AlmLayout, backend: str) -> tuple:
    """``(nside, lmax, mmax, grid, backend)``, :attr:`SHT.description` of a plan."""
    r = geometry.recipe
    if r is not None and r[0] == "healpix":
        return (r[1], layout.lmax, layout.mmax, None, backend)
    return (None, layout.lmax, layout.mmax, r or ("grid", _grid_token(geometry)), backend)


#: grid hashes of geometries without a recipe, computed once per object
_TOKENS: "weakref.WeakKeyDictionary[RingGeometry, str]" = weakref.WeakKeyDictionary()


def _grid_token(g) -> str:
    token = _TOKENS.get(g)
    if token is None:
        h = hashlib.sha1(f"{g.kind}|{g.nside}|{g.pixel_offset}".encode())
        for a in (g.theta, g.phi0, g.nphi, g.ringstart, g.weight):
            h.update(np.ascontiguousarray(a).tobytes())
        token = _TOKENS[g] = h.hexdigest()
    return token


#: plans rebuilt from descriptions in this process (a Dask worker): a few, each holding its
#: backend's set-up
_REBUILT = Kept(4)


def rebuild(nside, lmax, mmax, grid, backend, geometry=None) -> SHT:
    """The plan of a :attr:`SHT.description` (what unpickling calls), made once per process
    and description and then reused, so that a worker keeps one plan, and on a GPU one set of
    tables, for every task that ships it. ``geometry``: the grid itself where its description
    is a content hash."""
    def make():
        if nside is not None:
            g = RingGeometry.healpix(nside)
        elif grid[0] == "grid":
            g = geometry
        else:
            g = RingGeometry.from_recipe(grid)
        return SHT._made(g, AlmLayout(lmax, mmax), backends.info(backend).name, holds=True,
                         load=False)

    return _REBUILT.get((nside, lmax, mmax, grid, backend), make)
