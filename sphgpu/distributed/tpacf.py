"""Pair counts on a Dask cluster: one count split over declination stripes, and one catalog
against several others (the data against each random catalog) in parallel.

Counts of disjoint sets of pairs add exactly (:class:`sphgpu.tpacf.PairCounts`), so the
distributed result equals the serial one as integers, jackknife region counts included.

A split count (:func:`pair_counts`) cuts the first catalog into declination stripes of equal
estimated pairs (:func:`~sphgpu.distributed.partition.declination_stripes`: tasks sized by
their pairs, not their points). A stripe's task holds its own points and the *halo* it needs
(:func:`~sphgpu.distributed.partition.stripe_members`): for an auto count the points of the
stripes above within theta_max in declination, for a cross count the second catalog's points
within theta_max of the stripe. The pieces are sent in one scatter, each to one worker, where
its task prepares it (on the worker's GPU) and counts it; only counts come back. Given the
same Catalog objects again, the next call finds the pieces on the workers, prepared, and
sends nothing. The totals (possible pairs, per region) are those of the whole catalogs,
computed here.

A count against several random
catalogs sends each random catalog to one worker and counts there: one task per worker, which
counts all the catalogs that worker holds (a call costs one task per worker, not one per
catalog: with GPU tasks of ~20 ms, Dask's few ms per task were a large share).

Memory: the client of a split count of arrays holds the catalogs and, while it sends them,
the stripes' copies (about 1 + the halo fraction of them: 16 bytes a point, 32 with weights
and labels), so the largest catalog it can count is about a third of its memory; each worker
holds its stripes. Catalogs on disk (:class:`CatalogFiles`) are never held by the client: the
workers read blocks of :data:`BLOCK_ROWS` rows for the totals and the stripe model, and each
stripe's task reads its own rows and halo (every block's Dec, and the other columns of blocks
holding some of its rows: the stripes of a catalog in random order read it whole, once each),
so a worker holds one stripe and one block. A stripe's task sends back only the jackknife
region pairs its pairs fall in.

:class:`~sphgpu.tpacf.Catalog` objects stay on the workers after a call: the client's next
call, given the same objects, finds them there (with the sorted copies the workers made) and
sends nothing; they are released when a call sends other catalogs. Arrays, or ``(ra, dec)``
pairs, make new Catalogs and are sent at every call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import threading
import time
import types
import uuid
import weakref

import numpy as np

from ..tpacf import pair_counts as _serial_pair_counts
from ..tpacf.bins import check_bins
from ..tpacf.catalog import (Catalog, as_catalog, check_column, check_left_out, find_column,
                              n_regions_of, pair_catalogs)
from ..tpacf.counts import counts_from_raw, counts_from_sums
from ..tpacf.reference import RawCounts
from . import cluster as _cluster
from . import tasks
from ._stripe_kernel import stripe_members, take
from .partition import declination_stripes

__all__ = ["pair_counts", "pair_counts_many", "CatalogFiles", "CountSteps"]


@dataclasses.dataclass
class CountSteps:
    """Where the time of one split count (:func:`pair_counts`) went, given to ``report=``.

    Attributes
    ----------
    seconds : float
        The whole call.
    split_seconds : float
        This process's time cutting the catalogs into stripes and copying each stripe's
        points and halo (0 when the stripes were found on the workers).
    sent_bytes : int
        Bytes of the stripes' points sent to the workers (0 when found there).
    send_seconds : float
        Wall seconds of that send, until the workers held every stripe.
    stripes : list of dict
        One per stripe task that returned counts (the last run of a stripe sent again after
        a lost worker): ``worker`` (its address), ``points`` (own points and halo, or for a
        cross count those of both catalogs; 0 for a stripe of files that held none of its
        own), ``start_s`` and ``end_s`` (on the worker's
        clock, seconds after the call began in this process: the same machine's clock for
        a local cluster), ``seconds`` (the task's own time: preparing the points where
        they are new to the worker, on its GPU for "cuda", and counting).
    """

    seconds: float = 0.0
    split_seconds: float = 0.0
    sent_bytes: int = 0
    send_seconds: float = 0.0
    stripes: list = dataclasses.field(default_factory=list)
    #: the call's start on this machine's clock (time.time()), which the stripes' times are from
    _t0: float = dataclasses.field(default_factory=time.time, init=False, repr=False,
                                   compare=False)

    @property
    def send_rate(self) -> float | None:
        """Bytes per second sent (None when nothing was sent)."""
        return self.sent_bytes / self.send_seconds if self.sent_bytes and self.send_seconds \
            else None

    @property
    def task_seconds(self) -> list:
        """The stripes' ``seconds``, in stripe order."""
        return [st["seconds"] for st in self.stripes]


def _count_task(c1, s1, c2, s2, same, bins, n_regions, options, backend):
    """Pair counts of c1[s1] against c2[s2] (``same``: c1[s1] with itself, each pair once);
    ``options``: further keywords of :func:`sphgpu.tpacf.pair_counts`.

    Whole catalogs are counted as they are: a Catalog kept in a worker's memory caches its
    sorted (and device) copies on first use, so later counts against it skip that work.
    """
    def part(c, s):
        c = as_catalog(c, "catalog")
        if s == slice(None):
            return c
        return c.part(*s.indices(c.size)[:2])      # a view of the Catalog's arrays

    return _serial_pair_counts(part(c1, s1), None if same else part(c2, s2), bins=bins,
                               n_regions=n_regions, backend=backend, **options)


def _n_regions(n_regions, *cats):
    if n_regions is not None:
        return n_regions
    labels = [c.labels for c in cats if c is not None and c.labels is not None]
    return max(int(lab.max()) + 1 for lab in labels) if labels else 0


def _count_group(catalog, bins, n_regions, backend, *others):
    """Counts of ``catalog`` against each of ``others`` (``catalog`` None: each with itself),
    on the worker that holds them: a list of PairCounts."""
    everything = slice(None)
    return [_count_task(r if catalog is None else catalog, everything, r, everything,
                        catalog is None, bins, n_regions, {}, backend) for r in others]


