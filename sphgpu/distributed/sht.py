"""Spherical harmonic transforms on a Dask cluster: batches of maps, and one transform split
over many workers.

Batches (:func:`alm2map_many`, :func:`map2alm_many`): k independent transforms, one task per
group of maps. Each group is sent once to the worker that transforms it; on a GPU worker the
whole transform runs on its device (``sphgpu.alm2map(..., backend="cuda")``), and only the
result comes back. Data can stay where it is used: :func:`to_workers` sends a batch once
(optionally onto the GPUs), the ``*_many`` functions take those futures and, with
``gather=False`` (and ``on_device=True``), leave their results on the workers (GPUs) for the
next step; :func:`anafast_many` and :func:`alm2cl_many` reduce maps or a_lm to spectra where
they are, so only spectra come back. Each worker keeps its set-up between tasks
(:mod:`sphgpu.distributed._worker`: one geometry object per grid, so GPU plans are reused).

One large transform (:func:`alm2map`, :func:`map2alm`), in one of two patterns:

``pattern="m"`` -- the SHT paper's distribution. Each task of the Legendre step gets a chunk of
    m (balanced by cost, :func:`~sphgpu.distributed.partition.m_chunks`) and computes
    Delta_m(theta) for all rings; its result is cut into one piece per ring chunk; each ring
    chunk's task gathers its pieces from every m chunk (Dask moves them: the all-to-all
    exchange) and does the ring FFTs of its rings. map2alm runs the same graph backwards
    (ring FFTs per ring chunk, exchange, Legendre step per m chunk), and healpy's Jacobi
    iterations are more rounds of the same graph, with every a_lm chunk staying on its worker.
    Each worker holds only its share of the a_lm and of the map. Polarized sets (T, E, B)
    run the same graph on their scalar coefficient sets: the spin passes of
    :mod:`sphgpu.sht.spin` are local to each m, so each m chunk's task makes its own.
``pattern="rings"`` -- no exchange: every worker gets all a_lm, and each ring-chunk task runs a
    whole transform for its rings (a sub-grid of the geometry; chunks keep mirror rings
    together so the Legendre recurrence still serves two rings at once). map2alm adds the
    chunks' partial a_lm. Cheaper in traffic when the a_lm are much smaller than Delta_m
    (always, for lmax ~ 2 nside). Both run on CPU and GPU workers (``"m"`` through the
    Legendre and ring-FFT stages of :mod:`sphgpu.sht.stages`).

Results equal the serial ones to rounding (see ``TOL["distributed"]`` in the tests).

Faults: inputs are scattered to the workers (sent once, not through the scheduler). Tasks
whose worker dies are re-run elsewhere by Dask; if the worker held an input that is now lost,
that item is sent and submitted again (up to :data:`ATTEMPTS` times), so a returned result is
always complete. A task that fails, or keeps killing workers (Dask's ``KilledWorker``, or
:class:`WorkersLostError` when its inputs die with them), raises here, and the rest of the work
is cancelled: no partial result is ever returned.
"""

from __future__ import annotations

import functools
import operator
import uuid

import numpy as np

from .. import backends
from .._validate import (as_complex_array, as_maps, as_real_array, check_flag, check_int,
                         is_device_array)
from ..alm import AlmLayout
from ..geometry import RingGeometry
from ..sht import spin, stages
from ..sht.plan import resolve_geometry, shape_kind
from . import _worker
from . import cluster as _cluster
from .partition import alm_slice, m_chunks, ring_chunks, transform_ring_costs

__all__ = ["alm2map_many", "map2alm_many", "anafast_many", "alm2cl_many", "to_workers",
           "alm2map", "map2alm", "WorkersLostError", "ATTEMPTS", "PATTERNS"]

# the fault handling lives in cluster.py (shared by every distributed capability); these names
# stay importable from here
ATTEMPTS = _cluster.ATTEMPTS
WORKER_WAIT = _cluster.WORKER_WAIT
WorkersLostError = _cluster.WorkersLostError
PATTERNS = ("m", "rings")


# ----------------------------------------------------------------------------- plumbing
def _key(stage: str) -> str:
    # Dask groups tasks by the alphabetic words before the first token: "sphgpu-legendre"
    return f"sphgpu-{stage}-{uuid.uuid4().hex}"


def _eligible(client, resources):
    """Workers that can run a task asking for ``resources`` (where its inputs should go)."""
    return _cluster.eligible_workers(client, resources)


def _host_array(name, a, check):
    if is_device_array(a):
        raise TypeError(f"{name} is a GPU array: sphgpu.distributed takes NumPy arrays (each "
                        "worker copies its share to its own GPU); copy it to the host first")
    return check(name, a)


def _is_future_list(x):
    from distributed import Future

    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(f, Future) for f in x)


def _scatter(client, data, resources):
    """Send ``data`` (a list) to the workers that can run tasks with ``resources``, again on
    the workers left when one dies meanwhile (:func:`sphgpu.distributed.cluster.scatter`)."""
    return _cluster.scatter(client, data, resources)


