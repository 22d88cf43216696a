"""Spherical harmonic transforms on a Dask cluster: batches of maps, and one transform split
over many workers.

Every task receives a transform plan, :class:`sphgpu.SHT`, and calls its methods on the worker
(``plan.alm2map``, ``plan.map2alm``, the polarized forms, the ring steps ``leg2map`` and
``map2leg``). A plan pickles as its description (nside, lmax, mmax, the grid's recipe, the
backend's name), so a task carries a few numbers, and each worker rebuilds it once and keeps it
(:func:`sphgpu.sht.plan.rebuild`), with the backend's own set-up (on a GPU: the recurrence
tables and FFT plans) for every later task that ships the same description.

Batches (:func:`alm2map_many`, :func:`map2alm_many`): k independent transforms, one task per
group of maps. Each group is sent once to the worker that transforms it; on a GPU worker the
whole transform runs on its device, and only the result comes back. Data can stay where it is
used: :func:`to_workers` sends a batch once (optionally onto the GPUs), the ``*_many``
functions take those futures (or any list of futures of arrays, e.g. from ``client.scatter``
or an earlier ``gather=False`` call) and, with ``gather=False`` (and ``on_device=True``), leave
their results on the workers (GPUs) for the next step; :func:`anafast_many` and
:func:`alm2cl_many` reduce maps or a_lm to spectra where they are, so only spectra come back.
Every call takes ``report=``, a function given the call's :class:`Transfer` (bytes sent to and
received from the workers, and the seconds each took).

One large transform (:func:`alm2map`, :func:`map2alm`), in one of two patterns:

``pattern="m"`` -- the SHT paper's distribution. Each task of the Legendre step gets a chunk of
    m (balanced by cost, :func:`~sphgpu.distributed.partition.m_chunks`) and computes
    Delta_m(theta) for all rings; its result is cut into one piece per ring chunk; each ring
    chunk's task gathers its pieces from every m chunk (Dask moves them: the all-to-all
    exchange) and does the ring FFTs of its rings (``leg2map`` of the plan of its rings).
    map2alm runs the same graph backwards (``map2leg`` per ring chunk, exchange, Legendre step
    per m chunk), and healpy's Jacobi iterations are more rounds of the same graph, with every
    a_lm chunk staying on its worker. Each worker holds only its share of the a_lm and of the
    map. Polarized sets (T, E, B) run the same graph on their scalar coefficient sets: the spin
    passes of :mod:`sphgpu.sht.spin` are local to each m, so each m chunk's task makes its own.
    The plan's Legendre steps run all orders at once, so the m-chunk steps call
    :mod:`sphgpu.sht.stages` with the plan's layout, grid and backend.
``pattern="rings"`` -- no exchange: every worker gets all a_lm, and each ring-chunk task runs a
    whole transform for its rings (the plan of a sub-grid of the geometry; chunks keep mirror
    rings together so the Legendre recurrence still serves two rings at once). map2alm adds the
    chunks' partial a_lm. Cheaper in traffic when the a_lm are much smaller than Delta_m
    (always, for lmax ~ 2 nside). Both run on CPU and GPU workers.

Results equal the serial ones to rounding (see ``TOL["distributed"]`` in the tests).

Faults: inputs are scattered to the workers (sent once, not through the scheduler). Tasks
whose worker dies are re-run elsewhere by Dask; if the worker held an input that is now lost,
that item is sent and submitted again (up to :data:`ATTEMPTS` times), so a returned result is
always complete. A task that fails, or keeps killing workers (Dask's ``KilledWorker``, or
:class:`WorkersLostError` when its inputs die with them), raises here, and the rest of the work
is cancelled: no partial result is ever returned.
"""

from __future__ import annotations

import dataclasses
import operator
import time

import numpy as np

from .. import backends
from .._kept import Kept
from .._validate import as_complex_array, as_maps, check_flag, check_int
from ..alm import AlmLayout
from ..sht import spin, stages
from ..sht.plan import describe, plan_elsewhere, resolve_geometry, shape_kind
from . import _worker
from . import cluster as _cluster
from . import tasks
from .partition import alm_slice, m_chunks, ring_chunks, transform_ring_costs

__all__ = ["alm2map_many", "map2alm_many", "anafast_many", "alm2cl_many", "to_workers",
           "alm2map", "map2alm", "Transfer", "WorkersLostError", "ATTEMPTS", "PATTERNS"]

# the fault handling lives in cluster.py (shared by every distributed capability); these names
# stay importable from here
ATTEMPTS = _cluster.ATTEMPTS
WORKER_WAIT = _cluster.WORKER_WAIT
WorkersLostError = _cluster.WorkersLostError
PATTERNS = ("m", "rings")


