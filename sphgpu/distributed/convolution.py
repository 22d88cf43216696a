"""Convolution on a Dask cluster: a split plan's two parts as concurrent tasks, the real-space
part cut into latitude bands over several workers; and batches of maps, one task per group.

The choices are the serial call's: :func:`sphgpu.convolve.api.parts_of` reads the arguments
into a :class:`~sphgpu.convolve.parts.Parts` (the same checks, fits and plans), its backend
requests resolved for the cluster's workers (:func:`sphgpu.convolve.parts.resolved_by`), not for
this machine. Tasks receive the Parts; a whole convolution, or the harmonic part alone, runs on
its worker through the serial executor, :func:`sphgpu.convolve.run.execute`.

One convolution (:func:`convolve`) of a split at (l_cut, theta_cut) runs

* the harmonic part (map2alm, times K_l for l <= l_cut, alm2map) as one task on one worker,
  which receives the whole map;
* the compact real-space part as one task per colatitude band
  (:func:`~sphgpu.distributed.partition.latitude_bands`, balanced by pixels), each on another
  worker, which receives only the pixels of its band's halo (the rings within theta_cut of the
  band) and returns only its own rings (:meth:`sphgpu.convolve.realspace.RingPlan.band`);

all submitted at once, so both parts run at the same time, as the kernel-split paper runs its
CPU and GPU parts. The pieces are added here, in the order the serial
:func:`sphgpu.convolve.convolve` adds them (harmonic + real-space): the result equals the serial
one to rounding (bit for bit on CPU workers). GPU parts (``backend="cuda"``, or "auto" on a
cluster with GPU workers) ask for the resource ``{"GPU": 1}``; a cluster of a single eligible
worker runs the serial convolution there, both parts concurrent inside it (two GPU streams, or
ducc0 threads next to the GPU).

A batch (:func:`convolve_many`): k maps, one task per ``maps_per_task`` of them, each running
the serial convolution on its worker with its data sent once.

Faults are handled as in :mod:`sphgpu.distributed.sht`: work whose input was lost with a worker
is sent and submitted again, and no partial result is ever returned.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .. import backends
from .._validate import UNSEEN, as_maps, check_int
from ..convolve.api import parts_of
from ..convolve.cost import MeasuredCostModel
from ..convolve.optimize import Plan
from ..convolve.parts import resolved_by
from ..convolve.realspace import ring_plan
from ..convolve.run import execute
from ..geometry import RingGeometry
from ..sht.transforms import resolve_geometry
from . import _worker
from . import cluster as _cluster
from . import tasks
from .partition import latitude_bands

__all__ = ["convolve", "convolve_many"]


# ----------------------------------------------------------------------------- what to compute
def _parts(client, kernel, npix, geometry, **options):
    """The :class:`~sphgpu.convolve.parts.Parts` of the serial convolve()'s choices (same
    checks, same cached fits and plans), with the backend requests resolved for the workers
    of ``client`` instead of this machine."""
    def on_cluster(request, capability):
        return _cluster.placement(client, request)[0]

    with _cluster.one_view(client), resolved_by(on_cluster):   # one question to the scheduler
        return parts_of(kernel, npix, geometry=geometry, **options)


def _harmonic(parts):
    """The harmonic part of ``parts`` alone (what its own task runs)."""
    return dataclasses.replace(parts, compact=None, realspace_backend=None)


# ----------------------------------------------------------------------------- tasks
# Module-level functions: workers import them from sphgpu, nothing is pickled by value.
def _kept(parts):
    """``parts`` on the worker's own copy of their grid (one object per grid and worker), so
    the set-ups cached by grid (transform plans, ring plans, GPU tables) are found again."""
    g = _worker.geometry(_worker.geometry_ref(parts.geometry))
    return parts if g is parts.geometry else dataclasses.replace(parts, geometry=g)


def _execute_task(maps, parts):
    """``parts`` run on ``maps`` (k, npix) by the serial executor on this worker: a split's
    parts concurrently there (as sphgpu.convolve.convolve runs them), or one part alone."""
    return execute(_kept(parts), maps)


@functools.lru_cache(maxsize=64)
def _band_plan(geometry, theta_cut, own, halo):
    # cached on the worker (by its kept grid): a GPU band plan keeps its device tables
    return ring_plan(geometry, theta_cut).band(slice(*own), slice(*halo))


def _band_task(halo_maps, parts, own, halo):
    """Pixels of the halo rings (k, n_halo) -> the real-space part of ``parts`` on the own
    rings (k, n_own), computed from the halo only."""
    parts = _kept(parts)
    compact = parts.compact
    plan = _band_plan(parts.geometry, compact.theta_cut, own, halo)
    out = backends.load("convolve", parts.realspace_backend).convolve(halo_maps, plan, compact)
    g = plan.geometry
    a = int(g.ringstart[own[0] - halo[0]])
    last = own[1] - 1 - halo[0]
    b = int(g.ringstart[last] + g.nphi[last])
    return np.ascontiguousarray(out[:, a:b])


# ----------------------------------------------------------------------------- placement
def _placed(client, name):
    """(resources, eligible workers) of the tasks of a part on the concrete backend ``name``;
    (None, []) for a part that is not there (``name`` None)."""
    if name is None:
        return None, []
    resources = _cluster.placement(client, name)[1]
    return resources, _cluster.eligible_workers(client, resources)


def _bands(geom, compact, nbands, shares=None):
    """Latitude bands of ``nbands`` (own rings, halo rings) as (start, stop) pairs, balanced
    by pixels (in the proportions ``shares``, if given); each halo covers every ring the
    real-space plan reaches from its own rings."""
    plan = ring_plan(geom, compact.theta_cut)
    out = []
    for b in latitude_bands(plan.theta, nbands, compact.theta_cut, cost=plan.nphi,
                            shares=shares):
        need = plan.halo(b.own)        # the plan's own reach (its margin included)
        out.append(((b.own.start, b.own.stop),
                    (min(b.halo.start, need.start), max(b.halo.stop, need.stop))))
    return out


def _pixels(geom, rings):
    """(first, stop) pixels of the contiguous rings (start, stop) of a whole-sphere map."""
    first = int(geom.ringstart[rings[0]])
    last = rings[1] - 1
    return first, int(geom.ringstart[last] + geom.nphi[last])


def _unseen(out, bad):
    """Masked input pixels (UNSEEN, numpy.ma) back to UNSEEN in the result, as the serial
    convolve and healpy's smoothing do."""
    if bad is not None:
        out[bad] = UNSEEN
    return out