def _run_items(client, n, build, *, progress=False):
    """Compute ``n`` independent items and return their results, in order.

    ``build(items)`` scatters the inputs of the listed items and submits their tasks,
    returning for each item the list of futures whose results make it up. An item whose
    futures are cancelled because a lost worker held its scattered input is built again (up
    to ATTEMPTS times in all); any task error cancels everything and is raised. Results are
    gathered one by one through :func:`sphgpu.distributed.cluster.result`, which does not
    wait out a gather from a worker killed under it (as_completed's own gathers did: 30 s).
    Returns a list (per item) of lists (per future).
    """
    from distributed import as_completed

    results = [None] * n
    todo = list(range(n))
    for _ in range(ATTEMPTS):
        owner, parts, lost = {}, {}, set()
        try:
            for i, futs in zip(todo, build(todo)):
                parts[i] = [None] * len(futs)
                for j, f in enumerate(futs):
                    owner[f] = (i, j)
            if progress:
                _cluster.show_progress(list(owner))
            for fut in as_completed(list(owner)):
                i, j = owner[fut]
                if i in lost:
                    continue
                res = _cluster.result(fut)       # a task's error is raised here
                if res is _cluster.LOST:
                    lost.add(i)
                else:
                    parts[i][j] = res
        except BaseException:
            client.cancel(list(owner))
            raise
        for i in todo:
            if i not in lost:
                results[i] = parts[i]
        todo = sorted(lost)
        if not todo:
            return results
    raise WorkersLostError(f"{len(todo)} of {n} item(s) lost their input with a dying worker "
                           f"{ATTEMPTS} times in a row; no result is returned (does a task "
                           "crash its worker, or is the cluster losing workers?)")


# ----------------------------------------------------------------------------- geometry on workers
def _geom_ref(g):
    """What tasks receive for a geometry (:func:`sphgpu.distributed._worker.geometry_ref`):
    ("healpix", nside), or ("grid", token, g), kept once per worker under its token."""
    return _worker.geometry_ref(g)


def _geom(ref):
    return _worker.geometry(ref)


@functools.lru_cache(maxsize=32)
def _healpix_subgeometry(nside, rings_bytes):
    return _build_subgeometry(RingGeometry.healpix(nside), np.frombuffer(rings_bytes, np.int64))


def _build_subgeometry(g, rings):
    nphi = g.nphi[rings]
    ringstart = np.concatenate(([0], np.cumsum(nphi)[:-1]))
    return RingGeometry(g.theta[rings], g.phi0[rings], nphi, ringstart, g.weight[rings],
                        kind="custom")


def _subgeometry(ref, rings):
    """The rings ``rings`` (sorted) of a geometry (or of a :func:`_geom_ref`) as a grid of
    their own, pixels packed ring after ring. Kept per worker and ring set, so GPU plans
    built for it are found again by the next task of the same chunk."""
    if not isinstance(ref, tuple):
        ref = _geom_ref(ref)
    key = np.ascontiguousarray(rings, np.int64).tobytes()
    if ref[0] == "healpix":
        return _healpix_subgeometry(ref[1], key)
    return _worker.cached(("subgeometry", ref[1], key),
                          lambda: _build_subgeometry(_geom(ref), np.frombuffer(key, np.int64)))


def _pixel_runs(g, rings):
    """Where the pixels of ``rings`` (packed as in :func:`_subgeometry`) sit in the parent map:
    a list of (start, stop) runs, merged where consecutive rings are adjacent."""
    runs = []
    for r in rings:
        a = int(g.ringstart[r])
        b = a + int(g.nphi[r])
        if runs and runs[-1][1] == a:
            runs[-1][1] = b
        else:
            runs.append([a, b])
    return [tuple(r) for r in runs]


def _take_pixels(maps, runs):
    return np.ascontiguousarray(np.concatenate([maps[:, a:b] for a, b in runs], axis=1))


def _put_pixels(out, piece, runs):
    pos = 0
    for a, b in runs:
        out[:, a:b] = piece[:, pos:pos + b - a]
        pos += b - a


# ----------------------------------------------------------------------------- tasks
# Module-level functions: workers import them from sphgpu, nothing is pickled by value.
# A batch is (k, n) spin-0 sets or (k, 3, n) polarized ones (T, E, B / I, Q, U): the number
# of axes says which, never the number of rows.
def _on_worker_device(x, on_device):
    return _worker.to_device(x) if on_device else x


def _synthesis_task(alm, lmax, mmax, ref, backend, on_device=False):
    """Maps of a group of a_lm; with ``on_device`` the input is first copied to this worker's
    GPU and the maps stay there (a CuPy array), else the kind of the input (device in,
    device out)."""
    from ..sht.transforms import alm2map

    alm = _on_worker_device(alm, on_device)
    return alm2map(alm, lmax=lmax, mmax=mmax, pol=alm.ndim == 3, geometry=_geom(ref),
                   backend=backend)


