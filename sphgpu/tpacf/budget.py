"""The memory budget of one pair count, and what a count holds.

A count holds both catalogs prepared (:data:`POINT_BYTES` a point: coordinates, cell keys, the
sorting permutation, float64 and float32 unit vectors, weights) and its plan's work items and
histograms (:func:`plan_bytes`). A backend checks the total against the budget once its plan is
made, before it allocates anything for the count, and raises :class:`BudgetExceeded` when it
is over; :func:`sphgpu.tpacf.pair_counts` then drops what it prepared and counts the catalog in
halves (auto: both halves and their cross count), as often as needed, so the device never holds
more than the budget for this count: the prepared points of the parts in play (never more than
both whole catalogs) and one part's plan.
"""

from __future__ import annotations

__all__ = ["POINT_BYTES", "ITEM_BYTES", "DEFAULT_BUDGET", "BudgetExceeded", "plan_bytes",
           "check"]

#: Bytes a prepared point holds: ra, dec (16), key (8), permutation (8), xyz (24), xyz32 (12),
#: weight (8); an upper bound for every backend.
POINT_BYTES = 76
#: Bytes of one work item on the device (6 int32) and on the host (6 int64), counted once each.
ITEM_BYTES = 24 + 48
#: Default budget of one count: 8 GiB (a tenth of an 80 GB GPU's memory).
DEFAULT_BUDGET = 8 * 2**30


class BudgetExceeded(Exception):
    """A count's plan needs more memory than its budget (caught by the API, which splits)."""

    def __init__(self, needed, budget):
        super().__init__(f"this count needs {needed} bytes, over the budget of {budget}")
        self.needed, self.budget = needed, budget


def plan_bytes(plan, nbins, n_regions, weighted, mean_theta):
    """Bytes of a plan's items and a count's histograms (patch pairs included)."""
    r2 = max(n_regions, 1) ** 2
    hist = 8 * nbins * (2 + (2 if mean_theta else 0)) + 16 * r2 * nbins
    return ITEM_BYTES * plan.items.shape[0] + 8 * plan.group_start.size + hist


def check(plan, nbins, n_regions, weighted, mean_theta, budget):
    """Raise :class:`BudgetExceeded` when the prepared catalogs and the plan of a count need
    more than ``budget`` bytes (None: no budget)."""
    if budget is None:
        return
    points = plan.s1.size + (0 if plan.auto else plan.s2.size)
    need = POINT_BYTES * points + plan_bytes(plan, nbins, n_regions, weighted, mean_theta)
    if need > budget:
        raise BudgetExceeded(need, budget)