def _weighted_shares(weight, n_others):
    """Band shares when the harmonic worker also takes a band: the harmonic part costs
    ``weight`` times the whole real-space part; all ``n_others + 1`` workers should finish
    together. None when the harmonic part alone fills its worker's share."""
    total = (weight + 1.0) / (n_others + 1)          # each worker's time, real-space units
    mine = total - weight
    return [mine] + [total] * n_others if mine > 0.05 * total else None


def convolve(maps, kernel, *, method="auto", l_cut=None, theta_cut=None, backend="auto",
             harmonic_backend=None, error_bound=1e-5, fit="sphgpu", geometry=None,
             nbands=None, harmonic_weight=None, client=None, progress=False):
    """:func:`sphgpu.convolve.convolve` on a Dask cluster: the harmonic and real-space parts
    of a split at the same time on different workers, the real-space part in latitude bands.

    Parameters
    ----------
    maps : array, shape (npix,) or (k, npix), float64, NumPy
        HEALPix RING maps (or maps on ``geometry``); sent once: the whole maps to the worker
        of the harmonic part, each band's halo pixels to the worker of that band.
    kernel, method, l_cut, theta_cut
        As in :func:`sphgpu.convolve.convolve` (a Plan or KernelSplit runs as it stands).
    backend : {"auto", "cuda", "cpu", "reference"}
        Where the real-space part runs (and the harmonic part, unless ``harmonic_backend``):
        "auto" means the GPU workers when the cluster has any, else CPU workers; "cuda" on a
        cluster without a GPU worker raises :class:`~sphgpu.distributed.NoGPUWorkerError`.
    harmonic_backend : str, optional
        Where the harmonic part runs, e.g. "cpu" for a CPU worker next to GPU bands.
    error_bound, fit, geometry
        As in :func:`sphgpu.convolve.convolve`.
    nbands : int, optional
        Latitude bands of the real-space part (default: one per worker that can run them,
        leaving out the worker of the harmonic part when there are others, unless
        ``harmonic_weight`` gives it a band too).
    harmonic_weight : float, optional
        Time of the harmonic part over that of the whole real-space part, on one worker
        (e.g. 0.15). When the harmonic part's worker can also run bands, it then gets a
        smaller band of its own, sized so that every worker finishes at about the same
        time. Default: from a Plan's predicted times when they are measured ones and both
        parts run on one backend; else the harmonic worker runs the harmonic part only.
    client : distributed.Client, optional
        Default: the current Dask client.
    progress : bool
        Show Dask's progress bar.

    Returns
    -------
    ndarray of the shape of ``maps``, float64, equal to the serial convolution to rounding.
    """
    client = _cluster.get_client(client)
    arr, bad = tasks.host_array("maps", maps, as_maps)
    for name, value in (("backend", backend), ("harmonic_backend", harmonic_backend)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    weight = _plan_weight(kernel) if harmonic_weight is None else harmonic_weight
    if weight is not None:
        if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)) \
                or not np.isfinite(weight) or weight < 0:
            raise ValueError(f"harmonic_weight must be a finite number >= 0, got {weight!r}")
        weight = float(weight)
    parts = _parts(client, kernel, arr.shape[-1], geometry, method=method, l_cut=l_cut,
                   theta_cut=theta_cut, backend=backend, harmonic_backend=harmonic_backend,
                   error_bound=error_bound, fit=fit)
    if nbands is not None:
        nbands = check_int("nbands", nbands, minimum=1)
    geom, bl, compact = parts.geometry, parts.bl, parts.compact
    batch = arr[None] if arr.ndim == 1 else np.ascontiguousarray(arr)
    with _cluster.one_view(client):                 # one question to the scheduler
        h_res, h_where = _placed(client, parts.harmonic_backend)
        r_res, r_where = _placed(client, parts.realspace_backend)
    both = bl is not None and compact is not None
    if both and len(set(h_where) | set(r_where)) == 1 and nbands is None:
        # one worker: the serial split there runs both parts at once (streams / threads)
        gpu = backends.info(parts.harmonic_backend).gpu \
            or not backends.info(parts.realspace_backend).gpu
        out = _run_whole(client, [batch], parts, h_res if gpu else r_res, progress)[0][0]
        return _unseen(out[0] if arr.ndim == 1 else out, bad)

    # the harmonic part prefers a worker the bands do not use (e.g. a CPU worker)
    h_pick = [w for w in h_where if w not in r_where][:1] or h_where[:1]
    bands, shares = [], None
    if compact is not None:
        others = [w for w in r_where if not (both and w in h_pick)] or r_where
        if nbands is None and both and weight and h_pick[0] in r_where and others != r_where:
            shares = _weighted_shares(weight, len(others))
        bands = _bands(geom, compact, len(shares) if shares else nbands or len(others), shares)
    harmonic = _harmonic(parts) if bl is not None else None

    def build(_):
        futures, at = [], []
        with _cluster.one_view(client):   # workers listed again at each attempt: some may die
            h_at = _cluster.eligible_workers(client, h_res) if bl is not None else []
            r_at = _cluster.eligible_workers(client, r_res) if compact is not None else []
        if harmonic is not None:
            at = [w for w in h_at if w not in r_at][:1] or h_at[:1]
            [whole] = _send(client, [batch], at, h_res)
            futures.append(client.submit(_execute_task, whole, harmonic,
                                         key=tasks.key("harmonic"), resources=h_res,
                                         workers=at, allow_other_workers=True))
        if bands:
            rest = [w for w in r_at if w not in at] or r_at
            # with shares, band 0 (the smaller one) goes to the harmonic part's worker
            shared = int(bool(shares) and bool(at) and at[0] in r_at)
            kb = tasks.key("band")
            for i, (own, halo) in enumerate(bands):
                if shared and i == 0:
                    w = at[0]
                else:
                    w = rest[(i - shared) % len(rest)] if rest else None
                a, b = _pixels(geom, halo)
                [piece] = _send(client, [np.ascontiguousarray(batch[:, a:b])],
                                [w] if w else [], r_res)
                futures.append(client.submit(_band_task, piece, parts, own, halo,
                                             key=(kb, i), resources=r_res,
                                             workers=[w] if w else None,
                                             allow_other_workers=bool(w)))
        return [futures]

    [pieces] = tasks.run_items(client, 1, build, progress=progress)
    if bl is not None:
        out, pieces = pieces[0], pieces[1:]
    else:
        out = np.empty_like(batch)
    for (own, _), piece in zip(bands, pieces):
        a, b = _pixels(geom, own)
        if bl is not None:
            out[:, a:b] += piece           # harmonic + real-space, as the serial split adds
        else:
            out[:, a:b] = piece
    return _unseen(out[0] if arr.ndim == 1 else out, bad)


