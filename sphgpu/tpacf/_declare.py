"""What :mod:`sphgpu.tpacf` declares to the backend registry (:mod:`sphgpu.backends`): the
protocol its backend modules implement, which backends it has and its Dask form.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..backends import Capability

__all__ = ["TpacfBackend", "CAPABILITY"]


@runtime_checkable
class TpacfBackend(Protocol):
    """A backend module of :mod:`sphgpu.tpacf`: exact pair counts in angular bins."""

    PRECISIONS: tuple
    DEFAULT_PRECISION: str

    def count_pairs(self, cat1: Any, cat2: Any, bins: Any, *, n_regions: int = 0,
                    weighted: bool = False, precision: str = "float64") -> Any:
        """Exact pair counts of catalogs in angular bins.

        Parameters
        ----------
        cat1 : Catalog
            The first catalog.
        cat2 : Catalog or None
            The second (None: unique pairs of ``cat1``).
        bins : AngularBins
            The bins.
        n_regions : int
            Jackknife regions (0: none).
        weighted : bool
            Sum weights too.
        precision : str
            One of PRECISIONS.

        Returns
        -------
        RawCounts
            Counts per bin (and per jackknife region).
        """


CAPABILITY = Capability(TpacfBackend,
                        dask="sphgpu.distributed.tpacf",
                        dask_names=("pair_counts", "pair_counts_many", "CatalogFiles",
                                    "CountSteps"))
