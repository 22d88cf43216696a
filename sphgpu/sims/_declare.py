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
    functions' rounding; "cpu" and "cuda" run one arithmetic, "reference" is NumPy's)."""

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


CAPABILITY = Capability(RandomBackend)
