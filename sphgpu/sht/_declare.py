"""What :mod:`sphgpu.sht` declares to the backend registry (:mod:`sphgpu.backends`): the
protocol its backend modules implement, which backends it has and its Dask form.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..backends import Capability

__all__ = ["SHTBackend", "CAPABILITY"]


@runtime_checkable
class SHTBackend(Protocol):
    """A backend module of :mod:`sphgpu.sht` (``reference``, ``_cpu``, ``_cuda``).

    ``layout`` is an :class:`sphgpu.AlmLayout`, ``geometry`` a :class:`sphgpu.RingGeometry`;
    a_lm are complex128, maps float64. ``ACCEPTS_DEVICE_ARRAYS`` says whether the functions
    take device arrays (then NumPy in gives NumPy out, device in gives device out). The four
    transforms take ``prepared``, what :meth:`prepare` made for their layout, grid and spin
    (a :class:`sphgpu.SHT` holds it); without it the backend finds its own.
    """

    ACCEPTS_DEVICE_ARRAYS: bool

    def prepare(self, layout: Any, geometry: Any, spin: int) -> Any:
        """What the transforms of one layout, grid and spin reuse from call to call.

        Parameters
        ----------
        layout : AlmLayout
            Layout of the a_lm.
        geometry : RingGeometry
            The grid.
        spin : int
            0 for :meth:`synthesis` and :meth:`analysis`, else the spin of
            :meth:`synthesis_spin` and :meth:`analysis_spin`.

        Returns
        -------
        object or None
            The backend's own plan (the GPU's tables and FFT set-up), None where there is none.
        """

    def to_device(self, a: Any) -> Any:
        """``a`` where this backend computes.

        Parameters
        ----------
        a : array
            Host or device array.

        Returns
        -------
        array
            A device copy on the GPU backend; ``a`` itself on the host backends.
        """

    def to_host(self, a: Any) -> Any:
        """``a`` as a NumPy array.

        Parameters
        ----------
        a : array
            A result of this backend.

        Returns
        -------
        numpy.ndarray
        """

    def synthesis(self, alm: Any, layout: Any, geometry: Any, *, prepared: Any = None) -> Any:
        """Spin-0 synthesis.

        Parameters
        ----------
        alm : array, shape (k, nalm), complex128
            Coefficient sets in ``layout``.
        layout : AlmLayout
            Their layout.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, 0).

        Returns
        -------
        array, shape (k, npix), float64
        """

    def analysis(self, maps: Any, layout: Any, geometry: Any, *, prepared: Any = None) -> Any:
        """Quadrature-weighted adjoint of :meth:`synthesis`.

        Parameters
        ----------
        maps : array, shape (k, npix), float64
            Maps on ``geometry``.
        layout : AlmLayout
            Layout of the result.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, 0).

        Returns
        -------
        array, shape (k, nalm), complex128
        """

    def synthesis_spin(self, alm: Any, spin: int, layout: Any, geometry: Any, *,
                       prepared: Any = None) -> Any:
        """Spin synthesis with healpy's conventions.

        Parameters
        ----------
        alm : array, shape (k, 2, nalm) E, B or (k, 3, nalm) T, E, B, complex128
            Coefficient sets.
        spin : int
            Spin of the E, B rows, >= 1.
        layout : AlmLayout
            Their layout.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, spin).

        Returns
        -------
        array, shape (k, 2 or 3, npix), float64
        """

    def analysis_spin(self, maps: Any, spin: int, layout: Any, geometry: Any, *,
                      prepared: Any = None) -> Any:
        """Quadrature-weighted adjoint of :meth:`synthesis_spin`.

        Parameters
        ----------
        maps : array, shape (k, 2 or 3, npix), float64
            Q, U or I, Q, U maps.
        spin : int
            Spin, >= 1.
        layout : AlmLayout
            Layout of the result.
        geometry : RingGeometry
            The grid.
        prepared : object, optional
            :meth:`prepare` of (layout, geometry, spin).

        Returns
        -------
        array, shape (k, 2 or 3, nalm), complex128
        """

    def stage_alm2leg(self, alm: Any, layout: Any, geometry: Any, mvals: Any, astart: Any, *,
                      nthreads: int | None = None) -> Any:
        """Legendre step of a subset of orders (:func:`sphgpu.sht.stages.alm2leg`).

        Parameters
        ----------
        alm : array, shape (k, n), complex128
            Packed coefficients: order mvals[c]'s coefficient l at ``alm[:, astart[c] + l]``.
        layout : AlmLayout
            lmax and mmax of the transform.
        geometry : RingGeometry
            The rings.
        mvals : ndarray, shape (nm,), int64
            The orders.
        astart : ndarray, shape (nm,), int64
            Their offsets (negative where the hypothetical l = 0 entry lies before ``alm``).
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, nrings, nm), complex128
        """

    def stage_leg2alm(self, leg: Any, layout: Any, geometry: Any, mvals: Any, astart: Any,
                      nalm: int, *, nthreads: int | None = None) -> Any:
        """Adjoint of :meth:`stage_alm2leg`.

        Parameters
        ----------
        leg : array, shape (k, nrings, nm), complex128
            Delta_m per ring and order.
        layout : AlmLayout
            lmax and mmax of the transform.
        geometry : RingGeometry
            The rings.
        mvals : ndarray, shape (nm,), int64
            The orders.
        astart : ndarray, shape (nm,), int64
            Their offsets in the result.
        nalm : int
            Length of the packed result.
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, nalm), complex128
        """

    def stage_leg2map(self, leg: Any, geometry: Any, *, nthreads: int | None = None) -> Any:
        """Ring step of a synthesis.

        Parameters
        ----------
        leg : array, shape (k, nrings, mmax + 1), complex128
            Column m is order m.
        geometry : RingGeometry
            The rings.
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, npix), float64
        """

    def stage_map2leg(self, maps: Any, geometry: Any, mmax: int, quadrature: bool, *,
                      nthreads: int | None = None) -> Any:
        """Ring step of an analysis.

        Parameters
        ----------
        maps : array, shape (k, npix), float64
            Maps on ``geometry``.
        geometry : RingGeometry
            The rings.
        mmax : int
            Last order returned.
        quadrature : bool
            Multiply by the rings' quadrature weights.
        nthreads : int, optional
            Host threads (host backends; None: their default).

        Returns
        -------
        array, shape (k, nrings, mmax + 1), complex128
        """


CAPABILITY = Capability(SHTBackend,
                        dask="sphgpu.distributed.sht",
                        dask_names=("alm2map_many", "map2alm_many", "anafast_many", "alm2cl_many",
                                    "to_workers", "alm2map", "map2alm", "WorkersLostError"))