# ----------------------------------------------------------------------------- transfers
@dataclasses.dataclass
class Transfer:
    """What one call moved between this process and the workers, given to ``report=``.

    Attributes
    ----------
    sent_bytes : int
        Bytes of NumPy arrays sent to the workers (inputs; 0 when they were futures).
    send_seconds : float
        Wall seconds of those sends, each until the workers held the data.
    received_bytes : int
        Bytes of results brought back here (0 with ``gather=False``, or for results that are
        not arrays).
    receive_seconds : float
        Wall seconds spent fetching results once computed (not waiting for them).
    seconds : float
        The whole call. With ``gather=True`` results are fetched while later tasks compute,
        so this is not the sum of sending, computing and receiving.
    tasks : int
        Tasks submitted (again after a lost worker: counted each time).
    """

    sent_bytes: int = 0
    send_seconds: float = 0.0
    received_bytes: int = 0
    receive_seconds: float = 0.0
    seconds: float = 0.0
    tasks: int = 0

    @property
    def send_rate(self) -> float | None:
        """Bytes per second sent (None when nothing was sent)."""
        return self.sent_bytes / self.send_seconds if self.sent_bytes and self.send_seconds \
            else None

    @property
    def receive_rate(self) -> float | None:
        """Bytes per second received (None when nothing was received)."""
        return (self.received_bytes / self.receive_seconds
                if self.received_bytes and self.receive_seconds else None)

    @property
    def rate(self) -> float | None:
        """Bytes per second over both directions' transfer time (None when nothing moved)."""
        moved, spent = self.sent_bytes + self.received_bytes, \
            self.send_seconds + self.receive_seconds
        return moved / spent if moved and spent else None


def _check_report(report):
    return tasks.check_report(report, "a Transfer")


# ----------------------------------------------------------------------------- plans
#: the plans this process sent lately, one per description: repeated calls ship the same
#: object, so in-process workers (which may receive it unpickled) reuse its set-up too
_SENT = Kept(8)


def _plan(g, layout, name):
    """The :class:`sphgpu.SHT` that tasks receive: grid ``g``, ``layout``, backend ``name``
    (resolved for the workers, not loaded here: this process may have no GPU)."""
    return _SENT.get(describe(g, layout, name), lambda: plan_elsewhere(g, layout, name))


def _ring_plan(plan, rings):
    """On a worker: the plan of ``plan``'s transform on the sub-grid of its rings ``rings``,
    made once per worker, plan and ring chunk, so the next task (or iteration) of the same
    chunk finds its set-up (GPU tables) again."""
    rings = np.ascontiguousarray(rings, np.int64)
    return _worker.cached(
        ("ring-plan", plan.description, rings.tobytes()),
        lambda: plan_elsewhere(plan.geometry.packed(rings), plan.layout, plan.backend))


def _pixel_runs(g, rings):
    """Where the pixels of ``rings`` (packed as in :meth:`RingGeometry.packed`) sit in the
    parent map: a list of (start, stop) runs, merged where consecutive rings are adjacent."""
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
# of axes says which, never the number of rows. ``name`` is the argument's name for the
# content of a future, which the caller never saw and the task checks (None: NumPy rows
# checked before they were sent).
def _check_batch(name, arr, n=None, what=""):
    """ValueError naming ``name`` unless ``arr`` is (n,), (k, n) or (k, 3, n) (any n when
    ``n`` is None)."""
    if arr.ndim == 3 and arr.shape[1] != 3:
        raise ValueError(f"{name} has shape {arr.shape}: a batch of polarized sets is (k, 3, n)")
    if n is not None and arr.shape[-1] != n:
        raise ValueError(f"{name} has shape {arr.shape}, but {what} needs {n} values on its "
                         "last axis")
    return arr


def _masked_maps(name, a, allow_batch):
    """Maps as sphgpu.map2alm reads them: UNSEEN and numpy.ma pixels set to zero."""
    return as_maps(name, a, max_ndim=allow_batch)[0]


def _alm_input(alm, name, plan, on_device, pending=None):
    """A task's a_lm: a future's checked here as the caller's NumPy rows were; with
    ``on_device`` copied to this worker's GPU (once per task). ``pending``: as in
    :func:`sphgpu._validate.as_complex_array`, the NaN check of device a_lm left to the caller."""
    if name is not None:
        alm = _check_batch(name, as_complex_array(name, alm, allow_batch=3, pending=pending),
                           plan.nalm, f"lmax={plan.lmax}, mmax={plan.mmax}")
    return _worker.to_device(alm) if on_device else alm


def _maps_input(maps, name, plan, on_device):
    """A task's maps, as :func:`_alm_input` (UNSEEN pixels of a future's maps zeroed)."""
    if name is not None:
        maps = _check_batch(name, _masked_maps(name, maps, 3), plan.npix, repr(plan.geometry))
    return _worker.to_device(maps) if on_device else maps