#: {client: {id(Catalog): (weak reference to it, broadcast, future)}}: the catalogs of the
#: client's last call. Only the last call's: on an in-process cluster the workers hold the very
#: objects, which would then never die while a future of them is held here.
_SENT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _send_catalogs(client, items, resources=None):
    """Futures of the Catalogs of ``items`` ((catalog, workers, shared) each): sent now, or
    found on the cluster when the client's previous call sent the same object the same way and
    it is still held there. A catalog goes to one worker (the first of ``workers`` when
    ``shared`` is False; tasks elsewhere fetch it from there), never by Dask's broadcast,
    whose scheduler keeps retrying a worker that died meanwhile; a worker that died since
    the workers were listed (the scheduler's ``KeyError`` naming it) or dies during the send
    makes it go to another (:func:`sphgpu.distributed.cluster.scatter`)."""
    from distributed.comm import CommClosedError

    try:
        before = _SENT.get(client, {})
    except TypeError:                      # a client-like object that takes no weak reference
        before = {}
    now, out = {}, []
    for cat, workers, broadcast in items:
        hit = now.get(id(cat)) or before.get(id(cat))
        if hit is None or hit[0]() is not cat or hit[1] != broadcast \
                or hit[2].status != "finished":
            try:
                if broadcast:
                    raise KeyError(None)       # any worker will do: cluster.scatter picks
                # hash=False: equal catalogs scattered by two calls must not share one key
                [f] = client.scatter([cat], workers=workers, hash=False,
                                     direct=_cluster.direct(client))
            except (KeyError, CommClosedError, OSError):
                [f] = _cluster.scatter(client, [cat], resources)
            hit = (weakref.ref(cat), broadcast, f)
        now[id(cat)] = hit
        out.append(hit[2])
    try:
        _SENT[client] = now
    except TypeError:
        pass
    return out


#: relative and absolute (degrees) padding of theta_max in the stripes' halos: the rounding
#: of declinations and unit vectors (far below 1e-12) can then only add points to a halo
#: (which costs nothing: a pair is counted in the task of its lower stripe alone)
HALO_PAD_REL, HALO_PAD_DEG = 1e-6, 1e-6

#: {client: (weak refs to the catalogs, layout key, futures of the pieces)}: the pieces of
#: the client's last split count of Catalog objects, kept on the workers with what each
#: prepared, for a next call with the same objects (only the last call's, as _SENT)
_PIECES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


#: on a worker: {piece: (its own points, its halo)} as Catalogs, for as long as the piece lives
_PARTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _piece(cat, idx):
    """The points ``idx`` of ``cat`` as a Catalog of their own (a copy, sent to a worker;
    gathered on every core, as the stripes' indices were found)."""
    return Catalog._of_checked(take(cat.ra, idx), take(cat.dec, idx),
                               None if cat.weights is None else take(cat.weights, idx),
                               None if cat.labels is None else take(cat.labels, idx))


def _stripe_task(piece, own, other, bins, n_regions, options, backend):
    """On a worker: the counts of one stripe, as RawCounts-like fields (a dict of arrays).

    Auto (``other`` None): ``piece`` holds the stripe's ``own`` points, then its halo; counts
    the own points' pairs and the pairs of own points with the halo. Cross: ``piece`` is the
    stripe of catalog 1, ``other`` the points of catalog 2 within reach. The parts are
    Catalogs kept with the piece (what they prepare, on the GPU too, stays for a next call).
    """
    def count(c1, c2):
        return _serial_pair_counts(c1, c2, bins=bins, n_regions=n_regions, backend=backend,
                                   **options)

    started = time.time()
    if other is not None:
        return _spanned(_raw_fields(count(piece, other)), started, piece.size + other.size)
    parts = _PARTS.get(piece)
    if parts is None:
        # own points and halo as views of the piece, made once per piece and worker and kept
        # as long as the piece is (their prepared copies with them)
        parts = (piece.part(0, own), piece.part(own, piece.size) if own < piece.size else None)
        _PARTS[piece] = parts
    own_c, halo = parts
    total = count(own_c, None)
    if halo is not None:
        total = total + count(own_c, halo)
    return _spanned(_raw_fields(total), started, piece.size)


def _spanned(fields, started, points):
    """A stripe's fields with ``"span"``: (worker address or None, points, start and end on
    this machine's clock, time.time())."""
    try:
        from distributed import get_worker

        where = get_worker().address
    except (ImportError, ValueError):
        where = None
    fields["span"] = (where, int(points), started, time.time())
    return fields


_RAW = ("counts", "weights", "patch_counts", "patch_weights", "theta_sum", "log_theta_sum",
        "refined", "pairs_compared")
_PATCH = ("patch_counts", "patch_weights")


def _raw_fields(pc):
    """What a stripe returns: the counted fields of a PairCounts (its totals are those of the
    stripe's catalogs, not of the whole; they are made on the client).

    The per-region arrays (R, R, nbins) go back as the patch pairs that hold a pair, a stripe
    meets few of R**2 (its regions and their neighbours): ``(shape, a, b, values (m, nbins))``.
    With 200 regions and 20 bins a dense pair of arrays is 12.8 MB a stripe, which the client
    would hold for every stripe until the last one finishes."""
    out = {f: getattr(pc, f) for f in _RAW}
    pcnt, pw = out["patch_counts"], out["patch_weights"]
    if pcnt is not None:
        nz = pcnt.any(axis=2)
        if pw is not None:
            nz |= (pw != 0).any(axis=2)
        a, b = np.nonzero(nz)
        for f in _PATCH:
            if out[f] is not None:
                out[f] = (out[f].shape, a, b, out[f][a, b])
    return out


def _dense(x):
    """A stripe's per-region field as a dense (R, R, nbins) array (see :func:`_raw_fields`)."""
    if not isinstance(x, tuple):
        return x
    shape, a, b, v = x
    out = np.zeros(shape, v.dtype)
    out[a, b] = v
    return out