def _analysis_task(maps, lmax, mmax, iter, ref, backend, on_device=False):
    from ..sht.transforms import map2alm

    maps = _on_worker_device(maps, on_device)
    return map2alm(maps, lmax, mmax, iter, pol=maps.ndim == 3, geometry=_geom(ref),
                   backend=backend)


def _cl_of(alm, lmax, mmax, nspec):
    """Spectra of a group of a_lm as a NumPy array: (L,) for one set, (k, L) for k spin-0
    sets, (k, nspec, L) for k polarized (T, E, B) sets (healpy's order TT, EE, BB, TE, EB,
    TB). Computed where the a_lm are (on the GPU for device a_lm); only the spectra, a few
    kB, leave the device."""
    from .._device import to_host
    from ..sht.spectra import alm2cl

    if alm.ndim == 1:
        cl = alm2cl(alm, lmax=lmax, mmax=mmax)
    elif alm.ndim == 2:                       # spin-0 sets: each its own spectrum
        cl = alm2cl(alm[:, None, :], lmax=lmax, mmax=mmax)[:, 0]
    else:
        cl = alm2cl(alm, lmax=lmax, mmax=mmax, nspec=nspec)
    return np.asarray(to_host(cl))


def _spectra_task(maps, lmax, mmax, iter, ref, backend, on_device, nspec):
    """map2alm then alm2cl on the worker: maps in, spectra out (see :func:`_cl_of`)."""
    alm = _analysis_task(maps, lmax, mmax, iter, ref, backend, on_device)
    return _cl_of(alm, lmax, mmax, nspec)


def _alm_spectra_task(alm, lmax, mmax, nspec):
    return _cl_of(alm, lmax, mmax, nspec)


def _legendre_task(alm, layout, ref, mrange, ring_lists, backend):
    """m chunk -> Delta_m on all rings, cut into one piece per ring chunk. A polarized chunk
    (k, 3, n) T, E, B becomes its 3k scalar coefficient sets on the extended layout
    (:mod:`sphgpu.sht.spin`; the passes are local to each m), and its Delta_m rows take their
    sin^-2 ring factor here, so the ring tasks are the scalar ones."""
    g = _geom(ref)
    if alm.ndim == 3:
        t = spin.chunk_tables(layout, 2, mrange)
        coeffs = spin.coefficient_sets(alm, 2, layout, tables=t)
        leg = stages.alm2leg(coeffs.reshape(-1, coeffs.shape[-1]),
                             spin.extended_layout(layout, 2), g, mrange, backend=backend)
        leg = spin.scale_rows(leg, spin.row_scale(np, g, 2, 3))
    else:
        leg = stages.alm2leg(alm, layout, g, mrange, backend=backend)
    return tuple(np.ascontiguousarray(leg[:, rings, :]) for rings in ring_lists)


def _ringfft_task(ref, rings, backend, *pieces):
    """Pieces of Delta_m from every m chunk (in m order) -> the pixels of this ring chunk."""
    leg = np.concatenate(pieces, axis=2)
    return stages.leg2map(leg, _subgeometry(_geom(ref), rings), backend=backend)


def _analysis_ring_task(maps, ref, rings, mmax, mranges, backend, *synth_pieces):
    """Ring chunk: (maps minus the synthesis of the current a_lm, if given) -> weighted
    Delta_m, cut into one piece per m chunk."""
    sub = _subgeometry(_geom(ref), rings)
    if synth_pieces:
        maps = maps - stages.leg2map(np.concatenate(synth_pieces, axis=2), sub, backend=backend)
    leg = stages.map2leg(maps, sub, mmax, backend=backend)
    return tuple(np.ascontiguousarray(leg[:, :, r.start:r.stop]) for r in mranges)


def _adjoint_legendre_task(layout, ref, ring_lists, mrange, backend, pol, previous, *pieces):
    """m chunk: pieces from every ring chunk -> a_lm of this chunk (+ ``previous``); with
    ``pol`` the pieces' rows are I, Q, U triples and the result (k, 3, n) T, E, B (the
    transpose of :func:`_legendre_task`)."""
    g = _geom(ref)
    leg = np.empty((pieces[0].shape[0], g.nrings, len(mrange)), dtype=np.complex128)
    for rings, p in zip(ring_lists, pieces):
        leg[:, rings, :] = p
    if pol:
        leg = spin.scale_rows(leg, spin.row_scale(np, g, 2, 3))
        c = stages.leg2alm(leg, spin.extended_layout(layout, 2), g, mrange, backend=backend)
        alm = spin.coefficient_sets_adjoint(c.reshape(-1, 3, c.shape[-1]), 2, layout,
                                            tables=spin.chunk_tables(layout, 2, mrange))
    else:
        alm = stages.leg2alm(leg, layout, g, mrange, backend=backend)
    return alm if previous is None else previous + alm