def _synthesis_task(alm, name, plan, on_device=False):
    """Maps of a group of a_lm through ``plan`` (a :class:`sphgpu.SHT`): NumPy in, NumPy out;
    device in (or ``on_device``), a CuPy array left on this worker's GPU."""
    # a_lm already on the GPU are checked for NaN after the transform is queued, as
    # sphgpu.alm2map does: a check before it would wait for the previous task's transform and
    # leave the GPU idle while Dask starts this task (the maps are returned only if it passes)
    pending = []
    alm = _alm_input(alm, name, plan, on_device, pending)
    maps = plan.alm2map(alm, pol=alm.ndim == 3)
    for check in pending:
        check()
    return maps


def _analysis_task(maps, name, plan, iter, on_device=False):
    """a_lm of a group of maps through ``plan`` (``iter`` Jacobi iterations)."""
    maps = _maps_input(maps, name, plan, on_device)
    return plan.map2alm(maps, iter=iter, pol=maps.ndim == 3)


def _cl_of(alm, lmax, mmax, nspec):
    """Spectra of a group of a_lm as a NumPy array: (L,) for one set, (k, L) for k spin-0
    sets, (k, nspec, L) for k polarized (T, E, B) sets (healpy's order TT, EE, BB, TE, EB,
    TB). Computed where the a_lm are (on the GPU for device a_lm); only the spectra, a few
    kB, leave the device."""
    from .._device import to_host
    from ..sht import alm2cl

    if alm.ndim == 1:
        cl = alm2cl(alm, lmax=lmax, mmax=mmax)
    elif alm.ndim == 2:                       # spin-0 sets: each its own spectrum
        cl = alm2cl(alm[:, None, :], lmax=lmax, mmax=mmax)[:, 0]
    else:
        cl = alm2cl(alm, lmax=lmax, mmax=mmax, nspec=nspec)
    return np.asarray(to_host(cl))


def _spectra_task(maps, name, plan, iter, nspec):
    """map2alm then alm2cl on the worker: maps in, spectra out (see :func:`_cl_of`)."""
    alm = _analysis_task(maps, name, plan, iter)
    return _cl_of(alm, plan.lmax, plan.mmax, nspec)


def _alm_spectra_task(alm, name, lmax, mmax, nspec):
    if name is not None:
        alm = _check_batch(name, as_complex_array(name, alm, allow_batch=3),
                           None if lmax is None else AlmLayout(lmax, mmax).size,
                           f"lmax={lmax}, mmax={mmax}")
    return _cl_of(alm, lmax, mmax, nspec)


def _last_axis(a, name):
    """The length of the last axis of a future's array (``name`` in the error otherwise)."""
    if not hasattr(a, "shape") or len(a.shape) == 0:
        raise TypeError(f"{name} holds {type(a).__name__}, not an array of a_lm or maps")
    return int(a.shape[-1])


def _legendre_task(alm, plan, mrange, ring_lists):
    """m chunk -> Delta_m on all rings, cut into one piece per ring chunk. A polarized chunk
    (k, 3, n) T, E, B becomes its 3k scalar coefficient sets on the extended layout
    (:mod:`sphgpu.sht.spin`; the passes are local to each m), and its Delta_m rows take their
    sin^-2 ring factor here, so the ring tasks are the scalar ones. The plan's own
    :meth:`~sphgpu.SHT.alm2leg` runs every order; a chunk of orders is the stages' call."""
    g, layout = plan.geometry, plan.layout
    if alm.ndim == 3:
        t = spin.chunk_tables(layout, 2, mrange)
        coeffs = spin.coefficient_sets(alm, 2, layout, tables=t)
        leg = stages.alm2leg(coeffs.reshape(-1, coeffs.shape[-1]),
                             spin.extended_layout(layout, 2), g, mrange, backend=plan.backend)
        leg = spin.scale_rows(leg, spin.row_scale(np, g, 2, 3))
    else:
        leg = stages.alm2leg(alm, layout, g, mrange, backend=plan.backend)
    return tuple(np.ascontiguousarray(leg[:, rings, :]) for rings in ring_lists)


def _ringfft_task(plan, rings, *pieces):
    """Pieces of Delta_m from every m chunk (in m order, together orders 0..mmax) -> the
    pixels of this ring chunk: the ring step of the plan of its rings."""
    return _ring_plan(plan, rings).leg2map(np.concatenate(pieces, axis=2))


def _analysis_ring_task(maps, plan, rings, mranges, *synth_pieces):
    """Ring chunk: (maps minus the synthesis of the current a_lm, if given) -> weighted
    Delta_m, cut into one piece per m chunk."""
    sub = _ring_plan(plan, rings)
    if synth_pieces:
        maps = maps - sub.leg2map(np.concatenate(synth_pieces, axis=2))
    leg = sub.map2leg(maps)
    return tuple(np.ascontiguousarray(leg[:, :, r.start:r.stop]) for r in mranges)