def _add_raw(parts):
    """The sum of the stripes' fields; per-region fields into one dense array each."""
    out = {f: _dense(parts[0][f]) if f in _PATCH else parts[0][f] for f in _RAW}
    for p in parts[1:]:
        for f in _RAW:
            if out[f] is None or p[f] is None:
                out[f] = None
            elif f in _PATCH and isinstance(p[f], tuple):
                _, a, b, v = p[f]
                out[f][a, b] += v           # (a, b) are distinct: np.nonzero made them
            else:
                out[f] = out[f] + p[f]
    return out


def _progress_hook(progress, what, n):
    """For ``progress`` a callable(str): ``hook(i)`` gives a done-callback for the future of
    task i (of ``n``) that calls ``progress("<what>: k of n done")`` when a task finishes
    (a task run again after a lost worker counts once). None for other ``progress``."""
    if not callable(progress) or isinstance(progress, bool):
        return None
    lock, done = threading.Lock(), set()

    def hook(i):
        def tick(future):
            if future.status != "finished":
                return
            with lock:
                if i in done:
                    return
                done.add(i)
                k = len(done)
            progress(f"{what}: {k} of {n} done")
        return tick

    return hook


def _check_progress(progress):
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be a bool or a callable(str), got "
                        f"{type(progress).__name__}")
    return progress


def _stripe_count(client, cat1, cat2, bins, nreg, options, nchunks, backend, progress, steps):
    """The stripes' RawCounts, summed; pieces sent in one scatter (or found on the workers).
    ``steps``: the call's :class:`CountSteps`, filled in here."""
    with _cluster.one_view(client):
        name, resources = _cluster.placement(client, backend)
        where = _cluster.eligible_workers(client, resources)
    k = max(1, len(where)) if nchunks is None else nchunks
    theta = bins.theta_max_rad
    pad = math.degrees(theta) * (1.0 + HALO_PAD_REL) + HALO_PAD_DEG
    key = (bins.chord2_edges.tobytes(), nreg, k)
    cats = (cat1, cat2)
    try:
        kept = _PIECES.get(client)
    except TypeError:                     # a client-like object that takes no weak reference
        kept = None
    sent = None
    if kept is not None and kept[1] == key and all(
            (r is None and c is None) or (r is not None and r() is c)
            for r, c in zip(kept[0], cats)):
        sent = kept[2]

    def make_pieces():
        """(piece, own, other) per non-empty stripe: the points a stripe's task holds."""
        t0 = time.perf_counter()
        try:
            return cut()
        finally:
            steps.split_seconds += time.perf_counter() - t0

    def cut():
        edges = declination_stripes(cat1.dec, k, theta, ra1=cat1.ra,
                                    dec2=None if cat2 is None else cat2.dec,
                                    ra2=None if cat2 is None else cat2.ra)
        if cat2 is None:
            return [(_piece(cat1, idx), n, None)
                    for idx, n in stripe_members(cat1.dec, edges, pad, auto=True) if n > 0]
        own1 = [idx[:n] for idx, n in stripe_members(cat1.dec, edges, 0.0, auto=True)]
        reach = stripe_members(cat2.dec, edges, pad, auto=False)
        return [(_piece(cat1, a), a.size, _piece(cat2, b))
                for a, (b, _) in zip(own1, reach) if a.size and b.size]

    return _run_stripes(client, cats, key, make_pieces, sent, bins, nreg, options, name,
                        resources, progress, steps)


def _catalog_bytes(c):
    return sum(a.nbytes for a in (c.ra, c.dec, c.weights, c.labels) if a is not None)


def _run_stripes(client, cats, key, make_pieces, sent, bins, nreg, options, name, resources,
                 progress, steps):
    """Submit one task per stripe and sum what they return. ``sent``: the pieces' futures
    from an earlier call with the same catalogs (or None); pieces not (or no longer) on the
    workers are made by ``make_pieces()`` and sent, all in one scatter."""
    pieces = None if sent is not None else make_pieces()
    n = len(sent) if sent is not None else len(pieces)
    futures = list(sent) if sent is not None else [None] * n

    def lost(i):
        f = futures[i]
        return f is None or f[0].status != "finished" or (f[2] is not None
                                                          and f[2].status != "finished")

    def build(todo):
        nonlocal pieces
        fresh = [i for i in todo if lost(i)]
        if fresh:
            if pieces is None:             # kept pieces lost with a worker: made again
                pieces = make_pieces()
            flat, slots = [], []
            for i in fresh:
                p, own, other = pieces[i]
                slots.append((i, len(flat), own, other is not None))
                flat.append(p)
                if other is not None:
                    flat.append(other)
            t0 = time.perf_counter()
            got = _cluster.scatter(client, flat, resources)     # one scatter, no broadcast
            steps.send_seconds += time.perf_counter() - t0
            steps.sent_bytes += sum(_catalog_bytes(c) for c in flat)
            for i, at, own, has_other in slots:
                futures[i] = (got[at], own, got[at + 1] if has_other else None)
        rk = f"sphgpu-paircount-{uuid.uuid4().hex[:8]}"          # new keys every round
        futs = tasks.submit_each(client, _stripe_task, *zip(*(futures[i] for i in todo)),
                                 *[[a] * len(todo) for a in (bins, nreg, options, name)],
                                 keys=[(rk, i) for i in todo], resources=resources)
        out = [[f] for f in futs]
        if hook is not None:
            for i, [f] in zip(todo, out):
                f.add_done_callback(hook(i))
        return out

    if n == 0:                   # no stripe has points of both catalogs within reach
        return None
    hook = _progress_hook(progress, "pair counts, stripes", n)
    results = tasks.run_items(client, n, build, progress=progress is True)
    try:
        _PIECES[client] = (tuple(None if c is None else weakref.ref(c) for c in cats), key,
                           futures)
    except TypeError:
        pass
    return _add_raw(_take_spans([r for [r] in results], steps))


