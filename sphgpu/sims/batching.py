"""How many simulations to transform together: from the device's free memory, or from physical
memory for host backends. Used by :class:`~sphgpu.sims.MonteCarlo` in this process and by each
Dask worker for itself (:mod:`sphgpu.sims._dask`)."""

from __future__ import annotations

from .. import backends
from .._validate import _physical_memory

__all__ = ["auto_batch_size", "MAX_AUTO_BATCH"]

#: the largest batch chosen automatically (larger ones gain nothing and hold more memory)
MAX_AUTO_BATCH = 32


def auto_batch_size(plan, name) -> int:
    """Simulations of ``plan`` to transform together on backend ``name`` in this process (at
    most MAX_AUTO_BATCH): from the device's free memory for device backends, else from physical
    memory. A Dask worker evaluates it on its own device (:mod:`sphgpu.sims._dask`)."""
    per_sim = plan.bytes_per_simulation()
    impl = backends.load("sht", name)
    if getattr(impl, "ACCEPTS_DEVICE_ARRAYS", False):
        # a quarter of what is free: on an H100 at nside 2048 a batch of 5 took 35.7 ms a
        # simulation and one of 16 33.7 ms, so larger batches gain little, while a batch
        # of 15 (half of the free memory) took 62 ms a simulation in a process that had
        # run nside 512 and 1024 before (34 ms in a fresh one), and one of 24 ran out of
        # memory
        free = _free_device_memory()
        budget = 0.25 * free if free else 2**30
        size = int(max(1, min(MAX_AUTO_BATCH, budget // per_sim)))
        # whole groups of 8, rounded up where that takes at most 0.35 of what is free: the
        # CUDA synthesis may take 16, 8 or 4 maps a launch on the tensor cores, where at
        # nside 2048 on an H200 16 maps took 4.5 ms a map, 8 5.2, and 4 plain maps 7.0
        # (benchmarks/results/runs/sht_batch_h200_1127_before_ring.json), and the Monte Carlo
        # ran 37.9 simulations a second in batches of 8, 39.3 in batches of 16 (35.0 in
        # batches of 13 before)
        up = -(-size // 8) * 8
        if up <= MAX_AUTO_BATCH and up * per_sim <= 1.4 * budget:
            return up
        return size - size % 8 if size >= 8 else size
    # ducc0 transforms one map at a time anyway: batches only save Python overhead
    budget = 0.1 * (_physical_memory() or 2**31)
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
