"""HEALPix maps read from FITS files by the Dask workers themselves, never through the client.

:func:`read_maps` submits one task per file, each running :func:`sphgpu.io.read_map` on the
worker that will hold the map (on its GPU with ``on_device=True``), and returns their futures:
inputs of :func:`~sphgpu.distributed.map2alm_many`, :func:`~sphgpu.distributed.anafast_many`
and any task of your own. The client checks the arguments, never opens a file and receives no
pixel: 64 maps of nside 2048 are read at the disks' speed on every worker at once, instead of
being read here and sent through Dask.

The reads are spread evenly, one file per eligible worker in turn (the workers that run the
backend's tasks), as :func:`~sphgpu.distributed.to_workers` spreads its futures. Each read is
a task, not scattered data: if its worker dies before or after reading, Dask reads the file
again on another worker, so a future stays valid as long as you hold it.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from .._validate import check_flag, check_int
from ..io import maps as _maps
from . import cluster as _cluster
from . import tasks

__all__ = ["read_maps"]

#: the dtypes a map may be read as: real numbers (as sphgpu.map2alm reads maps)
_REAL_KINDS = "biuf"


# ----------------------------------------------------------------------------- on the workers
def _here() -> str:
    """This worker's address (for messages)."""
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:                        # not inside a worker (a synchronous scheduler)
        return "this process"


def _with_name(exc, prefix):
    """``exc`` again, its message led by ``prefix`` (the same type where it can be rebuilt
    from a message alone)."""
    msg = f"{prefix}: {exc}"
    try:
        return type(exc)(msg)
    except Exception:  # noqa: BLE001  an exception type whose constructor wants more
        base = next(c for c in (FileNotFoundError, OSError, TypeError, ValueError)
                    if isinstance(exc, c))
        return base(msg)


def _read_task(path, label, options, pol, on_device):
    """On a worker: :func:`sphgpu.io.read_map` of ``path`` with ``options`` (on this worker's
    GPU with ``on_device``); with ``pol`` its three fields as one polarized set, shape
    (1, 3, npix). Errors name ``label`` (``filenames[i]``) and the file."""
    try:
        m = _maps.read_map(path, device=on_device, **options)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"{label}: {exc} on worker {_here()}: read_maps' files are opened by the workers, "
            "so each path must be one the workers see (a shared filesystem)") from exc
    except (OSError, ValueError, TypeError) as exc:
        raise _with_name(exc, label if path in str(exc) else f"{label}={path!r}") from exc
    if pol:
        if m.ndim != 2 or m.shape[0] != 3:
            fields = 1 if m.ndim == 1 else m.shape[0]
            raise ValueError(f"{label}={path!r}: pol=True reads three fields (I, Q, U) as one "
                             f"polarized set, but {fields} field{'s' * (fields != 1)} were "
                             "read (pass field=(0, 1, 2), or the columns' names)")
        m = m.reshape(1, 3, m.shape[-1])
    return m


# ----------------------------------------------------------------------------- the client's checks
def _check_filenames(filenames):
    """(list of absolute paths, their labels for messages, whether one path was given)."""
    if isinstance(filenames, (str, os.PathLike)):
        given, single = [filenames], True
    elif isinstance(filenames, bytes) or not hasattr(filenames, "__iter__"):
        raise TypeError(f"filenames must be a path (str or os.PathLike) or a sequence of paths, "
                        f"got {type(filenames).__name__}")
    else:
        given, single = list(filenames), False
    if not given:
        raise ValueError("filenames is empty: give at least one FITS file")
    labels = ["filenames"] if single else [f"filenames[{i}]" for i in range(len(given))]
    paths = []
    for label, p in zip(labels, given):
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"{label} must be a path (str or os.PathLike), got "
                            f"{type(p).__name__} {p!r}")
        p = os.fspath(p)
        if not isinstance(p, str):
            raise TypeError(f"{label} must be a path given as text, got bytes {p!r}")
        if not p:
            raise ValueError(f"{label} is an empty path")
        paths.append(os.path.abspath(p))
    return paths, labels, single


def _check_one_field(name, f):
    if isinstance(f, str):
        if not f:
            raise ValueError(f"{name} is an empty column name")
        return f
    if isinstance(f, (bool, np.bool_)) or not isinstance(f, numbers.Integral):
        raise TypeError(f"{name} must be a column number (int) or a column name (str), got "
                        f"{f!r}")
    return check_int(name, f, minimum=0)


def _check_field(field):
    """``field`` as read_map takes it (None, one field, or a tuple of them), and how many
    fields it names (None: all of the file's, unknown here)."""
    if field is None:
        return None, None
    if isinstance(field, (str, numbers.Integral)) and not isinstance(field, (bool, np.bool_)):
        return _check_one_field("field", field), 1
    if isinstance(field, (bool, np.bool_, bytes)) or not hasattr(field, "__iter__"):
        raise TypeError(f"field must be an int, a column name, a sequence of them or None, "
                        f"got {field!r}")
    fields = tuple(_check_one_field(f"field[{i}]", f) for i, f in enumerate(field))
    if not fields:
        raise ValueError("field is an empty sequence: name at least one field, or pass None "
                         "for all of them")
    return fields, len(fields)


def _check_dtype(dtype):
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype={dtype!r} is not a NumPy dtype") from exc
    if dt.kind not in _REAL_KINDS:
        raise TypeError(f"dtype={dtype!r}: maps are read as real numbers (a float, int or bool "
                        "dtype)")
    return dt


def _check_hdu(hdu):
    if isinstance(hdu, str):
        return hdu
    if isinstance(hdu, (bool, np.bool_)) or not isinstance(hdu, numbers.Integral):
        raise TypeError(f"hdu must be an HDU number (int) or an EXTNAME (str), got {hdu!r}")
    return check_int("hdu", hdu, minimum=0)