def _take_spans(parts, steps):
    """``parts`` (stripes' fields) without their ``"span"``, which goes to ``steps``."""
    for r in parts:
        where, points, start, end = r.pop("span")
        steps.stripes.append({"worker": where, "points": points,
                              "start_s": start - steps._t0, "end_s": end - steps._t0,
                              "seconds": end - start})
    return parts


def pair_counts(ra1, dec1=None, ra2=None, dec2=None, *, bins, weights1=None, weights2=None,
                labels1=None, labels2=None, n_regions=None, mean_theta=False,
                max_device_bytes=None, nchunks=None, client=None, backend="auto",
                progress=False, report=None):
    """:func:`sphgpu.tpacf.pair_counts` over a Dask cluster, equal to it as integers.

    Catalog 1 is cut into ``nchunks`` declination stripes of about equal pairs (see the
    module docstring); each stripe's task holds the stripe and the points it pairs with
    (within theta_max in declination), sent once, in one scatter, to one worker, where the
    task prepares and counts them. Given the same :class:`~sphgpu.tpacf.Catalog` objects
    again (and the same bins and ``nchunks``), a call finds the prepared stripes on the
    workers and sends nothing.

    Catalogs on disk (:class:`CatalogFiles`, as ``ra1`` and, for a cross count, ``dec1``,
    as Catalog objects are given) are read by the workers alone: blocks of rows are checked
    and summed there (the totals, the largest label, a sample for the stripe model), the
    client cuts the stripes from the samples, and each stripe's task reads its own rows and
    halo from the files. Counts equal those of the same catalogs in memory as integers
    (weighted totals to rounding: they are summed by blocks). Nothing is kept for a next
    call: each call reads its rows again. A catalog on disk is counted with itself or with
    another on disk, not with arrays.

    Parameters
    ----------
    ra1, dec1, ra2, dec2, bins, weights1, weights2, labels1, labels2, n_regions, mean_theta, max_device_bytes
        As in :func:`sphgpu.tpacf.pair_counts` (degrees; ``max_device_bytes`` applies to each
        task's count, which splits itself to fit); ``ra1``/``dec1`` may be CatalogFiles.
    nchunks : int, optional
        Stripes (tasks); default: the number of workers that run the tasks, one stripe of
        equal estimated work each (for CatalogFiles at least one stripe per
        :data:`FILE_STRIPE_POINTS` points of the catalogs). More stripes hold fewer points
        each (catalogs too large for one device), at the cost of more halo points (and, for
        files, one more read of the Dec column per stripe).
    client : distributed.Client, optional
        Default: the current Dask client.
    backend : {"auto", "cuda", "cpu", "reference"}
        "auto": the GPU workers when there are any.
    progress : bool or callable(str)
        True: Dask's progress bar over the stripes' tasks. A callable is called with
        "pair counts, stripes: k of n done" as each stripe's task finishes (from a thread of
        the client); for CatalogFiles also "reading catalogs, blocks: k of n done" as the
        workers check and sum the blocks of rows.
    report : callable, optional
        Called once, as the call returns, with a :class:`CountSteps`: the seconds of the
        call, of cutting and sending the stripes, and of each stripe's task on its worker.
        For CatalogFiles nothing is sent (the workers read the files: a stripe's seconds
        include reading its rows).

    Returns
    -------
    PairCounts
        The counts of the whole catalogs, with their ``n1``, ``n2``, ``auto`` and totals.

    Notes
    -----
    Memory, with R jackknife regions and B bins: a stripe's task holds its points and halo
    (about 110 bytes a point prepared, 76 of them on the GPU for "cuda") and the per-region
    histograms of its count, R * R * B * 8 bytes of int64 counts and, when weighted, as
    many of float64 weight sums (the "cpu" backend holds a set per thread, "cuda" one on
    the GPU): 6.4 MB (12.8 weighted) for R = 200, B = 20. It sends back only the region
    pairs its pairs fall in; the client holds those of every stripe and the R * R * B sums
    (with compact regions a stripe meets a few region pairs per region it holds).

    Raises
    ------
    TypeError, ValueError
        As :func:`sphgpu.tpacf.pair_counts` (bad catalogs, bins, labels), for ``nchunks``
        that is not an integer >= 1, a ``progress`` that is neither a bool nor callable, and
        CatalogFiles given with arrays; files with bad values raise on the workers, naming
        the file and rows.
    FileNotFoundError
        For a CatalogFiles whose file the workers do not find.
    WorkersLostError
        When stripes were lost with dying workers more often than ATTEMPTS times.
    """
    started = time.perf_counter()
    steps = CountSteps()
    tasks.check_report(report, "a CountSteps")
    client = _cluster.get_client(client)
    bins = check_bins(bins)
    if nchunks is not None:
        if isinstance(nchunks, bool) or not isinstance(nchunks, (int, np.integer)) \
                or nchunks < 1:
            raise ValueError(f"nchunks must be an integer >= 1, got {nchunks!r}")
        nchunks = int(nchunks)
    _check_progress(progress)
    if isinstance(ra1, CatalogFiles) or isinstance(dec1, CatalogFiles):
        if not isinstance(ra1, CatalogFiles) or not (dec1 is None
                                                      or isinstance(dec1, CatalogFiles)):
            raise TypeError("catalogs on disk are counted with each other: give ra1 (and "
                            "dec1 for a cross count) as CatalogFiles, got "
                            f"{type(ra1).__name__} and {type(dec1).__name__}")
        check_left_out("CatalogFiles", "their weights and labels are columns of the files",
                       ra2=ra2, dec2=dec2, weights1=weights1, weights2=weights2,
                       labels1=labels1, labels2=labels2)
        options = {"mean_theta": mean_theta, "max_device_bytes": max_device_bytes}
        out = _file_count(client, ra1, dec1, bins, n_regions, options, nchunks, backend,
                          progress, steps)
        return tasks.reported(report, steps, started, out)
    cat1, cat2 = pair_catalogs(ra1, dec1, ra2, dec2, weights1, weights2, labels1, labels2)
    nreg = n_regions_of(cat1, cat2, n_regions)
    weighted = cat1.weights is not None or (cat2 is not None and cat2.weights is not None)
    options = {"mean_theta": mean_theta, "max_device_bytes": max_device_bytes}
    raw = _stripe_count(client, cat1, cat2, bins, nreg, options, nchunks, backend, progress,
                        steps)
    # the totals (possible pairs per region) are the whole catalogs', made as the serial
    # count makes them; the counted fields are the stripes' sums
    raw = RawCounts.zeros(bins.nbins, nreg, weighted, bool(mean_theta)) if raw is None \
        else RawCounts(**raw)
    return tasks.reported(report, steps, started,
                           counts_from_raw(raw, cat1, cat2, bins, nreg, weighted))


