"""Counts over a memory budget are made in parts: the same counts, every part within the budget."""

import numpy as np
import pytest

from sphgpu.backends import cuda_available
from sphgpu.testing import TOL
from sphgpu.tpacf import AngularBins, Catalog, budget, pair_counts

from .cases import clustered, sky

BINS = AngularBins.log(0.1, 6, 5)


@pytest.mark.parametrize("backend,cross", [
    ("cpu", False), ("cpu", True),
    # each part is a new Catalog, prepared (sorted) again in the simulator: about a minute
    pytest.param("cuda", True, marks=pytest.mark.slow)])
def test_tiny_budget_splits_and_gives_the_same_counts(backend, cross, rng, monkeypatch):
    if backend == "cuda" and not cuda_available():
        pytest.skip("no CUDA GPU or simulator")
    n = 60 if backend == "cuda" else 600           # the simulator runs a thread per thread
    ra, dec = clustered(rng, n, box=(10.0, 20.0, -5.0, 5.0))
    ra2, dec2 = sky(rng, n // 2, dec=(-5, 5), ra=(10, 20))
    kw = dict(labels1=rng.integers(0, 3, n), weights1=rng.uniform(0.5, 2, n), mean_theta=True,
              backend=backend)
    args = (ra, dec)
    if cross:
        args += (ra2, dec2)
        kw["labels2"] = rng.integers(0, 3, n // 2)
    whole = pair_counts(*args, bins=BINS, **kw)
    seen = []
    real = budget.check

    def spy(plan, *a):
        try:
            real(plan, *a)
        except budget.BudgetExceeded as exc:
            seen.append(("over", exc.needed))
            raise
        seen.append(("ok", budget.POINT_BYTES * (plan.s1.size + (0 if plan.auto else
                                                                 plan.s2.size))
                     + budget.plan_bytes(plan, BINS.nbins, 3, True, True)))
    monkeypatch.setattr(budget, "check", spy)
    pair_counts(*args, bins=BINS, **kw)
    tight = seen.pop()[1] - 1            # one byte less than the whole count needs
    messages = []
    parts = pair_counts(*args, bins=BINS, max_device_bytes=tight, progress=messages.append,
                        **kw)
    assert any(s == "over" for s, _ in seen) and sum(s == "ok" for s, _ in seen) >= 2
    assert all(need <= tight for s, need in seen if s == "ok")
    assert messages and "memory budget" in messages[0]
    np.testing.assert_array_equal(parts.counts, whole.counts)
    np.testing.assert_array_equal(parts.patch_counts, whole.patch_counts)
    np.testing.assert_allclose(parts.weights, whole.weights, rtol=TOL["pair_sums_rtol"])
    np.testing.assert_allclose(parts.mean_theta, whole.mean_theta, rtol=TOL["pair_sums_rtol"])
    assert parts.total == whole.total and parts.auto == whole.auto


def test_budget_too_small_for_the_points_raises(rng):
    ra, dec = sky(rng, 100)
    with pytest.raises(ValueError, match="max_device_bytes=1000: the prepared catalogs"):
        pair_counts(ra, dec, bins=BINS, max_device_bytes=1000, backend="cpu")
    with pytest.raises(TypeError, match="max_device_bytes must be a positive integer"):
        pair_counts(ra, dec, bins=BINS, max_device_bytes=-5, backend="cpu")
    assert Catalog(ra, dec).part(10, 30).size == 20
    with pytest.raises(ValueError, match="part needs"):
        Catalog(ra, dec).part(5, 5)