def _plan_weight(kernel):
    """harmonic / real-space time of a Plan priced by measurement with one backend for both
    parts (then the ratio holds on any worker of that kind); else None."""
    if not isinstance(kernel, Plan) or kernel.method != "split" \
            or not isinstance(kernel.cost_model, MeasuredCostModel) \
            or kernel.harmonic_backend != kernel.realspace_backend \
            or not kernel.time_realspace > 0:
        return None
    return kernel.time_harmonic / kernel.time_realspace


def _send(client, data, workers, resources):
    """Scatter ``data`` to ``workers`` (falling back to any eligible worker when one of them
    dies meanwhile, or has left: the scheduler's KeyError names its address)."""
    if workers:
        try:
            return client.scatter(data, workers=list(workers), hash=False,
                                  direct=_cluster.direct(client))
        except (OSError, KeyError):
            pass
    return tasks.scatter(client, data, resources)


def _run_whole(client, items, parts, resources, progress, gather=True):
    """Each of ``items`` (maps (k, npix)) convolved by one task running ``parts`` whole."""
    def build(todo):
        data = tasks.scatter(client, [items[i] for i in todo], resources)
        key = tasks.key("convolve")
        futs = tasks.submit_each(client, _execute_task, data, [parts] * len(todo),
                                 keys=[(key, i) for i in todo], resources=resources)
        return [[f] for f in futs]

    if not gather:
        return [f for [f] in build(list(range(len(items))))]
    return tasks.run_items(client, len(items), build, progress=progress)