def pair_counts_many(catalog, others, *, bins, n_regions=None, client=None, backend="auto",
                     progress=False):
    """Counts of one catalog against each of several others, one task each, in parallel: the
    slides' loop over random catalogs (DR for every random file, or RR with ``catalog`` None
    for the auto counts of each).

    Parameters
    ----------
    catalog : Catalog or (ra, dec) in degrees, a Dask future of one, or None
        The data; None counts each of ``others`` with itself (RR). A future (e.g.
        ``client.scatter(Catalog(ra, dec), broadcast=True)``) is not sent again, and each
        worker keeps the sorted copies it makes on the first call for the later ones.
    others : list of Catalog or (ra, dec), or Dask futures of them
        The random catalogs. Futures (catalogs made on the workers) are counted where they
        are; give ``n_regions`` when they carry jackknife labels.
    bins, n_regions, client, backend, progress
        As in :func:`pair_counts`.

    Returns
    -------
    list of PairCounts, in the order of ``others``; equal to the serial counts as integers.
    """
    client = _cluster.get_client(client)
    if not isinstance(others, (list, tuple)) or not others:
        raise ValueError("others must be a non-empty list of catalogs")
    remote = [_is_future(o) for o in others]
    cats = [None if r else as_catalog(o, f"others[{i}]")
            for i, (o, r) in enumerate(zip(others, remote))]
    data_remote = _is_future(catalog)
    data = None if catalog is None or data_remote else as_catalog(catalog, "catalog")
    nreg = _n_regions(n_regions, data, *cats)         # labels of remote catalogs are not seen
    with _cluster.one_view(client):                   # one question to the scheduler
        name, resources = _cluster.placement(client, backend)
        where = _cluster.eligible_workers(client, resources)
    # the data to one worker (the tasks elsewhere fetch a copy, which each worker keeps);
    # each random catalog to one worker, where it is counted
    local = [(i, (c, [where[i % len(where)]] if where else None, False)) for i, (c, r) in
             enumerate(zip(cats, remote)) if not r]
    if data is not None:
        local.append((-1, (data, None, True)))

    def send():
        """Futures of every catalog (lost ones sent again): (data, [per catalog])."""
        sent = dict(zip([i for i, _ in local],
                        _send_catalogs(client, [x for _, x in local], resources)))
        rs = [o if r else sent[i] for i, (o, r) in enumerate(zip(others, remote))]
        return (sent[-1] if data is not None else catalog), rs

    def send_again(d, rs):
        """``(d, rs)``, or all of them sent again when one is no longer on the cluster."""
        if any(f.status != "finished" for f in ([d] if _is_future(d) else []) + rs):
            return send()
        return d, rs

    # one task per worker, counting every random catalog that worker holds (catalogs still
    # being made on the workers are waited for: only then does the scheduler know where)
    import concurrent.futures

    from distributed import wait

    for attempt in range(_cluster.ATTEMPTS):
        d, rs = send() if attempt == 0 else send_again(d, rs)
        wait([r for r, rem in zip(rs, remote) if rem])
        try:
            holders = client.who_has(rs)
            break
        except concurrent.futures.CancelledError:
            # a catalog sent here died with its worker before the question: sent again
            # (the user's own futures cannot be, and their loss is raised as it is)
            if attempt == _cluster.ATTEMPTS - 1 or any(
                    r.cancelled() for r, rem in zip(rs, remote) if rem):
                raise
    groups: dict = {}
    for i, r in enumerate(rs):
        at = sorted(holders.get(r.key, ()))
        groups.setdefault(at[0] if at else None, []).append(i)
    order = list(groups.items())

    def build(todo):
        """The tasks of the groups ``todo``; catalogs lost with a worker are sent again (a
        catalog made on the workers cannot be: its group fails after the last attempt)."""
        nonlocal d, rs
        d, rs = send_again(d, rs)
        out = []
        for g in todo:
            w, idx = order[g]
            alive = w is not None and w in client.scheduler_info()["workers"]
            out.append([client.submit(_count_group, d, bins, nreg, name,
                                      *[rs[i] for i in idx], resources=resources, pure=False,
                                      workers=[w] if alive else None,
                                      allow_other_workers=alive)])
        return out

    results = tasks.run_items(client, len(order), build, progress=progress)
    out = [None] * len(rs)
    for (_, idx), [counts] in zip(order, results):
        for i, c in zip(idx, counts):
            out[i] = c
    return out


def _is_future(x):
    return type(x).__name__ == "Future" and hasattr(x, "key")


# ----------------------------------------------------------------------------- catalogs on disk
#: rows a worker reads at a time from a catalog on disk (32 MB a float64 column): what a task
#: holds beyond the points it keeps
BLOCK_ROWS = 2**22
#: default most points (own and halo) of one stripe of a catalog on disk: about 3.5 GB of host
#: memory on its worker and 2.5 GB prepared on its GPU; more stripes are made past it
FILE_STRIPE_POINTS = 2**25


