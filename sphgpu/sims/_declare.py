"""What :mod:`sphgpu.sims` declares to the backend registry (:mod:`sphgpu.backends`): the
protocol of its backend modules (the simulations' random numbers, drawn where the transforms'
arrays are) and which backends it has. The Monte Carlo's Dask form is
``MonteCarlo.run(client=...)``, not a function of :mod:`sphgpu.distributed`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..backends import Capability

__all__ = ["RandomBackend", "CAPABILITY"]


@runtime_checkable
class RandomBackend(Protocol):
    """A backend module of :mod:`sphgpu.sims`: counter-based standard normal numbers
    (:mod:`sphgpu.sims.random`), the same values on every backend (to the transcendental
    functions' rounding; "cpu" and "cuda" run one arithmetic, "reference" is NumPy's), and the
    two steps of a simulation made of them: noise added to a map, a_lm correlated."""

    def normals(self, shape: Any, block: int, key: tuple) -> Any:
        """Standard normal values of draw ``block`` of the stream ``key``, as
        :func:`sphgpu.sims.random.normals` (which asks the registry for this module).

        Parameters
        ----------
        shape : tuple of int
            Shape of the values.
        block : int
            Which draw of the stream.
        key : tuple
            The stream's Philox key, two 32-bit words (:func:`sphgpu.sims.random.stream_key`).

        Returns
        -------
        array, float64, of ``shape``
            NumPy on the host backends, a device array on the GPU backend.
        """

    def add_normals(self, out: Any, block: int, key: tuple, scale: Any, factor: Any) -> Any:
        """``out`` = (``out`` + ``scale`` z) ``factor`` in place, z the values :meth:`normals`
        gives for ``out``'s shape, as :func:`sphgpu.sims.random.add_normals`.

        Parameters
        ----------
        out : array, float64, C-contiguous
            Values (a batch's map), of this backend's kind.
        block, key
            As :meth:`normals`.
        scale : float or array, float64
            Standard deviations: a number, or an array whose size divides out.size, repeated
            over the flattened ``out`` (a map's pixels over its fields).
        factor : array, float64, or None
            Multiplied after the noise (a mask), repeated as ``scale``; None: no factor.

        Returns
        -------
        array
            ``out``.
        """

    def correlate(self, re: Any, im: Any, factors: tuple, out: Any) -> Any:
        """Adds correlated a_lm made of unit normals to ``out``: out[i] += sum over f with
        rows[f] = i of (fre[f] re[cols[f]] + 1j fim[f] im[cols[f]]), each row's sums formed
        in the order of f, then added.

        Parameters
        ----------
        re, im : array, float64, shape (n, nalm)
            Unit normals (their real and imaginary parts).
        factors : tuple
            (rows, cols, fre, fim): rows, cols (F,) int64; fre, fim (F, nalm) float64.
        out : array, complex128, shape (n, nalm)
            Added to in place.

        Returns
        -------
        array
            ``out``.
        """


CAPABILITY = Capability(RandomBackend)
