"""sphgpu on Dask: the same transforms over many GPUs, CPU workers and machines.

>>> import sphgpu.distributed as sd
>>> client = sd.local_cluster(gpus="all")            # one worker per GPU (CPU workers if none)
>>> maps = sd.alm2map_many(alms, nside)               # a batch of maps over the workers
>>> sd.warmup(client, nside=nside)                    # compile and tune on every worker at once
>>> futs = sd.to_workers(alms, on_device=True)        # sent once, kept on the workers' GPUs
>>> cls = sd.anafast_many(sd.alm2map_many(futs, nside, lmax, gather=False),
...                       lmax, geometry=sphgpu.RingGeometry.healpix(nside))  # spectra back
>>> futs = sd.read_maps(paths)                        # FITS maps read by the workers
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

from .. import backends
from . import partition

#: this package's own names -> their module; each capability's Dask form is declared in its
#: own package (``Capability(dask=..., dask_names=...)``, :func:`sphgpu.backends.dask_forms`)
_OWN = {name: "sphgpu.distributed.cluster"
        for name in ("local_cluster", "visible_gpus", "get_client", "gpu_workers",
                     "require_gpu_worker", "cluster_info", "dashboard_link", "show_progress",
                     "NoGPUWorkerError", "GPU", "CPU")}
_OWN["warmup"] = "sphgpu.distributed.warm"       # warm-up of every worker at once
_OWN["read_maps"] = "sphgpu.distributed.maps_on_workers"  # FITS maps read on the workers
_DASK_FORMS = backends.dask_forms()
_CLASH = sorted(set(_OWN) & set(_DASK_FORMS))
if _CLASH:
    raise ImportError(f"Dask forms declare names of sphgpu.distributed itself: {_CLASH}")
#: public name -> the module that defines it (imported on first use: Dask is imported then)
_LAZY = {**_OWN, **_DASK_FORMS}
#: the Dask-backed submodules, reachable as attributes (sphgpu.distributed.sht)
_SUBMODULES = {m.rpartition(".")[2]: m for m in _LAZY.values() if m.startswith(__name__ + ".")}

__all__ = [*_LAZY, "partition"]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(_SUBMODULES[name])
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