def convolve_many(maps, kernel, *, method="auto", l_cut=None, theta_cut=None, backend="auto",
                  harmonic_backend=None, error_bound=1e-5, fit="sphgpu", geometry=None,
                  client=None, maps_per_task=1, gather=True, progress=False):
    """Convolve many maps with one kernel on a Dask cluster, one task per ``maps_per_task``
    of them; each task runs the serial :func:`sphgpu.convolve.convolve` on its worker (a
    split's two parts concurrently there: two streams on a GPU worker).

    Parameters
    ----------
    maps : array, shape (k, npix) (or (npix,)), float64; or a list of Dask futures
        Futures (maps made on the workers, each (npix,) or (j, npix)) are convolved where they
        are, one task each; then ``geometry`` (or a HEALPix ``nside`` through it) must be given
        unless the kernel is a Plan.
    kernel, method, l_cut, theta_cut, backend, harmonic_backend, error_bound, fit, geometry
        As in :func:`convolve`. Tasks ask for a GPU when either part runs on "cuda".
    client : distributed.Client, optional
        Default: the current Dask client.
    maps_per_task : int
        Maps per task.
    gather : bool
        True: return the maps here; False: one future per task, results left on the workers.
    progress : bool
        Show Dask's progress bar.

    Returns
    -------
    ndarray, shape (k, npix) (or (npix,)) -- or a list of futures with ``gather=False``.
    """
    client = _cluster.get_client(client)
    futures_in = tasks.is_future_list(maps)
    if futures_in:
        if geometry is None and isinstance(kernel, Plan):
            geometry = RingGeometry.healpix(kernel.nside)
        if geometry is None:
            raise ValueError("with futures as maps, pass geometry= (the maps are not here to "
                             "infer nside from)")
        geom = resolve_geometry(None, geometry)
        items, single, bad = list(maps), False, None
    else:
        arr, bad = tasks.host_array("maps", maps, as_maps)
        geom = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")
        single = arr.ndim == 1
        arr = arr[None] if single else arr
        per = check_int("maps_per_task", maps_per_task, minimum=1)
        items = [np.ascontiguousarray(arr[i:i + per]) for i in range(0, arr.shape[0], per)]
    parts = _parts(client, kernel, geom.npix, geom, method=method, l_cut=l_cut,
                   theta_cut=theta_cut, backend=backend, harmonic_backend=harmonic_backend,
                   error_bound=error_bound, fit=fit)
    with _cluster.one_view(client):
        used = [_cluster.placement(client, name) for name in (parts.harmonic_backend,
                                                              parts.realspace_backend)
                if name is not None]
    # tasks ask for a GPU when either part runs on one
    res = next((r for name, r in used if backends.info(name).gpu), used[0][1])
    if futures_in:
        key = tasks.key("convolve")
        futs = tasks.submit_each(client, _execute_task, items, [parts] * len(items),
                                 keys=[(key, i) for i in range(len(items))], resources=res)
        if not gather:
            return futs
        return tasks.stack([[r] for r in client.gather(futs)], False)
    out = _run_whole(client, items, parts, res, progress, gather=gather)
    return _unseen(tasks.stack(out, single), bad) if gather else out