def _read_targets(client, resources):
    """The workers to give the reads to in turn, or None to leave each read to the scheduler.

    A read is pinned loosely (``allow_other_workers``): if its worker has left by the time the
    scheduler places it, or dies holding the map, Dask runs it on another worker. That
    fallback may pick any worker of the cluster, so reads are pinned only when every worker
    can run them; on a cluster of GPU and CPU workers the scheduler places each read among
    the eligible ones by their load instead (which spreads them too)."""
    with _cluster.one_view(client):
        everyone = _cluster.workers(client)
        where = _cluster.eligible_workers(client, resources)
    return where if where and len(where) == len(everyone) else None


# ----------------------------------------------------------------------------- read_maps
def read_maps(filenames, *, field=0, dtype=None, nest=False, partial=False, hdu=1, pol=False,
              client=None, backend="auto", on_device=False):
    """Read HEALPix maps from FITS files on the Dask workers: one future per file, each
    holding what :func:`sphgpu.io.read_map` returns for it, read by the worker that keeps it.

    No pixel passes through this process: each file is opened by a worker (healpy's reading,
    bit for bit: :func:`sphgpu.io.read_map`), so **the paths must be visible to the workers**
    under the same names, e.g. on a filesystem shared by the cluster's machines (relative
    paths are made absolute here, against this process's working directory). The files are
    spread evenly over the workers that run ``backend``'s tasks, one each in turn. A read
    whose worker dies is run again on another worker, while you hold its future.

    The futures are inputs of :func:`~sphgpu.distributed.map2alm_many` and
    :func:`~sphgpu.distributed.anafast_many` (pass ``geometry``), where a future of shape
    (npix,) is one map and one of shape (k, npix) is k temperature maps. For polarized maps
    pass ``field=(0, 1, 2)`` and ``pol=True``: each future then holds one I, Q, U set of
    shape (1, 3, npix), analysed as healpy's ``map2alm(pol=True)`` (T, E, B a_lm; six
    spectra in ``anafast_many``).

    Parameters
    ----------
    filenames : str, os.PathLike, or a sequence of them
        The FITS files (gzip-compressed ones too), as the workers see them.
    field : int, str, sequence of int/str, or None
        Which maps of each file, as in :func:`sphgpu.io.read_map`: column numbers (0 is the
        first map column), column names, or None for all.
    dtype : numpy dtype, optional
        dtype of every map (a float, int or bool dtype); None: the column's type in the file
        (float32 for healpy's default files), as read_map.
    nest : bool or None
        NESTED result (True), RING (False) or the file's ordering (None).
    partial : bool
        Treat a file as cut-sky when its header does not say (as read_map).
    hdu : int or str
        The HDU of the table (number or EXTNAME).
    pol : bool
        Each file's three fields are one polarized I, Q, U set: its future holds shape
        (1, 3, npix), which the ``*_many`` functions transform as a polarized set. False
        (default): exactly what read_map returns, (npix,) or (nfields, npix).
    client : distributed.Client, optional
        Default: the current Dask client.
    backend : {"auto", "cuda", "cpu", "reference"}
        Which workers read: those that run this backend's tasks (the GPU workers for "auto"
        on a cluster that has them), as in :func:`~sphgpu.distributed.to_workers`.
    on_device : bool
        Read each map onto its worker's GPU (a CuPy array there; the table goes to the GPU
        chunk by chunk, as ``read_map(device=True)``). Needs a GPU backend.

    Returns
    -------
    distributed.Future or list of distributed.Future
        One future per file, in order (a single future for a single path), each holding a
        float array (NumPy, or CuPy with ``on_device``) of shape (npix,), (nfields, npix), or
        (1, 3, npix) with ``pol``. A file that cannot be read (missing on the worker, not a
        HEALPix map, no such field) raises when its result is asked for (``future.result()``,
        or the ``*_many`` call it feeds), with an error naming ``filenames[i]`` and the file.

    Raises
    ------
    TypeError
        ``filenames`` is not a path or a sequence of paths, or an argument has a wrong type.
    ValueError
        ``filenames`` is empty, ``field`` is an empty sequence or a negative column,
        ``pol=True`` with a number of fields other than three, or ``on_device=True`` on a
        backend that does not run on GPUs.
    NoGPUWorkerError
        A GPU backend asked for on a cluster without GPU workers.
    """
    paths, labels, single = _check_filenames(filenames)
    field, nfields = _check_field(field)
    pol = check_flag("pol", pol)
    if pol and nfields is not None and nfields != 3:
        raise ValueError(f"pol=True reads three fields (I, Q, U) of each file as one polarized "
                         f"set, but field names {nfields}: pass field=(0, 1, 2)")
    options = dict(field=field, dtype=_check_dtype(dtype), hdu=_check_hdu(hdu),
                   partial=check_flag("partial", partial),
                   nest=None if nest is None else check_flag("nest", nest))
    client = _cluster.get_client(client)
    with _cluster.one_view(client):
        name, resources = _cluster.placement(client, backend)
        on_device = tasks.check_on_device(on_device, name,
                                          "reads the maps onto the workers' GPUs")
        where = _read_targets(client, resources)
    key = tasks.key("read-map")
    futures = []
    for i, (path, label) in enumerate(zip(paths, labels)):
        pinned = {} if where is None else {"workers": [where[i % len(where)]],
                                           "allow_other_workers": True}
        futures.append(client.submit(_read_task, path, label, options, pol, on_device,
                                     key=(key, i), resources=resources, **pinned))
    return futures[0] if single else futures
