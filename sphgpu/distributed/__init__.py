"""sphgpu on Dask: the same transforms over many GPUs, CPU workers and machines.

>>> import sphgpu.distributed as sd
>>> client = sd.local_cluster(gpus="all")            # one worker per GPU (CPU workers if none)
>>> maps = sd.alm2map_many(alms, nside)               # a batch of maps over the workers
>>> sd.warmup(client, nside=nside)                    # compile and tune on every worker at once
>>> futs = sd.to_workers(alms, on_device=True)        # sent once, kept on the workers' GPUs
>>> cls = sd.anafast_many(sd.alm2map_many(futs, nside, lmax, gather=False),
...                       lmax, geometry=sphgpu.RingGeometry.healpix(nside))  # spectra back
>>> sky = sd.alm2map(alm, nside, pattern="m")         # one transform split by m and by rings
>>> drs = sd.pair_counts_many(data, randoms, bins=bins)   # DR for every random catalog
>>> out = sd.convolve(m, kernel, method="split", l_cut=l, theta_cut=t)   # parts on workers

Every function takes ``client=`` (default: the current Dask client), so any existing cluster
works: an HPC batch system through dask-jobqueue, a scheduler address, dask-cuda's workers.
GPU workers declare the Dask resource ``{"GPU": 1}`` (see :mod:`sphgpu.distributed.cluster`).

:mod:`sphgpu.distributed.partition` (how work is cut into tasks) imports only NumPy; Dask is
imported when the rest of this package is first used, so ``import sphgpu`` never imports it.
"""

from __future__ import annotations

import importlib

from . import partition

__all__ = [
    # cluster
    "local_cluster", "visible_gpus", "get_client", "gpu_workers", "require_gpu_worker",
    "cluster_info", "dashboard_link", "show_progress", "NoGPUWorkerError", "GPU", "CPU",
    # transforms
    "alm2map_many", "map2alm_many", "anafast_many", "alm2cl_many", "to_workers", "alm2map",
    "map2alm", "WorkersLostError",
    # warm-up of every worker at once
    "warmup",
    # pair counts
    "pair_counts", "pair_counts_many", "CatalogFiles",
    # convolution
    "convolve", "convolve_many",
    "partition",
]

_LAZY = {name: "cluster" for name in ("local_cluster", "visible_gpus", "get_client",
                                      "gpu_workers", "require_gpu_worker", "cluster_info",
                                      "dashboard_link", "show_progress", "NoGPUWorkerError",
                                      "GPU", "CPU")}
_LAZY.update({name: "sht" for name in ("alm2map_many", "map2alm_many", "anafast_many",
                                        "alm2cl_many", "to_workers", "alm2map", "map2alm",
                                        "WorkersLostError")})
_LAZY["warmup"] = "warm"
_LAZY.update({name: "tpacf" for name in ("pair_counts", "pair_counts_many", "CatalogFiles")})
# the module is "convolution": a submodule named "convolve" would shadow the function
_LAZY.update({name: "convolution" for name in ("convolve", "convolve_many")})


def __getattr__(name):
    if name in ("cluster", "sht", "tpacf", "convolution", "warm"):   # the Dask-backed submodules
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
