"""How many simulations to transform together: from the device's free memory, or from physical
memory for host backends. Used by :class:`~sphgpu.sims.MonteCarlo` in this process and by each
Dask worker for itself (:mod:`sphgpu.sims._dask`)."""

from __future__ import annotations

from .. import backends
from .._validate import physical_memory

__all__ = ["auto_batch_size", "tunes", "MAX_AUTO_BATCH"]

#: the largest batch chosen automatically (larger ones gain nothing and hold more memory)
MAX_AUTO_BATCH = 32


def auto_batch_size(plan, name) -> int:
    """Simulations of ``plan`` to transform together on backend ``name`` in this process (at
    most MAX_AUTO_BATCH): from the device's free memory for device backends, else from physical
    memory. A Dask worker evaluates it on its own device (:mod:`sphgpu.sims._dask`)."""
    per_sim = plan.bytes_per_simulation()
    if backends.load("sht", name).ACCEPTS_DEVICE_ARRAYS:
        # a quarter of what is free: larger batches gain little a simulation, while half of
        # the free memory slowed a process that had run smaller nsides before, and more ran
        # out of memory (the rates at this size: benchmarks/results/montecarlo.json)
        free = _free_device_memory()
        budget = 0.25 * free if free else 2**30
        size = int(max(1, min(MAX_AUTO_BATCH, budget // per_sim)))
        # whole groups of 8, rounded up where that takes at most half of what is free by
        # the estimate: the CUDA synthesis may take 16, 8 or 4 maps a launch on the tensor
        # cores, and groups of 8 or 16 cost less a map than plain maps
        # (benchmarks/results/sht_batch_h200_1127_before_ring.json; the Monte Carlo's rates:
        # benchmarks/results/montecarlo_h200.json). A polarized batch at nside 2048 goes from
        # 4 to 8 that way, which ran faster, and CuPy's pool after a batch of 8 held less than
        # the estimate (benchmarks/results/montecarlo_bandpowers_h200*.json,
        # profile_pol_mc_h200.json)
        up = -(-size // 8) * 8
        if up <= MAX_AUTO_BATCH and up * per_sim <= 2.0 * budget:
            return up
        return size - size % 8 if size >= 8 else size
    # ducc0 transforms one map at a time anyway: batches only save Python overhead
    budget = 0.1 * (physical_memory() or 2**31)
    return int(max(1, min(MAX_AUTO_BATCH, budget // per_sim)))


def _free_device_memory() -> int | None:
    """Free bytes on the current GPU (None under the simulator or without CuPy)."""
    from .._device import SIMULATOR, free_device_bytes

    if SIMULATOR:
        return None
    try:
        return free_device_bytes()
    except Exception:      # no usable CuPy: the caller falls back to a fixed budget
        return None


def tunes(batch, size, first) -> bool:
    """Whether a run's batch of ``batch`` simulations may tune launch shapes
    (:func:`sphgpu.sims.pipeline.simulate_batch`'s ``tune``): a full batch of ``size``, or the
    run's ``first``; not a last, smaller one, whose shape the run uses once."""
    return first or batch == size