def _rings_synthesis_task(alm, layout, ref, rings, backend):
    """Ring chunk's pixels, (rows, npix_chunk) with rows = k or 3k (polarized: alm 3-D)."""
    from ..sht.transforms import alm2map

    out = alm2map(alm, lmax=layout.lmax, mmax=layout.mmax, pol=alm.ndim == 3,
                  geometry=_subgeometry(_geom(ref), rings), backend=backend)
    return out.reshape(-1, out.shape[-1])


def _rings_analysis_task(maps, alm, layout, ref, rings, backend, pol):
    """Ring chunk's share of one analysis pass of (maps - synthesis(alm)) (or of maps);
    maps (rows, npix_chunk), read as (k, 3, npix_chunk) I, Q, U when ``pol``."""
    from ..sht.transforms import alm2map, map2alm

    sub = _subgeometry(_geom(ref), rings)
    if pol:
        maps = maps.reshape(-1, 3, maps.shape[-1])
    if alm is not None:
        maps = maps - alm2map(alm, lmax=layout.lmax, mmax=layout.mmax, pol=pol, geometry=sub,
                              backend=backend)
    return map2alm(maps, layout.lmax, layout.mmax, 0, pol=pol, geometry=sub, backend=backend)


def _sum_task(previous, *parts):
    total = parts[0].copy()
    for p in parts[1:]:
        total += p
    return total if previous is None else previous + total


# ----------------------------------------------------------------------------- batches
def _as_future_list(x):
    """A list of Dask futures for a future or a non-empty list/tuple of them, else None."""
    from distributed import Future

    if isinstance(x, Future):
        return [x]
    if _is_future_list(x):
        return list(x)
    return None


def _batch_inputs(name, data, check):
    """(list of row groups or futures, was 1-D, inputs are futures); arrays of shape (n,),
    (k, n) spin-0 or (k, 3, n) polarized."""
    futures = _as_future_list(data)
    if futures is not None:
        return futures, False, True
    arr = _host_array(name, data, lambda nm, a: check(nm, a, allow_batch=3))
    if arr.ndim == 3 and arr.shape[1] != 3:
        raise ValueError(f"{name} has shape {arr.shape}: a batch of polarized sets is (k, 3, n)")
    return arr, arr.ndim == 1, False


def _masked_maps(name, a, allow_batch):
    """Maps as sphgpu.map2alm reads them: UNSEEN and numpy.ma pixels set to zero."""
    return as_maps(name, a, max_ndim=allow_batch)[0]


def _groups(k, per):
    per = check_int("maps_per_task", per, minimum=1)
    return [slice(i, min(i + per, k)) for i in range(0, k, per)]


def _stack(results, single):
    """Results of the items in order, as one array when they are NumPy arrays."""
    flat = [r for item in results for r in item]
    if not all(isinstance(r, np.ndarray) for r in flat):
        return flat
    out = np.concatenate([r if r.ndim >= 2 else r[None] for r in flat], axis=0)
    return out[0] if single else out


def _check_on_device(on_device, gather, name):
    if not isinstance(on_device, (bool, np.bool_)):
        raise TypeError(f"on_device must be True or False, got {on_device!r}")
    if on_device and not backends.info(name).gpu:
        raise ValueError(f"on_device=True keeps results on the workers' GPUs, but the tasks "
                         f"run on the {name!r} backend (a cluster without GPU workers, or "
                         "backend='cpu')")
    if on_device and gather:
        raise ValueError("on_device=True leaves the results on the workers' GPUs: pass "
                         "gather=False too (and gather the futures where you need them)")
    return bool(on_device)


def _run_batch(client, stage, fn, inputs, futures_in, args, resources, gather, progress,
               per_task):
    """One task per group of ``per_task`` rows of ``inputs`` (each group scattered once, to
    the worker that will run it) or per future of ``inputs`` (transformed where it is)."""
    if futures_in:
        items = inputs
    else:
        items = [inputs[s] for s in _groups(inputs.shape[0], per_task)]

    def build(todo):
        data = [items[i] for i in todo]
        if not futures_in:
            data = _scatter(client, data, resources)
        key = _key(stage)                   # new keys for every round
        return [[client.submit(fn, d, *args, key=(key, i), resources=resources)]
                for i, d in zip(todo, data)]

    if not gather:
        futs = [f for [f] in build(list(range(len(items))))]
        if progress:
            _cluster.show_progress(futs)
        return futs
    return _run_items(client, len(items), build, progress=progress)