class CatalogFiles:
    """A catalog stored on disk that Dask workers read, each the rows it needs; the client
    never opens the files (a cluster whose workers see them elsewhere works).

    Two layouts, both read by rows without loading a whole column:

    * one ``.npy`` file per column (``CatalogFiles(ra="ra.npy", dec="dec.npy")``), memory-mapped
      by the workers: the simplest to write (``numpy.save``) and the fastest to read;
    * an uncompressed FITS binary table (``CatalogFiles.fits(path, ra="RA", dec="DEC")``),
      memory-mapped through astropy (:func:`sphgpu.io.fitsfile.open_fits`).

    Give it to :func:`pair_counts` in place of arrays: workers read blocks of
    :data:`BLOCK_ROWS` rows, check them (as :class:`~sphgpu.tpacf.Catalog` does) and sum
    what the totals need; each stripe's task then reads the rows of its stripe and halo.

    Parameters
    ----------
    ra, dec : str or os.PathLike
        ``.npy`` files of 1-D arrays of real numbers, degrees (as :class:`Catalog`).
    weights : str or os.PathLike, optional
        ``.npy`` file of the weights (real numbers).
    labels : str or os.PathLike, optional
        ``.npy`` file of the jackknife labels (integers >= 0).

    Raises
    ------
    TypeError
        For an argument that is not a path.
    ValueError
        For a name that does not end in ``.npy``. (The files themselves are opened on the
        workers: a missing file, a wrong shape or bad values raise there, naming the file.)
    """

    def __init__(self, ra, dec, *, weights=None, labels=None):
        cols = {"ra": ra, "dec": dec, "weights": weights, "labels": labels}
        self.kind = "npy"
        self.path = None
        self.hdu = None
        self.columns = {}
        for name, p in cols.items():
            if p is None and name in ("weights", "labels"):
                continue
            p = _path(name, p)
            if not p.lower().endswith(".npy"):
                raise ValueError(f"{name}={p!r}: CatalogFiles reads .npy files (one per "
                                 "column; use CatalogFiles.fits for a FITS table)")
            self.columns[name] = p

    @classmethod
    def fits(cls, path, *, ra="RA", dec="DEC", weights=None, labels=None, hdu=1):
        """A catalog in an uncompressed FITS binary table (column names match exactly, else
        ignoring case).

        Parameters
        ----------
        path : str or os.PathLike
            The ``.fits`` file (not ``.gz``: a compressed file cannot be read by rows).
        ra, dec : str
            Columns of RA and Dec in degrees.
        weights, labels : str, optional
            Columns of weights and of integer jackknife labels.
        hdu : int
            The table's HDU.

        Returns
        -------
        CatalogFiles
        """
        path = _path("path", path)
        if path.lower().endswith((".gz", ".fz", ".bz2", ".zip")):
            raise ValueError(f"path={path!r}: a compressed FITS file cannot be read by rows; "
                             "decompress it first")
        if isinstance(hdu, bool) or not isinstance(hdu, (int, np.integer)) or hdu < 0:
            raise ValueError(f"hdu must be an integer >= 0, got {hdu!r}")
        self = cls.__new__(cls)
        self.kind, self.path, self.hdu = "fits", path, int(hdu)
        self.columns = {}
        for name, c in (("ra", ra), ("dec", dec), ("weights", weights), ("labels", labels)):
            if c is None and name in ("weights", "labels"):
                continue
            if not isinstance(c, str):
                raise TypeError(f"{name} must be a column name (str), got {type(c).__name__}")
            self.columns[name] = c
        return self

    @property
    def has_weights(self) -> bool:
        """Whether the catalog has a weights column."""
        return "weights" in self.columns

    @property
    def has_labels(self) -> bool:
        """Whether the catalog has a jackknife labels column."""
        return "labels" in self.columns

    def __repr__(self):
        where = self.path if self.kind == "fits" else self.columns["ra"]
        return f"CatalogFiles({self.kind}: {where}, columns {sorted(self.columns)})"

    def __eq__(self, other):
        return isinstance(other, CatalogFiles) and (self.kind, self.path, self.hdu,
                                                    self.columns) == (
            other.kind, other.path, other.hdu, other.columns)

    def __hash__(self):
        return hash((self.kind, self.path, self.hdu, tuple(sorted(self.columns.items()))))


def _path(name, p):
    if not isinstance(p, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(p).__name__}")
    return os.path.abspath(os.fspath(p))


class _Reader:
    """On a worker: the columns of a CatalogFiles, memory-mapped; ``rows(a, b, names)`` reads
    rows [a, b) of some of them as checked native arrays (float64; labels int64)."""

    def __init__(self, files):
        self.files, self.stack = files, contextlib.ExitStack()
        if files.kind == "npy":
            self.cols = {}
            for name, p in files.columns.items():
                if not os.path.exists(p):
                    raise FileNotFoundError(f"{name}={p!r}: no such file (read on a worker)")
                try:
                    a = np.load(p, mmap_mode="r", allow_pickle=False)
                except ValueError as exc:
                    raise ValueError(f"{name}={p!r} is not a .npy array file: {exc}") from None
                self.cols[name] = (a, repr(p))
        else:
            from ..io.fitsfile import open_fits

            f = self.stack.enter_context(open_fits(files.path, memmap=True, name="path"))
            if files.hdu >= len(f):
                raise ValueError(f"path={files.path!r} has no HDU {files.hdu}")
            data = f[files.hdu].data
            names = list(getattr(getattr(data, "columns", None), "names", None) or [])
            if not names:
                raise ValueError(f"path={files.path!r}: HDU {files.hdu} is not a table")
            self.cols = {}
            for name, c in files.columns.items():
                k = find_column(c, names)
                if k is None:
                    raise ValueError(f"column {c!r} not found in {files.path} (HDU "
                                     f"{files.hdu}); columns are {names}")
                self.cols[name] = (data.field(names[k]), f"column {c!r} of {files.path}")
        sizes = {name: a.shape for name, (a, _) in self.cols.items()}
        for name, (a, shown) in self.cols.items():
            if a.ndim != 1:
                raise ValueError(f"{shown} must be 1-D, got shape {a.shape}")
            kinds = "iu" if name == "labels" else "fiu"
            if a.dtype.kind not in kinds:
                want = "integers" if name == "labels" else "real numbers"
                raise TypeError(f"{shown} must hold {want}, got dtype {a.dtype}")
        if len(set(sizes.values())) != 1:
            raise ValueError(f"the columns of {files!r} differ in length: {sizes}")
        self.size = int(sizes["ra"][0])
        if self.size == 0:
            raise ValueError(f"{files!r} is empty: a catalog needs at least one point")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cols = None
        self.stack.close()

    def rows(self, a, b, names):
        out = {}
        for name in names:
            if name not in self.cols:
                out[name] = None
                continue
            col, shown = self.cols[name]
            v = np.asarray(col[a:b])
            v = (v.astype(np.int64) if name == "labels"
                 else np.ascontiguousarray(v, dtype=np.float64))
            check_column(shown, name, v, f" (rows {a}:{b})")
            out[name] = v
        return out