def _adjoint_legendre_task(plan, ring_lists, mrange, pol, previous, *pieces):
    """m chunk: pieces from every ring chunk -> a_lm of this chunk (+ ``previous``); with
    ``pol`` the pieces' rows are I, Q, U triples and the result (k, 3, n) T, E, B (the
    transpose of :func:`_legendre_task`)."""
    g, layout = plan.geometry, plan.layout
    leg = np.empty((pieces[0].shape[0], g.nrings, len(mrange)), dtype=np.complex128)
    for rings, p in zip(ring_lists, pieces):
        leg[:, rings, :] = p
    if pol:
        leg = spin.scale_rows(leg, spin.row_scale(np, g, 2, 3))
        c = stages.leg2alm(leg, spin.extended_layout(layout, 2), g, mrange,
                           backend=plan.backend)
        alm = spin.coefficient_sets_adjoint(c.reshape(-1, 3, c.shape[-1]), 2, layout,
                                            tables=spin.chunk_tables(layout, 2, mrange))
    else:
        alm = stages.leg2alm(leg, layout, g, mrange, backend=plan.backend)
    return alm if previous is None else previous + alm


def _rings_synthesis_task(alm, plan, rings):
    """Ring chunk's pixels, (rows, npix_chunk) with rows = k or 3k (polarized: alm 3-D)."""
    out = _ring_plan(plan, rings).alm2map(alm, pol=alm.ndim == 3)
    return out.reshape(-1, out.shape[-1])


def _rings_analysis_task(maps, alm, plan, rings, pol):
    """Ring chunk's share of one analysis pass of (maps - synthesis(alm)) (or of maps);
    maps (rows, npix_chunk), read as (k, 3, npix_chunk) I, Q, U when ``pol``."""
    sub = _ring_plan(plan, rings)
    if pol:
        maps = maps.reshape(-1, 3, maps.shape[-1])
    if alm is not None:
        maps = maps - sub.alm2map(alm, pol=pol)
    return sub.map2alm(maps, iter=0, pol=pol)


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
    if tasks.is_future_list(x):
        return list(x)
    return None


def _batch_inputs(name, data, check):
    """(list of row groups or futures, was 1-D, names of the futures or None): NumPy arrays
    of shape (n,), (k, n) spin-0 or (k, 3, n) polarized are checked here; futures are named
    ``name[i]`` (``name`` for a single one) for the checks their tasks make."""
    from distributed import Future

    futures = _as_future_list(data)
    if futures is not None:
        names = [name] if isinstance(data, Future) else [f"{name}[{i}]"
                                                         for i in range(len(futures))]
        return futures, False, names
    arr = tasks.host_array(name, data, lambda nm, a: check(nm, a, allow_batch=3))
    return _check_batch(name, arr), arr.ndim == 1, None


def _groups(k, per):
    per = check_int("maps_per_task", per, minimum=1)
    return [slice(i, min(i + per, k)) for i in range(0, k, per)]


def _check_on_device(on_device, gather, name):
    on_device = tasks.check_on_device(on_device, name, "keeps results on the workers' GPUs")
    if on_device and gather:
        raise ValueError("on_device=True leaves the results on the workers' GPUs: pass "
                         "gather=False too (and gather the futures where you need them)")
    return on_device


def _run_batch(client, stage, fn, inputs, names, args, resources, gather, progress,
               per_task, transfer):
    """One task per group of ``per_task`` rows of ``inputs`` (the groups sent in one scatter,
    each to the worker that will run it) or per future of ``inputs`` (``names`` not None:
    transformed where it is, nothing sent). ``fn(data, name, *args)``."""
    if names is not None:
        items = inputs
    else:
        items = [inputs[s] for s in _groups(inputs.shape[0], per_task)]

    def build(todo):
        data = [items[i] for i in todo]
        if names is None:
            data = tasks.scatter(client, data, resources, transfer)
        else:
            # the caller's futures cannot be sent again from here: one whose data is gone
            # (cancelled, released, or lost with its worker) ends the call, by its name
            gone = [names[i] for i in todo if items[i].cancelled()]
            if gone:
                raise WorkersLostError(
                    f"{', '.join(gone)}: future(s) whose data is no longer on the workers "
                    "(cancelled, released, or lost with a worker); no result is returned: "
                    "send the data again (to_workers or client.scatter)")
        key = tasks.key(stage)              # new keys for every round
        futs = tasks.submit_each(client, fn, data,
                                 [None if names is None else names[i] for i in todo],
                                 *[[a] * len(todo) for a in args],
                                 keys=[(key, i) for i in todo], resources=resources)
        return [[f] for f in futs]

    if not gather:
        futs = [f for [f] in build(list(range(len(items))))]
        transfer.tasks += len(futs)
        if progress:
            _cluster.show_progress(futs)
        return futs
    return tasks.run_items(client, len(items), build, progress=progress, transfer=transfer)