def to_workers(data, *, client=None, backend="auto", per_future=1, on_device=False):
    """Send a batch of arrays to the workers once and keep it there: the inputs of later
    ``*_many`` calls that then move nothing through this process.

    Parameters
    ----------
    data : array, shape (k, ...)
        Rows to send (e.g. k a_lm sets (k, nalm), complex128, or k maps (k, npix), float64).
    client : distributed.Client, optional
        Default: the current Dask client.
    backend : {"auto", "cuda", "cpu", "reference"}
        Which workers receive them: those that run this backend's tasks (the GPU workers for
        "auto" on a cluster that has them).
    per_future : int >= 1
        Rows per future (each future is one task of a later ``*_many`` call).
    on_device : bool
        Also copy each future's rows to its worker's GPU (a CuPy array there), once.

    Returns
    -------
    list of distributed.Future
        ``ceil(k / per_future)`` futures, spread evenly over the workers, each holding an array
        of shape ``(per_future, ...)`` (the last may have fewer rows). One transfer per input.
    """
    client = _cluster.get_client(client)
    name, resources = _cluster.placement(client, backend)
    on_device = _check_on_device(on_device, False, name)
    arr = _host_array("data", data, lambda n, a: np.asarray(a))
    if arr.ndim < 2 or arr.shape[0] == 0:
        raise ValueError(f"data must be a non-empty batch of shape (k, ...), got shape "
                         f"{arr.shape}")
    groups = _groups(arr.shape[0], check_int("per_future", per_future, minimum=1))
    futs = _scatter(client, [np.ascontiguousarray(arr[g]) for g in groups], resources)
    if not on_device:
        return futs
    # the copy runs where the rows are (the scheduler places a task next to its only input)
    return [client.submit(_worker.to_device, f, key=(_key("to-device"), i),
                          resources=resources) for i, f in enumerate(futs)]


def alm2map_many(alms, nside=None, lmax=None, mmax=None, *, geometry=None, backend="auto",
                 client=None, maps_per_task=1, gather=True, on_device=False, progress=False):
    """Synthesize many maps on a Dask cluster, one task per ``maps_per_task`` of them.

    Parameters
    ----------
    alms : array, shape (k, nalm) (or (nalm,)), complex; or a Dask future or list of futures
        Coefficient sets in healpy's order; (k, 3, nalm) is a batch of polarized T, E, B sets
        (each gives I, Q, U maps, as ``sphgpu.alm2map`` with ``pol=True``). NumPy rows are sent
        once each, to the worker that transforms them. Futures (a_lm made or kept on the
        workers, e.g. by :func:`to_workers`; each (nalm,), (k, nalm) or (k, 3, nalm)) are
        transformed where they are, one task each, without passing through this process; give
        ``lmax`` (and ``mmax``) then.
    nside, lmax, mmax, geometry
        As in :func:`sphgpu.alm2map`.
    backend : {"auto", "cuda", "cpu", "reference"}
        ``"auto"``: the GPU workers when the cluster has any, else CPU workers. ``"cuda"`` on a
        cluster without a GPU worker raises :class:`~sphgpu.distributed.NoGPUWorkerError`.
    client : distributed.Client, optional
        Default: the current Dask client.
    maps_per_task : int
        Maps per task (GPU transforms of several maps share one Legendre recurrence).
    gather : bool
        True: return the maps here. False: return one future per task, results left on the
        workers (no retry of lost inputs then: the futures are yours).
    on_device : bool
        With ``gather=False`` on GPU workers: each task copies its a_lm to its GPU and leaves
        the maps there (CuPy arrays), so no map crosses host memory. Futures of device arrays
        give device maps without it.
    progress : bool
        Show Dask's progress bar (a widget in notebooks).

    Returns
    -------
    ndarray, shape (k, npix) (or (npix,), or (k, 3, npix)), float64 -- or a list of futures
    (``gather=False``), one per task, of arrays of shape (rows, npix) or (rows, 3, npix).
    With futures as input, a list of the results when they are not NumPy arrays (device arrays
    stay device arrays).

    The worker keeps its transform set-up between tasks and calls (one geometry object per
    grid, hence one GPU plan per grid and band limit: :mod:`sphgpu.distributed._worker`).
    """
    client = _cluster.get_client(client)
    name, resources = _cluster.placement(client, backend)
    on_device = _check_on_device(on_device, gather, name)
    data, single, futures_in = _batch_inputs("alms", alms, as_complex_array)
    g = resolve_geometry(nside, geometry)
    if not futures_in:
        layout = AlmLayout.from_size(data.shape[-1], lmax, mmax, name="alms")
        lmax, mmax = layout.lmax, layout.mmax
        data = data[None] if single else data
    out = _run_batch(client, "synthesis", _synthesis_task, data, futures_in,
                     (lmax, mmax, _geom_ref(g), name, on_device), resources, gather, progress,
                     maps_per_task)
    return _stack(out, single) if gather else out


def _analysis_inputs(maps, geometry, lmax, mmax):
    """(data, was 1-D, futures in, geometry, AlmLayout) of a batch of maps or futures."""
    data, single, futures_in = _batch_inputs("maps", maps, _masked_maps)
    if futures_in:
        if geometry is None:
            raise ValueError("with futures as maps, pass geometry= (the maps are not here to "
                             "infer nside from)")
        g = resolve_geometry(None, geometry)
    else:
        g = resolve_geometry(None, geometry, npix=data.shape[-1], name="maps")
        data = data[None] if single else data
    layout = AlmLayout(g.natural_lmax if lmax is None else lmax, mmax)
    return data, single, futures_in, g, layout