def _file_size(files):
    """On a worker: the number of rows of a CatalogFiles (its files checked)."""
    with _Reader(files) as r:
        return r.size


def _file_summary(files, start, stop, step):
    """On a worker: rows [start, stop) of ``files`` checked, and what the client needs of
    them: ``n`` points, ``nobj`` of non-zero weight, per label (when labelled) the points of
    non-zero weight, sums of w and of w**2, the sums of w and w**2 over all, the largest
    label, and the sample of the stripe model (the rows of index a multiple of ``step``,
    the rows :func:`sphgpu.distributed.partition.declination_stripes` samples in memory)."""
    names = ("ra", "dec", "weights", "labels")
    out = dict(n=0, nobj=0, sw=0.0, sq=0.0, lab_max=-1, ln=np.zeros(0), ls=np.zeros(0),
               lq=np.zeros(0), ra=[], dec=[])

    def grow(a, b):
        if a.size < b.size:
            a = np.concatenate([a, np.zeros(b.size - a.size)])
        a[:b.size] += b
        return a

    with _Reader(files) as r:
        for a in range(start, stop, BLOCK_ROWS):
            b = min(stop, a + BLOCK_ROWS)
            v = r.rows(a, b, names)
            w, lab = v["weights"], v["labels"]
            out["n"] += b - a
            nz = None if w is None else w != 0
            out["nobj"] += (b - a) if w is None else int(np.count_nonzero(nz))
            if w is not None:
                out["sw"] += float(w.sum())
                out["sq"] += float(np.dot(w, w))
            if lab is not None:
                out["lab_max"] = max(out["lab_max"], int(lab.max()))
                out["ln"] = grow(out["ln"], np.bincount(lab if w is None else lab[nz])
                                 .astype(np.float64))
                if w is not None:
                    out["ls"] = grow(out["ls"], np.bincount(lab, weights=w))
                    out["lq"] = grow(out["lq"], np.bincount(lab, weights=w * w))
            first = -(-a // step) * step
            # copies: the rows may be views of a memory map that closes with the reader
            out["ra"].append(v["ra"][first - a::step].copy())
            out["dec"].append(v["dec"][first - a::step].copy())
    out["ra"], out["dec"] = np.concatenate(out["ra"]), np.concatenate(out["dec"])
    return out


def _merge_summaries(parts):
    """The summaries of a catalog's row blocks, in row order, as one."""
    def pad(arrs):
        m = max(a.size for a in arrs)
        return sum(np.concatenate([a, np.zeros(m - a.size)]) for a in arrs)

    return dict(n=sum(p["n"] for p in parts), nobj=sum(p["nobj"] for p in parts),
                sw=sum(p["sw"] for p in parts), sq=sum(p["sq"] for p in parts),
                lab_max=max(p["lab_max"] for p in parts),
                ln=pad([p["ln"] for p in parts]), ls=pad([p["ls"] for p in parts]),
                lq=pad([p["lq"] for p in parts]),
                ra=np.concatenate([p["ra"] for p in parts]),
                dec=np.concatenate([p["dec"] for p in parts]))


def _summary_sums(files, summ, nreg):
    """(points of non-zero weight, (n, sum w, sum w**2) per region) of a summarised catalog,
    as :func:`sphgpu.tpacf.counts.catalog_sums` makes them from a Catalog."""
    r = max(nreg, 1)

    def per_region(a):
        return np.concatenate([a, np.zeros(max(0, r - a.size))])[:r]

    if not nreg or not files.has_labels:
        n = np.array([float(summ["nobj"])])
        if not files.has_weights:
            return summ["nobj"], (n, n, n)
        return summ["nobj"], (n, np.array([summ["sw"]]), np.array([summ["sq"]]))
    n = per_region(summ["ln"])
    if not files.has_weights:
        return summ["nobj"], (n, n, n)
    return summ["nobj"], (n, per_region(summ["ls"]), per_region(summ["lq"]))


def _stripe_of(dec, edges):
    """The stripe of each declination (as :func:`partition.stripe_members`)."""
    return np.minimum(np.searchsorted(edges[1:-1], dec, side="right"), edges.size - 2)


def _read_selected(files, pick, labelled):
    """On a worker: the rows of ``files`` that ``pick(dec) -> (own mask, halo mask)`` keeps,
    read a block at a time: one Catalog of the own rows followed by the halo rows, and how
    many are own (None when no row is kept)."""
    names = ("ra", "weights") + (("labels",) if labelled else ())
    own, halo = [], []
    with _Reader(files) as r:
        for a in range(0, r.size, BLOCK_ROWS):
            b = min(r.size, a + BLOCK_ROWS)
            dec = r.rows(a, b, ("dec",))["dec"]
            m_own, m_halo = pick(dec)
            v = None
            for mask, into in ((m_own, own), (m_halo, halo)):
                if mask is not None and mask.any():
                    idx = np.flatnonzero(mask)
                    if v is None:             # the other columns of the block, read once
                        v = r.rows(a, b, names)
                    # fancy indexing copies: nothing kept refers to the memory map
                    into.append({"ra": v["ra"][idx], "dec": dec[idx],
                                 **{k: None if v[k] is None else v[k][idx]
                                    for k in names[1:]}})
    rows = own + halo
    if not rows:
        return None, 0
    n_own = sum(x["ra"].size for x in own)

    def cat(k):
        return None if rows[0].get(k) is None else np.concatenate([x[k] for x in rows])

    return Catalog(cat("ra"), cat("dec"), weights=cat("weights"), labels=cat("labels"),
                    copy=False), n_own


def _file_stripe_task(files1, files2, edges, i, pad, bins, nreg, options, backend):
    """On a worker: the counts of stripe ``i`` of catalogs on disk, read here (as
    :func:`_stripe_task` counts a stripe sent from the client)."""
    labelled = nreg > 0
    top = edges[i + 1] + pad

    def mine(dec):
        return _stripe_of(dec, edges) == i

    def mine_and_above(dec):
        s = _stripe_of(dec, edges)
        return s == i, (s > i) & (dec <= top)

    def count(c1, c2):
        return _serial_pair_counts(c1, c2, bins=bins, n_regions=nreg, backend=backend,
                                   **options)

    def nothing():
        # a stripe that holds no pairs: zero counts, made only then
        weighted = files1.has_weights or (files2 is not None and files2.has_weights)
        zero = RawCounts.zeros(bins.nbins, nreg, weighted, bool(options["mean_theta"]))
        return _spanned({f: getattr(zero, f) for f in _RAW}, started, 0)

    started = time.time()
    if files2 is None:
        piece, own = _read_selected(files1, mine_and_above, labelled)
        if piece is None or own == 0:
            return nothing()
        total = count(piece.part(0, own), None)
        if own < piece.size:
            total = total + count(piece.part(0, own), piece.part(own, piece.size))
        return _spanned(_raw_fields(total), started, piece.size)
    c1, _ = _read_selected(files1, lambda d: (mine(d), None), labelled)
    c2 = None
    if c1 is not None:
        lo = edges[i] - pad
        c2, _ = _read_selected(files2, lambda d: ((d >= lo) & (d <= top), None), labelled)
    if c1 is None or c2 is None:
        return nothing()
    return _spanned(_raw_fields(count(c1, c2)), started, c1.size + c2.size)


def _file_count(client, f1, f2, bins, n_regions, options, nchunks, backend, progress, steps):
    """:func:`pair_counts` of catalogs on disk: summaries read on the workers, stripes cut
    here from their samples, each stripe read and counted on a worker (its span in
    ``steps``)."""
    from . import partition as _partition

    with _cluster.one_view(client):
        name, resources = _cluster.placement(client, backend)
        where = _cluster.eligible_workers(client, resources)
    nw = max(1, len(where))
    files = [f for f in (f1, f2) if f is not None]

    def gather(fn, args_list, what, prefix):
        hook = _progress_hook(progress, what, len(args_list))

        def build(todo):
            out = []
            rk = f"{prefix}-{uuid.uuid4().hex[:8]}"                 # new keys every round
            for i in todo:
                f = client.submit(fn, *args_list[i], resources=resources, key=(rk, i))
                if hook is not None:
                    f.add_done_callback(hook(i))
                out.append([f])
            return out

        return [r for [r] in tasks.run_items(client, len(args_list), build,
                                          progress=progress is True)]

    sizes = gather(_file_size, [(f,) for f in files], "reading catalogs, sizes",
                   "sphgpu-catalog-size")
    jobs, owner = [], []
    for c, (f, n) in enumerate(zip(files, sizes)):
        # the rows declination_stripes samples of arrays in memory: every step-th
        step = max(1, n // _partition.STRIPE_SAMPLE)
        nb = max(min(2 * nw, n), -(-n // BLOCK_ROWS))
        bounds = np.linspace(0, n, nb + 1).astype(np.int64)
        for a, b in zip(bounds[:-1], bounds[1:]):
            if b > a:
                jobs.append((f, int(a), int(b), step))
                owner.append(c)
    got = gather(_file_summary, jobs, "reading catalogs, blocks", "sphgpu-catalog-block")
    summ = [_merge_summaries([g for g, o in zip(got, owner) if o == c])
            for c in range(len(files))]
    s1, s2 = summ[0], (summ[1] if f2 is not None else None)
    # the regions, checked as for Catalogs (labels in both or neither, n_regions >= needed)
    if f2 is not None and f1.has_labels != f2.has_labels and n_regions != 0:
        raise ValueError("jackknife counts need a labels column in both CatalogFiles (one "
                         "numbering of regions), or n_regions=0 to ignore the labels")
    stand = [types.SimpleNamespace(labels=True if f.has_labels else None,
                                   n_regions=s["lab_max"] + 1) for f, s in zip(files, summ)]
    nreg = n_regions_of(stand[0], stand[1] if f2 is not None else None, n_regions)
    weighted = any(f.has_weights for f in files)
    k = nchunks
    if k is None:
        k = max(nw, -(-sum(sizes) // FILE_STRIPE_POINTS))
    theta = bins.theta_max_rad
    edges = declination_stripes(s1["dec"], k, theta, ra1=s1["ra"],
                                dec2=None if s2 is None else s2["dec"],
                                ra2=None if s2 is None else s2["ra"])
    pad = math.degrees(theta) * (1.0 + HALO_PAD_REL) + HALO_PAD_DEG
    parts = gather(_file_stripe_task,
                   [(f1, f2, edges, i, pad, bins, nreg, options, name)
                    for i in range(edges.size - 1)], "pair counts, stripes",
                   "sphgpu-paircount-file")
    raw = RawCounts(**_add_raw(_take_spans(parts, steps)))
    sums1 = _summary_sums(f1, s1, nreg)
    sums2 = None if f2 is None else _summary_sums(f2, s2, nreg)
    return counts_from_sums(raw, sums1, sums2, bins, nreg, weighted)