def _alm_layout(client, data, names, lmax, mmax, resources):
    """The a_lm layout of a batch: from the length of NumPy rows; for futures, ``lmax`` (and
    ``mmax``), or when lmax is None the length of the first future's last axis, asked of its
    worker (one small task, waited for)."""
    if names is None:
        return AlmLayout.from_size(data.shape[-1], lmax, mmax, name="alms")
    if lmax is not None:
        return AlmLayout(check_int("lmax", lmax, minimum=0), mmax)
    n = client.submit(_last_axis, data[0], names[0], key=tasks.key("size"),
                      resources=resources).result()
    return AlmLayout.from_size(n, None, mmax, name=names[0])


def to_workers(data, *, client=None, backend="auto", per_future=1, on_device=False,
               report=None):
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
    report : callable, optional
        Called with the :class:`Transfer` of the send (``sent_bytes``, ``send_seconds``,
        ``send_rate`` in bytes/s) as the call returns.

    Returns
    -------
    list of distributed.Future
        ``ceil(k / per_future)`` futures, spread evenly over the workers, each holding an array
        of shape ``(per_future, ...)`` (the last may have fewer rows). One transfer per
        future, all in one scatter.
    """
    started = time.perf_counter()
    client = _cluster.get_client(client)
    report = _check_report(report)
    name, resources = _cluster.placement(client, backend)
    on_device = _check_on_device(on_device, False, name)
    arr = tasks.host_array("data", data, lambda n, a: np.asarray(a))
    if arr.ndim < 2 or arr.shape[0] == 0:
        raise ValueError(f"data must be a non-empty batch of shape (k, ...), got shape "
                         f"{arr.shape}")
    groups = _groups(arr.shape[0], check_int("per_future", per_future, minimum=1))
    transfer = Transfer()
    futs = tasks.scatter(client, [np.ascontiguousarray(arr[g]) for g in groups], resources,
                    transfer)
    if on_device:
        # the copy runs where the rows are (the scheduler places a task next to its only input)
        key = tasks.key("to-device")
        futs = tasks.submit_each(client, _worker.to_device, futs,
                                 keys=[(key, i) for i in range(len(futs))],
                                 resources=resources)
        transfer.tasks += len(futs)
    return tasks.reported(report, transfer, started, futs)


def alm2map_many(alms, nside=None, lmax=None, mmax=None, *, geometry=None, backend="auto",
                 client=None, maps_per_task=1, gather=True, on_device=False, progress=False,
                 report=None):
    """Synthesize many maps on a Dask cluster, one task per ``maps_per_task`` of them.

    Each task receives the transform's plan (a :class:`sphgpu.SHT`, sent as its description)
    and runs ``plan.alm2map`` on its worker, which keeps the plan's set-up for later tasks.

    Parameters
    ----------
    alms : array, shape (k, nalm) (or (nalm,)), complex; or a Dask future or list of futures
        Coefficient sets in healpy's order; (k, 3, nalm) is a batch of polarized T, E, B sets
        (each gives I, Q, U maps, as ``sphgpu.alm2map`` with ``pol=True``). NumPy rows are sent
        once each, in one scatter, to the worker that transforms them. Futures (a_lm made or
        kept on the workers: :func:`to_workers`, ``client.scatter``, an earlier call with
        ``gather=False``; each of shape (nalm,), (k, nalm) or (k, 3, nalm), NumPy or, on GPU
        workers, CuPy) are transformed where they are, one task each, without passing through
        this process; their content is checked by their task (an error names ``alms[i]``).
        Give ``lmax`` (and ``mmax``) with futures: without it the first future's length is
        asked of its worker, and the call waits for that future.
    nside, lmax, mmax, geometry
        As in :func:`sphgpu.alm2map`.
    backend : {"auto", "cuda", "cpu", "reference"}
        ``"auto"``: the GPU workers when the cluster has any, else CPU workers. ``"cuda"`` on a
        cluster without a GPU worker raises :class:`~sphgpu.distributed.NoGPUWorkerError`.
    client : distributed.Client, optional
        Default: the current Dask client.
    maps_per_task : int
        NumPy rows per task (GPU transforms of several maps share one Legendre recurrence);
        futures are one task each.
    gather : bool
        True: return the maps here. False: return one future per task, results left on the
        workers (no retry of lost inputs then: the futures are yours).
    on_device : bool
        With ``gather=False`` on GPU workers: each task copies its a_lm to its GPU and leaves
        the maps there (CuPy arrays), so no map crosses host memory. Futures of device arrays
        give device maps without it.
    progress : bool
        Show Dask's progress bar (a widget in notebooks).
    report : callable, optional
        Called once, as the call returns, with its :class:`Transfer`: the bytes of a_lm sent
        and of maps received here, the seconds of each, and their rates in bytes/s.

    Returns
    -------
    ndarray, shape (k, npix) (or (npix,), or (k, 3, npix)), float64 -- or a list of futures
    (``gather=False``), one per task, of arrays of shape (rows, npix) or (rows, 3, npix).
    With futures as input, a list of the results when they are not NumPy arrays (device arrays
    stay device arrays).
    """
    started = time.perf_counter()
    client = _cluster.get_client(client)
    report = _check_report(report)
    name, resources = _cluster.placement(client, backend)
    on_device = _check_on_device(on_device, gather, name)
    data, single, names = _batch_inputs("alms", alms, as_complex_array)
    g = resolve_geometry(nside, geometry)
    layout = _alm_layout(client, data, names, lmax, mmax, resources)
    if names is None and single:
        data = data[None]
    transfer = Transfer()
    out = _run_batch(client, "synthesis", _synthesis_task, data, names,
                     (_plan(g, layout, name), on_device), resources, gather, progress,
                     maps_per_task, transfer)
    return tasks.reported(report, transfer, started, tasks.stack(out, single) if gather else out)


def _analysis_inputs(maps, geometry, lmax, mmax):
    """(data, was 1-D, names of futures or None, geometry, AlmLayout) of a batch of maps."""
    data, single, names = _batch_inputs("maps", maps, _masked_maps)
    if names is not None:
        if geometry is None:
            raise ValueError("with futures as maps, pass geometry= (the maps are not here to "
                             "infer nside from)")
        g = resolve_geometry(None, geometry)
    else:
        g = resolve_geometry(None, geometry, npix=data.shape[-1], name="maps")
        data = data[None] if single else data
    layout = AlmLayout(g.natural_lmax if lmax is None else lmax, mmax)
    return data, single, names, g, layout


def map2alm_many(maps, lmax=None, mmax=None, iter=3, *, geometry=None, backend="auto",
                 client=None, maps_per_task=1, gather=True, on_device=False, progress=False,
                 report=None):
    """Analyse many maps on a Dask cluster (healpy's ``map2alm`` with ``iter`` Jacobi
    iterations for each), one task per ``maps_per_task`` of them, each running
    ``plan.map2alm`` of the shipped :class:`sphgpu.SHT` on its worker.

    Parameters
    ----------
    maps : array, shape (k, npix) (or (npix,)), real; or a Dask future or list of futures
        The maps; (k, 3, npix) is a batch of polarized I, Q, U maps. UNSEEN and ``numpy.ma``
        pixels count as zero (in futures too: their task reads them as
        :func:`sphgpu.map2alm` does). With futures, pass ``geometry``
        (``sphgpu.RingGeometry.healpix(nside)`` for HEALPix).
    lmax, mmax, iter, geometry
        As in :func:`sphgpu.map2alm`.
    backend, client, maps_per_task, gather, on_device, progress, report
        As in :func:`alm2map_many` (``on_device``: the a_lm stay on the GPUs; ``report``:
        maps sent, a_lm received).

    Returns
    -------
    ndarray, shape (k, nalm) (or (nalm,), or (k, 3, nalm)), complex128 -- or a list of futures
    (``gather=False``).
    """
    started = time.perf_counter()
    client = _cluster.get_client(client)
    report = _check_report(report)
    name, resources = _cluster.placement(client, backend)
    on_device = _check_on_device(on_device, gather, name)
    iter = check_int("iter", iter, minimum=0)
    data, single, names, g, layout = _analysis_inputs(maps, geometry, lmax, mmax)
    transfer = Transfer()
    out = _run_batch(client, "analysis", _analysis_task, data, names,
                     (_plan(g, layout, name), iter, on_device), resources, gather, progress,
                     maps_per_task, transfer)
    return tasks.reported(report, transfer, started, tasks.stack(out, single) if gather else out)


def _spectra_out(out, gather, single):
    if not gather:
        return out
    flat = [r for item in out for r in item]
    res = np.concatenate([r if r.ndim >= 2 else r[None] for r in flat], axis=0)
    return res[0] if single else res


def anafast_many(maps, lmax=None, mmax=None, iter=3, *, geometry=None, nspec=None,
                 backend="auto", client=None, maps_per_task=1, progress=False, gather=True,
                 report=None):
    """Power spectra of many maps, each reduced on the worker that holds it: maps in (NumPy
    rows sent once each, or futures left on the workers), only the spectra come back.

    Each task runs the shipped plan's ``map2alm`` and :func:`sphgpu.alm2cl` on its worker (on
    its GPU for device maps or GPU workers), as ``sphgpu.anafast`` of each map alone.

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
    report : callable, optional
        As in :func:`alm2map_many` (maps sent, spectra received).

    Returns
    -------
    ndarray, float64, shape (k, lmax + 1) (or (lmax + 1,)), or (k, nspec, lmax + 1) for
    polarized maps; units of the maps squared. With ``gather=False`` a list of futures.
    """
    started = time.perf_counter()
    client = _cluster.get_client(client)
    report = _check_report(report)
    name, resources = _cluster.placement(client, backend)
    iter = check_int("iter", iter, minimum=0)
    data, single, names, g, layout = _analysis_inputs(maps, geometry, lmax, mmax)
    if nspec is not None:
        nspec = check_int("nspec", nspec, minimum=1, maximum=6)
    transfer = Transfer()
    out = _run_batch(client, "spectra", _spectra_task, data, names,
                     (_plan(g, layout, name), iter, nspec), resources, gather, progress,
                     maps_per_task, transfer)
    return tasks.reported(report, transfer, started, _spectra_out(out, gather, single))


def alm2cl_many(alms, lmax=None, mmax=None, *, nspec=None, backend="auto", client=None,
                maps_per_task=1, gather=True, progress=False, report=None):
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
    backend, client, maps_per_task, gather, progress, report
        As in :func:`anafast_many` (``backend`` picks the workers).

    Returns
    -------
    ndarray, float64, shape (k, lmax + 1) (or (lmax + 1,)), or (k, nspec, lmax + 1); a list
    of futures with ``gather=False``.
    """
    started = time.perf_counter()
    client = _cluster.get_client(client)
    report = _check_report(report)
    _, resources = _cluster.placement(client, backend)
    data, single, names = _batch_inputs("alms", alms, as_complex_array)
    if names is None:
        layout = AlmLayout.from_size(data.shape[-1], lmax, mmax, name="alms")
        lmax, mmax = layout.lmax, layout.mmax
        data = data[None] if single else data
    if nspec is not None:
        nspec = check_int("nspec", nspec, minimum=1, maximum=6)
    transfer = Transfer()
    out = _run_batch(client, "alm2cl", _alm_spectra_task, data, names, (lmax, mmax, nspec),
                     resources, gather, progress, maps_per_task, transfer)
    return tasks.reported(report, transfer, started, _spectra_out(out, gather, single))


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