def map2alm_many(maps, lmax=None, mmax=None, iter=3, *, geometry=None, backend="auto",
                 client=None, maps_per_task=1, gather=True, on_device=False, progress=False):
    """Analyse many maps on a Dask cluster (healpy's ``map2alm`` with ``iter`` Jacobi
    iterations for each), one task per ``maps_per_task`` of them.

    Parameters
    ----------
    maps : array, shape (k, npix) (or (npix,)), real; or a Dask future or list of futures
        The maps; (k, 3, npix) is a batch of polarized I, Q, U maps. With futures, pass
        ``geometry`` (``sphgpu.RingGeometry.healpix(nside)`` for HEALPix).
    lmax, mmax, iter, geometry
        As in :func:`sphgpu.map2alm`.
    backend, client, maps_per_task, gather, on_device, progress
        As in :func:`alm2map_many` (``on_device``: the a_lm stay on the GPUs).

    Returns
    -------
    ndarray, shape (k, nalm) (or (nalm,), or (k, 3, nalm)), complex128 -- or a list of futures
    (``gather=False``).
    """
    client = _cluster.get_client(client)
    name, resources = _cluster.placement(client, backend)
    on_device = _check_on_device(on_device, gather, name)
    iter = check_int("iter", iter, minimum=0)
    data, single, futures_in, g, layout = _analysis_inputs(maps, geometry, lmax, mmax)
    out = _run_batch(client, "analysis", _analysis_task, data, futures_in,
                     (layout.lmax, layout.mmax, iter, _geom_ref(g), name, on_device), resources,
                     gather, progress, maps_per_task)
    return _stack(out, single) if gather else out


def _spectra_out(out, gather, single):
    if not gather:
        return out
    flat = [r for item in out for r in item]
    res = np.concatenate([r if r.ndim >= 2 else r[None] for r in flat], axis=0)
    return res[0] if single else res


def anafast_many(maps, lmax=None, mmax=None, iter=3, *, geometry=None, nspec=None,
                 backend="auto", client=None, maps_per_task=1, progress=False, gather=True):
    """Power spectra of many maps, each reduced on the worker that holds it: maps in (NumPy
    rows sent once each, or futures left on the workers), only the spectra come back.

    Each task runs :func:`sphgpu.map2alm` and :func:`sphgpu.alm2cl` on its worker (on its GPU
    for device maps or GPU workers), as ``sphgpu.anafast`` of each map alone.

    Parameters
    ----------
    maps : array, shape (k, npix) (or (npix,)), real; or a Dask future or list of futures
        Temperature maps, or (k, 3, npix) I, Q, U maps (healpy's six spectra TT, EE, BB, TE,
        EB, TB of each). UNSEEN and ``numpy.ma`` pixels count as zero. With futures, pass
        ``geometry``.
    lmax, mmax, iter, geometry
        As in :func:`sphgpu.anafast` (``iter`` Jacobi iterations of map2alm, 3 as healpy).
    nspec : int, optional
        Keep the first nspec spectra of polarized maps.
    backend, client, maps_per_task, progress
        As in :func:`alm2map_many`.
    gather : bool
        False: one future per task of its spectra, left on the workers.

    Returns
    -------
    ndarray, float64, shape (k, lmax + 1) (or (lmax + 1,)), or (k, nspec, lmax + 1) for
    polarized maps; units of the maps squared. With ``gather=False`` a list of futures.
    """
    client = _cluster.get_client(client)
    name, resources = _cluster.placement(client, backend)
    iter = check_int("iter", iter, minimum=0)
    data, single, futures_in, g, layout = _analysis_inputs(maps, geometry, lmax, mmax)
    if nspec is not None:
        nspec = check_int("nspec", nspec, minimum=1, maximum=6)
    out = _run_batch(client, "spectra", _spectra_task, data, futures_in,
                     (layout.lmax, layout.mmax, iter, _geom_ref(g), name, False, nspec),
                     resources, gather, progress, maps_per_task)
    return _spectra_out(out, gather, single)


