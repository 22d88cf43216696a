"""Pair counts on a Dask cluster: one count split over catalog chunk pairs, and one catalog
against several others (the data against each random catalog) in parallel.

Counts of disjoint sets of pairs add exactly (:class:`sphgpu.tpacf.PairCounts`), so the
distributed result equals the serial one as integers, jackknife region counts included. A
split count sends its catalogs to every eligible worker once; a count against several random
catalogs sends each random catalog to one worker and counts there: one task per worker, which
counts all the catalogs that worker holds (a call costs one task per worker, not one per
catalog: with GPU tasks of ~20 ms, Dask's few ms per task were a large share).

:class:`~sphgpu.tpacf.Catalog` objects stay on the workers after a call: the client's next
call, given the same objects, finds them there (with the sorted copies the workers made) and
sends nothing; they are released when a call sends other catalogs. Arrays, or ``(ra, dec)``
pairs, make new Catalogs and are sent at every call.
"""

from __future__ import annotations

import weakref

from ..tpacf import pair_counts as _serial_pair_counts
from ..tpacf.api import _catalogs
from ..tpacf.catalog import as_catalog
from . import cluster as _cluster
from .partition import chunk_pairs
from .sht import _eligible

__all__ = ["pair_counts", "pair_counts_many"]


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


def _whole(parts, n1, n2, auto):
    """The sum of the parts, labelled as the count of the whole catalogs."""
    return sum(parts[1:], parts[0]).replace(n1=n1, n2=n2, auto=auto)


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


def _send_catalogs(client, items):
    """Futures of the Catalogs of ``items`` ((catalog, workers, broadcast) each) on those
    workers (all of them if broadcast): sent now, or found on the cluster when the client's
    previous call sent the same object the same way and it is still held there."""
    try:
        before = _SENT.get(client, {})
    except TypeError:                      # a client-like object that takes no weak reference
        before = {}
    now, out = {}, []
    for cat, workers, broadcast in items:
        hit = now.get(id(cat)) or before.get(id(cat))
        if hit is None or hit[0]() is not cat or hit[1] != broadcast \
                or hit[2].status != "finished":
            # hash=False: equal catalogs scattered by two calls must not share one key
            [f] = client.scatter([cat], workers=workers, broadcast=broadcast, hash=False)
            hit = (weakref.ref(cat), broadcast, f)
        now[id(cat)] = hit
        out.append(hit[2])
    try:
        _SENT[client] = now
    except TypeError:
        pass
    return out


def _submit(client, tasks, backend, progress):
    """Run the tasks; a task failing for good raises here (no partial sum)."""
    with _cluster.one_view(client):
        name, resources = _cluster.placement(client, backend)
    futures = [client.submit(_count_task, *t, name, resources=resources, pure=False)
               for t in tasks]
    if progress:
        _cluster.show_progress(futures)
    return client.gather(futures)


def _scatter(client, backend, data):
    with _cluster.one_view(client):
        _, resources = _cluster.placement(client, backend)
        where = _eligible(client, resources)
    return _send_catalogs(client, [(c, where, True) for c in data])


def pair_counts(ra1, dec1=None, ra2=None, dec2=None, *, bins, weights1=None, weights2=None,
                labels1=None, labels2=None, n_regions=None, mean_theta=False,
                max_device_bytes=None, nchunks=None, client=None, backend="auto",
                progress=False):
    """:func:`sphgpu.tpacf.pair_counts` over a Dask cluster, equal to it as integers.

    Catalog 1 (and catalog 2) are cut into ``nchunks`` contiguous chunks (default: the number
    of workers that can run the tasks); an auto count runs the ``nchunks (nchunks + 1) / 2``
    chunk pairs i <= j, a cross count the ``nchunks**2`` pairs. Each task holds two chunks,
    so catalogs of 10^8 points count on GPUs of a few GB each with ``nchunks`` of 8 or more
    (each task's count also keeps within ``max_device_bytes``).

    Parameters
    ----------
    ra1, dec1, ra2, dec2, bins, weights1, weights2, labels1, labels2, n_regions, mean_theta, max_device_bytes
        As in :func:`sphgpu.tpacf.pair_counts`.
    nchunks : int, optional
        Chunks per catalog (default: the number of eligible workers).
    client : distributed.Client, optional
        Default: the current Dask client.
    backend : {"auto", "cuda", "cpu", "reference"}
        "auto": the GPU workers when there are any.
    progress : bool
        Dask's progress bar.

    Returns
    -------
    PairCounts
        With ``n1``, ``n2`` and ``auto`` of the whole catalogs.

    Raises
    ------
    TypeError, ValueError
        As :func:`sphgpu.tpacf.pair_counts`.
    """
    client = _cluster.get_client(client)
    cat1, cat2 = _catalogs(ra1, dec1, ra2, dec2, weights1, weights2, labels1, labels2)
    nreg = _n_regions(n_regions, cat1, cat2)
    if nchunks is None:
        _, resources = _cluster.placement(client, backend)
        nchunks = max(1, len(_eligible(client, resources)))
    n1 = cat1.size
    n2 = n1 if cat2 is None else cat2.size
    sent = _scatter(client, backend, [c for c in (cat1, cat2) if c is not None])
    c1, c2 = sent[0], sent[-1]
    options = {"mean_theta": mean_theta, "max_device_bytes": max_device_bytes}
    tasks = [(c1, p.first, c2, p.second, p.same, bins, nreg, options)
             for p in chunk_pairs(n1, None if cat2 is None else n2, nchunks)]
    return _whole(_submit(client, tasks, backend, progress), n1, n2, cat2 is None)


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
        where = _eligible(client, resources)
    # the data go to every worker; each random catalog to one worker, where it is counted
    local = [(i, (c, [where[i % len(where)]], False)) for i, (c, r) in
             enumerate(zip(cats, remote)) if not r]
    if data is not None:
        local.append((-1, (data, where, True)))
    sent = dict(zip([i for i, _ in local], _send_catalogs(client, [x for _, x in local])))
    rs = [o if r else sent[i] for i, (o, r) in enumerate(zip(others, remote))]
    d = sent[-1] if data is not None else catalog
    # one task per worker, counting every random catalog that worker holds (catalogs still
    # being made on the workers are waited for: only then does the scheduler know where)
    from distributed import wait

    wait([r for r, rem in zip(rs, remote) if rem])
    holders = client.who_has(rs)
    groups: dict = {}
    for i, r in enumerate(rs):
        at = sorted(holders.get(r.key, ()))
        groups.setdefault(at[0] if at else None, []).append(i)
    futures, order = [], []
    for w, idx in groups.items():
        futures.append(client.submit(_count_group, d, bins, nreg, name, *[rs[i] for i in idx],
                                     resources=resources, pure=False,
                                     workers=None if w is None else [w],
                                     allow_other_workers=w is not None))
        order.append(idx)
    if progress:
        _cluster.show_progress(futures)
    out = [None] * len(rs)
    # raises if a task failed for good: no partial result
    for idx, counts in zip(order, client.gather(futures)):
        for i, c in zip(idx, counts):
            out[i] = c
    return out


def _is_future(x):
    return type(x).__name__ == "Future" and hasattr(x, "key")