def _split(g, layout, n, pattern):
    """(m ranges, ring lists) for a transform split n ways."""
    if pattern == "m":
        return (m_chunks(layout.lmax, layout.mmax, n, nrings=g.nrings),
                ring_chunks(g.nphi, n))
    pairs = g.ring_pairs()
    return None, ring_chunks(g.nphi, n, pairs=pairs,
                             cost=transform_ring_costs(g.nphi, pairs, layout.size))


def alm2map(alm, nside=None, lmax=None, mmax=None, *, pol=True, geometry=None, backend="auto",
            client=None, nchunks=None, pattern="m", progress=False, report=None):
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
    report : callable, optional
        Called with the call's :class:`Transfer` (a_lm sent, map pieces received).

    Returns
    -------
    ndarray, shape (npix,) or (k, npix), float64, equal to the serial ``sphgpu.alm2map`` to
    rounding.
    """
    started = time.perf_counter()
    client = _cluster.get_client(client)
    report = _check_report(report)
    name, resources = _cluster.placement(client, backend)
    pattern = _check_pattern(pattern)
    arr = tasks.host_array("alm", alm, lambda n, a: as_complex_array(n, a, allow_batch=3))
    polarized, lead = shape_kind("alm", arr, check_flag("pol", pol), "a_lm set")
    g = resolve_geometry(nside, geometry)
    layout = AlmLayout.from_size(arr.shape[-1], lmax, mmax, name="alm")
    batch = arr.reshape((-1, 3, arr.shape[-1]) if polarized else (-1, arr.shape[-1]))
    mranges, ring_lists = _split(g, layout, _chunk_count(client, name, nchunks), pattern)
    plan = _plan(g, layout, name)
    transfer = Transfer()

    def build(_):
        return [build_graph()]

    def build_graph():
        if pattern == "rings":
            # to one worker, the others fetch it (Dask's broadcast hangs on a dying worker,
            # see cluster.scatter)
            [alm_f] = tasks.scatter(client, [batch], resources, transfer)
            key = tasks.key("synthesis")
            return [client.submit(_rings_synthesis_task, alm_f, plan, rings,
                                  key=(key, r), resources=resources)
                    for r, rings in enumerate(ring_lists)]
        chunks = tasks.scatter(client, [np.ascontiguousarray(batch[..., alm_slice(layout.lmax,
                                                                                  mr)])
                                        for mr in mranges], resources, transfer)
        kl, kx, kf = tasks.key("legendre"), tasks.key("exchange"), tasks.key("ringfft")
        legs = [client.submit(_legendre_task, a, plan, mr, ring_lists,
                              key=(kl, c), resources=resources)
                for c, (a, mr) in enumerate(zip(chunks, mranges))]
        pieces = [[client.submit(operator.getitem, leg, r, key=(kx, c, r))
                   for r in range(len(ring_lists))] for c, leg in enumerate(legs)]
        return [client.submit(_ringfft_task, plan, rings,
                              *[pieces[c][r] for c in range(len(legs))],
                              key=(kf, r), resources=resources)
                for r, rings in enumerate(ring_lists)]

    [parts] = tasks.run_items(client, 1, build, progress=progress, transfer=transfer)
    out = np.zeros((batch.size // batch.shape[-1], g.npix))
    for rings, piece in zip(ring_lists, parts):
        _put_pixels(out, piece, _pixel_runs(g, rings))
    return tasks.reported(report, transfer, started, out.reshape(lead + (g.npix,)))


def map2alm(maps, lmax=None, mmax=None, iter=3, *, pol=True, geometry=None, backend="auto",
            client=None, nchunks=None, pattern="m", progress=False, report=None):
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
    backend, client, nchunks, pattern, progress, report
        As in :func:`alm2map` (``report``: map pieces sent, a_lm received).

    Returns
    -------
    ndarray, shape (nalm,) or (k, nalm), complex128, equal to the serial ``sphgpu.map2alm`` to
    rounding.
    """
    started = time.perf_counter()
    client = _cluster.get_client(client)
    report = _check_report(report)
    name, resources = _cluster.placement(client, backend)
    pattern = _check_pattern(pattern)
    iter = check_int("iter", iter, minimum=0)
    arr = tasks.host_array("maps", maps, lambda n, a: as_maps(n, a, max_ndim=3)[0])
    polarized, lead = shape_kind("maps", arr, check_flag("pol", pol), "map")
    g = resolve_geometry(None, geometry, npix=arr.shape[-1], name="maps")
    layout = AlmLayout(g.natural_lmax if lmax is None else lmax, mmax)
    batch = arr.reshape(-1, arr.shape[-1])          # rows: k maps, or k I, Q, U triples
    mranges, ring_lists = _split(g, layout, _chunk_count(client, name, nchunks), pattern)
    plan = _plan(g, layout, name)
    nr = len(ring_lists)
    transfer = Transfer()

    def build(_):
        return [build_graph()]

    def build_graph():
        map_f = tasks.scatter(client, [_take_pixels(batch, _pixel_runs(g, rings))
                                       for rings in ring_lists], resources, transfer)
        if pattern == "rings":
            alm = None
            for it in range(iter + 1):
                ka = tasks.key("analysis")
                partial = [client.submit(_rings_analysis_task, map_f[r], alm, plan, rings,
                                         polarized, key=(ka, r), resources=resources)
                           for r, rings in enumerate(ring_lists)]
                alm = client.submit(_sum_task, alm, *partial, key=tasks.key("sum"))
            return [alm]
        nm = len(mranges)
        alm_c = [None] * nm
        synth = None                   # synth[c][r]: pieces of the current a_lm's Delta_m
        for it in range(iter + 1):
            kf, kx, kl = tasks.key("ringfft"), tasks.key("exchange"), tasks.key("legendre")
            legs = [client.submit(_analysis_ring_task, map_f[r], plan, rings, mranges,
                                  *([synth[c][r] for c in range(nm)] if synth else []),
                                  key=(kf, r), resources=resources)
                    for r, rings in enumerate(ring_lists)]
            pieces = [[client.submit(operator.getitem, legs[r], c, key=(kx, r, c))
                       for c in range(nm)] for r in range(nr)]
            alm_c = [client.submit(_adjoint_legendre_task, plan, ring_lists, mr, polarized,
                                   alm_c[c], *[pieces[r][c] for r in range(nr)],
                                   key=(kl, c), resources=resources)
                     for c, mr in enumerate(mranges)]
            if it < iter:
                ks, kx2 = tasks.key("legendre"), tasks.key("exchange")
                sl = [client.submit(_legendre_task, alm_c[c], plan, mr, ring_lists,
                                    key=(ks, c), resources=resources)
                      for c, mr in enumerate(mranges)]
                synth = [[client.submit(operator.getitem, sl[c], r, key=(kx2, c, r))
                          for r in range(nr)] for c in range(nm)]
        return alm_c

    [parts] = tasks.run_items(client, 1, build, progress=progress, transfer=transfer)
    alm = np.concatenate(parts, axis=-1)
    return tasks.reported(report, transfer, started, alm.reshape(lead + (layout.size,)))