def alm2cl_many(alms, lmax=None, mmax=None, *, nspec=None, backend="auto", client=None,
                maps_per_task=1, gather=True, progress=False):
    """Auto spectra of many a_lm sets (healpy's ``alm2cl`` of each), computed where the a_lm
    are: futures from :func:`map2alm_many` (``gather=False``) or :func:`to_workers` stay on
    their workers (and GPUs), and only the spectra come back.

    Parameters
    ----------
    alms : array, shape (k, nalm) (or (nalm,)), complex; or a Dask future or list of futures
        Spin-0 sets, or (k, 3, nalm) T, E, B sets (six spectra each, healpy's order).
    lmax, mmax : int, optional
        Band limits (default: from the length of the a_lm, mmax = lmax).
    nspec : int, optional
        Keep the first nspec spectra of polarized sets.
    backend, client, maps_per_task, gather, progress
        As in :func:`anafast_many` (``backend`` picks the workers).

    Returns
    -------
    ndarray, float64, shape (k, lmax + 1) (or (lmax + 1,)), or (k, nspec, lmax + 1); a list
    of futures with ``gather=False``.
    """
    client = _cluster.get_client(client)
    _, resources = _cluster.placement(client, backend)
    data, single, futures_in = _batch_inputs("alms", alms, as_complex_array)
    if not futures_in:
        layout = AlmLayout.from_size(data.shape[-1], lmax, mmax, name="alms")
        lmax, mmax = layout.lmax, layout.mmax
        data = data[None] if single else data
    if nspec is not None:
        nspec = check_int("nspec", nspec, minimum=1, maximum=6)
    out = _run_batch(client, "alm2cl", _alm_spectra_task, data, futures_in,
                     (lmax, mmax, nspec), resources, gather, progress, maps_per_task)
    return _spectra_out(out, gather, single)


# ----------------------------------------------------------------------------- one large transform
def _check_pattern(pattern):
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    return pattern


def _chunk_count(client, name, nchunks):
    if nchunks is not None:
        return check_int("nchunks", nchunks, minimum=1)
    if backends.info(name).gpu:
        return len(_cluster.gpu_workers(client))
    return max(1, _cluster.cpu_slots(client))


def _plan(g, layout, n, pattern):
    """(m ranges, ring lists) for a transform split n ways."""
    if pattern == "m":
        return (m_chunks(layout.lmax, layout.mmax, n, nrings=g.nrings),
                ring_chunks(g.nphi, n))
    pairs = g.ring_pairs()
    return None, ring_chunks(g.nphi, n, pairs=pairs,
                             cost=transform_ring_costs(g.nphi, pairs, layout.size))


def alm2map(alm, nside=None, lmax=None, mmax=None, *, pol=True, geometry=None, backend="auto",
            client=None, nchunks=None, pattern="m", progress=False):
    """One synthesis (healpy's ``alm2map``) split over the workers of a Dask cluster.

    Parameters
    ----------
    alm : array, shape (nalm,), (3, nalm), (k, nalm) or (k, 3, nalm), complex
    nside, lmax, mmax, pol, geometry
        As in :func:`sphgpu.alm2map` (healpy's ``pol=True``: 3 rows are T, E, B), in either
        pattern.
    backend : {"auto", "cuda", "cpu", "reference"}
        As in :func:`alm2map_many`.
    client : distributed.Client, optional
    nchunks : int, optional
        m chunks and ring chunks (default: one per GPU worker, or per CPU slot).
    pattern : {"m", "rings"}
        ``"m"``: the SHT paper's m chunks, all-to-all of Delta_m, ring chunks. ``"rings"``:
        every worker gets the a_lm and synthesizes its own rings. See the module docstring.
    progress : bool
        Show Dask's progress bar.

    Returns
    -------
    ndarray, shape (npix,) or (k, npix), float64, equal to the serial ``sphgpu.alm2map`` to
    rounding.
    """
    client = _cluster.get_client(client)
    name, resources = _cluster.placement(client, backend)
    pattern = _check_pattern(pattern)
    arr = _host_array("alm", alm, lambda n, a: as_complex_array(n, a, allow_batch=3))
    polarized, lead = shape_kind("alm", arr, check_flag("pol", pol), "a_lm set")
    g = resolve_geometry(nside, geometry)
    layout = AlmLayout.from_size(arr.shape[-1], lmax, mmax, name="alm")
    batch = arr.reshape((-1, 3, arr.shape[-1]) if polarized else (-1, arr.shape[-1]))
    mranges, ring_lists = _plan(g, layout, _chunk_count(client, name, nchunks), pattern)
    ref = _geom_ref(g)

    def build(_):
        return [build_graph()]

    def build_graph():
        if pattern == "rings":
            # to one worker, the others fetch it (Dask's broadcast hangs on a dying worker,
            # see cluster.scatter)
            [alm_f] = _scatter(client, [batch], resources)
            key = _key("synthesis")
            return [client.submit(_rings_synthesis_task, alm_f, layout, ref, rings, name,
                                  key=(key, r), resources=resources)
                    for r, rings in enumerate(ring_lists)]
        chunks = _scatter(client, [np.ascontiguousarray(batch[..., alm_slice(layout.lmax, mr)])
                                   for mr in mranges], resources)
        kl, kx, kf = _key("legendre"), _key("exchange"), _key("ringfft")
        legs = [client.submit(_legendre_task, a, layout, ref, mr, ring_lists, name,
                              key=(kl, c), resources=resources)
                for c, (a, mr) in enumerate(zip(chunks, mranges))]
        pieces = [[client.submit(operator.getitem, leg, r, key=(kx, c, r))
                   for r in range(len(ring_lists))] for c, leg in enumerate(legs)]
        return [client.submit(_ringfft_task, ref, rings, name,
                              *[pieces[c][r] for c in range(len(legs))],
                              key=(kf, r), resources=resources)
                for r, rings in enumerate(ring_lists)]

    [parts] = _run_items(client, 1, build, progress=progress)
    out = np.zeros((batch.size // batch.shape[-1], g.npix))
    for rings, piece in zip(ring_lists, parts):
        _put_pixels(out, piece, _pixel_runs(g, rings))
    return out.reshape(lead + (g.npix,))


def map2alm(maps, lmax=None, mmax=None, iter=3, *, pol=True, geometry=None, backend="auto",
            client=None, nchunks=None, pattern="m", progress=False):
    """One analysis (healpy's ``map2alm``, ``iter`` Jacobi iterations) split over the workers
    of a Dask cluster; arguments as in :func:`alm2map` and :func:`sphgpu.map2alm` (I, Q, U
    maps with ``pol=True``, in either pattern; UNSEEN and ``numpy.ma`` pixels count
    as zero).

    With ``pattern="m"`` the map stays split by ring chunks and the a_lm by m chunks on their
    workers through all iterations; only Delta_m pieces move between them. With ``"rings"``
    each ring chunk's partial a_lm are added up after every pass.

    Parameters
    ----------
    maps : array, shape (npix,), (3, npix), (k, npix) or (k, 3, npix), real
        The map(s).
    lmax, mmax, iter, pol, geometry
        As in :func:`sphgpu.map2alm`.
    backend, client, nchunks, pattern, progress
        As in :func:`alm2map`.

    Returns
    -------
    ndarray, shape (nalm,) or (k, nalm), complex128, equal to the serial ``sphgpu.map2alm`` to
    rounding.
    """
    client = _cluster.get_client(client)
    name, resources = _cluster.placement(client, backend)
    pattern = _check_pattern(pattern)
    iter = check_int("iter", iter, minimum=0)
    arr = _host_array("maps", maps, lambda n, a: as_maps(n, a, max_ndim=3)[0])
    polarized, lead = shape_kind("maps", arr, check_flag("pol", pol), "map")
    g = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")
    layout = AlmLayout(g.natural_lmax if lmax is None else lmax, mmax)
    batch = arr.reshape(-1, arr.shape[-1])          # rows: k maps, or k I, Q, U triples
    mranges, ring_lists = _plan(g, layout, _chunk_count(client, name, nchunks), pattern)
    ref = _geom_ref(g)
    nr = len(ring_lists)

    def build(_):
        return [build_graph()]

    def build_graph():
        map_f = _scatter(client, [_take_pixels(batch, _pixel_runs(g, rings))
                                  for rings in ring_lists], resources)
        if pattern == "rings":
            alm = None
            for it in range(iter + 1):
                ka = _key("analysis")
                partial = [client.submit(_rings_analysis_task, map_f[r], alm, layout, ref,
                                         rings, name, polarized, key=(ka, r),
                                         resources=resources)
                           for r, rings in enumerate(ring_lists)]
                alm = client.submit(_sum_task, alm, *partial, key=_key("sum"))
            return [alm]
        nm = len(mranges)
        alm_c = [None] * nm
        synth = None                   # synth[c][r]: pieces of the current a_lm's Delta_m
        for it in range(iter + 1):
            kf, kx, kl = _key("ringfft"), _key("exchange"), _key("legendre")
            legs = [client.submit(_analysis_ring_task, map_f[r], ref, rings, layout.mmax,
                                  mranges, name,
                                  *([synth[c][r] for c in range(nm)] if synth else []),
                                  key=(kf, r), resources=resources)
                    for r, rings in enumerate(ring_lists)]
            pieces = [[client.submit(operator.getitem, legs[r], c, key=(kx, r, c))
                       for c in range(nm)] for r in range(nr)]
            alm_c = [client.submit(_adjoint_legendre_task, layout, ref, ring_lists, mr, name,
                                   polarized, alm_c[c], *[pieces[r][c] for r in range(nr)],
                                   key=(kl, c), resources=resources)
                     for c, mr in enumerate(mranges)]
            if it < iter:
                ks, kx2 = _key("legendre"), _key("exchange")
                sl = [client.submit(_legendre_task, alm_c[c], layout, ref, mr, ring_lists, name,
                                    key=(ks, c), resources=resources)
                      for c, mr in enumerate(mranges)]
                synth = [[client.submit(operator.getitem, sl[c], r, key=(kx2, c, r))
                          for r in range(nr)] for c in range(nm)]
        return alm_c

    [parts] = _run_items(client, 1, build, progress=progress)
    alm = np.concatenate(parts, axis=-1)
    return alm.reshape(lead + (layout.size,))
